// Progress of long reads on standard error, only when it is a terminal: bytes read, percent of the
// file (plain files), events per second. Nothing at all on a pipe or a file, or for reads under 0.5 s
// (MLPD_PROGRESS_AFTER_MS in the environment changes that delay; the tests set 0).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace mlpd::cli {

class Progress {
 public:
  explicit Progress(const std::string& path);  // decides whether to show anything
  ~Progress() { done(); }
  // For BuildOptions::progress (empty when progress is off).
  std::function<void(uint64_t bytes, uint64_t events)> callback();
  void done();  // clears the line

 private:
  void update(uint64_t bytes, uint64_t events);
  bool on_ = false;
  bool shown_ = false;
  uint64_t size_ = 0;  // file size for percentages (0: unknown or compressed)
  double start_ = 0, last_ = 0;
  double after_ = 0.5;  // seconds
};

}  // namespace mlpd::cli
