#include "follow.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "mlpd/live.h"

namespace mlpd::cli {

namespace {
// Without a pid (a file shorter than its header) the wait is bounded: the writer may never come.
constexpr unsigned kNoHeaderWaitMs = 10000;
}  // namespace

std::unique_ptr<FollowInput> FollowInput::open(const std::string& path, unsigned poll_ms, std::string& error) {
  std::unique_ptr<FollowInput> in(new FollowInput());
  in->poll_ms_ = poll_ms ? poll_ms : 1;
  if (path == "-") {
    in->fd_ = 0;
    in->is_pipe_ = true;
    return in;
  }
  in->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in->fd_ < 0) {
    error = std::strerror(errno);
    return nullptr;
  }
  struct stat st{};
  if (fstat(in->fd_, &st) == 0 && !S_ISREG(st.st_mode)) in->is_pipe_ = true;
  return in;
}

FollowInput::~FollowInput() {
  if (fd_ > 0) ::close(fd_);
}

// A zombie (exited, not yet reaped by its parent) writes nothing more: mlpd/live.h's check, as top's.
bool FollowInput::writer_alive() const { return profile::writer_alive(pid_); }

size_t FollowInput::read(void* dst, size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  size_t got = 0;
  unsigned waited_without_pid = 0;
  while (got < n) {
    const ssize_t r = ::read(fd_, out + got, n - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      error_ = std::string("read error: ") + std::strerror(errno);
      break;
    }
    if (r > 0) {
      // The header's pid field (bytes 32..35, little-endian) as it goes by.
      for (size_t i = 0; i < static_cast<size_t>(r) && head_len_ < sizeof head_; ++i) head_[head_len_++] = out[got + i];
      if (!pid_ && head_len_ == sizeof head_)
        pid_ = static_cast<int>(head_[32] | head_[33] << 8 | head_[34] << 16 | static_cast<unsigned>(head_[35]) << 24);
      got += static_cast<size_t>(r);
      offset_ += static_cast<uint64_t>(r);
      continue;
    }
    // At the end of what is written.
    if (is_pipe_) break;  // a pipe's end is the writer's end
    if (pid_) {
      if (!writer_alive()) {
        // One more look: the writer may have written its last bytes just before it exited.
        const ssize_t last = ::read(fd_, out + got, n - got);
        if (last > 0) {
          got += static_cast<size_t>(last);
          offset_ += static_cast<uint64_t>(last);
          continue;
        }
        gone_ = true;
        break;
      }
    } else if ((waited_without_pid += poll_ms_) > kNoHeaderWaitMs) {
      break;
    }
    // The decoder needs all n bytes (a buffer header or a buffer's data): a partly written one
    // is waited for, not reported.
    if (on_wait_) on_wait_(wait_ctx_);
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms_));
  }
  return got;
}

}  // namespace mlpd::cli
