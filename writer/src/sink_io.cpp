// What every output sink shares (sink_io.h). Runs on the agent's helper thread inside someone else's
// process: no stdio, no signal of ours reaches the host.
#include "sink_io.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

namespace mlpd::sink_detail {
namespace {
// strerror_r comes in a GNU flavour (returns the text) and an XSI one (fills the buffer); take either.
[[maybe_unused]] const char* pick_error_text(const char* text, const char*) { return text; }
[[maybe_unused]] const char* pick_error_text(int rc, const char* buffer) { return rc == 0 ? buffer : "unknown error"; }

// Keeping SIGPIPE away from the host without send(MSG_NOSIGNAL) (we write to pipes, FIFOs, ttys and
// inherited descriptors, not only sockets) and without touching the process-wide disposition (it belongs
// to the host): the SIGPIPE that a write(2) on a broken pipe raises is directed at the writing thread. So,
// around our writes:
//   1. block SIGPIPE in this thread only (pthread_sigmask) -- a SIGPIPE raised now stays pending on us
//      instead of being delivered (with the default disposition it would kill the host);
//   2. remember whether one was already pending before we started (it is someone else's; leave it);
//   3. after a write fails with EPIPE, if none was pending before, take the one we caused off the queue
//      with sigtimedwait and a zero timeout (it never blocks);
//   4. restore the thread's previous mask.
// The same technique is used by libpq (pq_block_sigpipe / pq_reset_sigpipe). It costs three cheap
// syscalls per write batch, so it is skipped for regular files, which cannot raise SIGPIPE.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    sigemptyset(&old_mask_);
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &old_mask_);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeGuard() { pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr); }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

  void consume_after_epipe() {
    if (was_pending_) return;
    const timespec zero{0, 0};
    while (sigtimedwait(&sigpipe_, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }

 private:
  sigset_t sigpipe_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

}  // namespace

std::string errno_text(int err) {
  char buffer[128] = {};
  return pick_error_text(strerror_r(err, buffer, sizeof buffer), buffer);
}

// Targets come from the user (a command may hold a newline); messages must stay on one line.
std::string one_line(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string write_failure(const std::string& name, int err) {
  return "mlpd: cannot write to '" + one_line(name) + "': " + errno_text(err) + "; profiling stopped";
}

// Writes everything or returns the errno that stopped it. Partial writes and EINTR are retried; EAGAIN (an
// embedder's non-blocking descriptor) waits for POLLOUT, which makes it behave like a blocking one.
int write_all(int fd, const uint8_t* data, size_t size, bool guard_sigpipe) {
  std::optional<SigpipeGuard> guard;
  if (guard_sigpipe) guard.emplace();
  constexpr size_t kMaxChunk = size_t{1} << 30;
  while (size > 0) {
    const ssize_t n = ::write(fd, data, std::min(size, kMaxChunk));
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return EIO;  // no progress and no error: do not spin
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      pollfd pfd{fd, POLLOUT, 0};
      if (poll(&pfd, 1, -1) < 0 && errno != EINTR) return errno;
      continue;
    }
    if (err == EPIPE && guard) guard->consume_after_epipe();
    return err;
  }
  return 0;
}

timespec monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts;
}

int64_t ms_between(const timespec& a, const timespec& b) {
  return (static_cast<int64_t>(b.tv_sec) - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}

}  // namespace mlpd::sink_detail
