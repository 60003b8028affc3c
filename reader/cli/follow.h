// Reading a file that a running agent is still writing (mlpd report --follow): at the end of the
// bytes written so far, wait for more while the writer -- the pid in the file header -- lives; a
// partly written buffer is then not an error. Once the writer is gone, the end of the file is the
// end of the input (a buffer cut there is then reported as the decoder reports any truncation).
#pragma once

#include <memory>
#include <string>

#include "mlpd/input.h"

namespace mlpd::cli {

class FollowInput : public Input {
 public:
  // Opens `path` (a plain file; "-" reads standard input to its end, which needs no pid). Returns
  // nullptr with `error` set when it cannot be opened. `poll_ms`: how often the end is looked at.
  static std::unique_ptr<FollowInput> open(const std::string& path, unsigned poll_ms, std::string& error);
  ~FollowInput() override;

  size_t read(void* dst, size_t n) override;
  std::string error() const override { return error_; }
  bool compressed() const override { return false; }

  // The writer's pid (0 until the header's pid field has been read).
  int writer_pid() const { return pid_; }
  // True once the input ended because the writer was gone (not because a pipe closed).
  bool writer_gone() const { return gone_; }
  // Called while waiting at the end (for `mlpd top` to redraw); may be empty.
  void set_on_wait(void (*fn)(void*), void* ctx) {
    on_wait_ = fn;
    wait_ctx_ = ctx;
  }

 private:
  FollowInput() = default;
  bool writer_alive() const;

  int fd_ = -1;
  bool is_pipe_ = false;
  unsigned poll_ms_ = 200;
  int pid_ = 0;
  bool gone_ = false;
  unsigned char head_[36] = {};
  size_t head_len_ = 0;
  std::string error_;
  void (*on_wait_)(void*) = nullptr;
  void* wait_ctx_ = nullptr;
};

}  // namespace mlpd::cli
