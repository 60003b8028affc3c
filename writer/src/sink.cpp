// Output sinks (sink.h). Everything here runs on the agent's helper thread inside someone else's process,
// so: no stdio (its locks and buffers belong to the host), no popen (it forks the whole process and is not
// safe with the host's threads), every descriptor we create is O_CLOEXEC, and no signal of ours ever
// reaches the host.
#include "mlpd/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libdeflate.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

#include "mlpd/output_cut.h"

extern char** environ;

namespace mlpd {
namespace {
// The largest piece of the output file written at once while a kill can cut it back (DescriptorSink::write).
constexpr size_t kCutPiece = 64 * 1024;

// strerror_r comes in a GNU flavour (returns the text) and an XSI one (fills the buffer); take either.
[[maybe_unused]] const char* pick_error_text(const char* text, const char*) { return text; }
[[maybe_unused]] const char* pick_error_text(int rc, const char* buffer) { return rc == 0 ? buffer : "unknown error"; }

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

// A descriptor we write to: a file we opened, the write end of a pipe to a command we started, or a
// descriptor the embedder gave us (which we never close).
class DescriptorSink final : public OutputSink {
 public:
  DescriptorSink(int fd, bool owns_fd, std::string name) : fd_(fd), owns_fd_(owns_fd), name_(std::move(name)) {
    struct stat st {};
    guard_sigpipe_ = !(fstat(fd_, &st) == 0 && S_ISREG(st.st_mode));
  }
  ~DescriptorSink() override { close(); }

  void set_child(pid_t pid, std::string command, std::chrono::milliseconds timeout) {
    child_ = pid;
    command_ = std::move(command);
    child_timeout_ = timeout;
  }

  bool write(const void* data, size_t size) override {
    if (failed_ || closed_) return false;
    // The process is ending by a signal and the file was cut back (output_cut.h): write nothing more,
    // and say nothing either.
    int err = 0;
    if (!cut_guard_) {
      err = write_all(fd_, static_cast<const uint8_t*>(data), size, guard_sigpipe_);
    } else {
      // In pieces of at most kCutPiece, each one a write the handler may wait for: the kernel's dirty
      // page throttling can hold one large write for seconds on a busy disk (seen: a 520 MB file's
      // round outlasting the handler's wait, then cut inside a buffer), a 64 KiB one for a pause of
      // at most about 200 ms. A cut between pieces keeps the last whole round, as any other.
      const auto* p = static_cast<const uint8_t*>(data);
      for (size_t done = 0; done < size && !err;) {
        if (!output_cut::enter()) return true;
        const size_t n = std::min(kCutPiece, size - done);
        err = write_all(fd_, p + done, n, guard_sigpipe_);
        output_cut::leave();
        done += n;
      }
    }
    if (err) {
      fail(write_failure(name_, err));
      return false;
    }
    written_ += size;
    return true;
  }

  // The process's output file (SinkOptions::cut_on_kill): from now on a kill cuts it back to here.
  void guard_for_kill() {
    if (owns_fd_ && !guard_sigpipe_) {  // a regular file we opened (and truncated): offsets are written_
      cut_guard_ = true;
      output_cut::attach(fd_);
    }
  }
  void mark_whole() override {
    if (cut_guard_ && !failed_ && !closed_) output_cut::mark_whole(written_);
  }

  // write(2) already handed the bytes to the kernel: readers see them. Durability against a machine crash
  // (fsync) is not what a profile needs and would stall the helper on slow disks.
  bool flush() override { return !failed_ && !closed_; }

  bool close() override {
    if (closed_) return !failed_;
    closed_ = true;
    if (cut_guard_) {
      if (!output_cut::enter()) return !failed_;  // cut back at a kill: the descriptor is left as it is
      output_cut::detach();
      output_cut::leave();
      cut_guard_ = false;
    }
    if (owns_fd_ && fd_ >= 0) {
      // On Linux the descriptor is released even when close fails (EINTR included): never retry.
      if (::close(fd_) < 0 && errno != EINTR) {
        fail("mlpd: cannot finish '" + one_line(name_) + "': " + errno_text(errno));
      }
    }
    fd_ = -1;
    if (child_ > 0) wait_for_child();
    return !failed_;
  }

  void abandon() override {
    if (closed_) return;
    closed_ = true;
    failed_ = true;  // close() after this reports nothing went well: nothing was finished here
    if (cut_guard_) output_cut::forget();
    if (owns_fd_ && fd_ >= 0) ::close(fd_);
    fd_ = -1;
    child_ = -1;  // the parent's child, not ours to wait for
  }

  std::string error() const override { return error_; }
  std::string describe() const override { return name_; }
  uint64_t written() const override { return written_; }

 private:
  void fail(std::string message) {
    if (failed_) return;  // the first failure is the one that stopped profiling
    failed_ = true;
    error_ = std::move(message);
  }

  // Our end is closed, so the command sees end of input. Wait for it, but never forever: it may ignore
  // its input (`sleep 100`), or a fork of the host may still hold a copy of our end. We do not own
  // SIGCHLD (the host does), so poll waitpid(WNOHANG) with a short backoff instead of sleeping on it.
  void wait_for_child() {
    const pid_t pid = child_;
    child_ = -1;
    const std::string what = "mlpd: output command '" + one_line(command_) + "'";
    const timespec start = monotonic_now();
    long sleep_ms = 1;
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
          fail(what + " exited with status " + std::to_string(WEXITSTATUS(status)));
        } else if (WIFSIGNALED(status)) {
          fail(what + " was killed by signal " + std::to_string(WTERMSIG(status)));
        }
        return;
      }
      if (r < 0) {
        if (errno == EINTR) continue;
        // ECHILD: the host reaped it (waitpid(-1)) or ignores SIGCHLD (auto-reap). It has exited, status
        // unknown; nothing to report.
        if (errno != ECHILD) fail(what + ": cannot wait for it: " + errno_text(errno));
        return;
      }
      const int64_t elapsed = ms_between(start, monotonic_now());
      const int64_t limit = child_timeout_.count();
      if (elapsed >= limit) {
        fail(what + " (pid " + std::to_string(pid) + ") did not exit within " + std::to_string(limit) +
             " ms after the end of output; no longer waiting for it");
        return;
      }
      const int64_t nap = std::min<int64_t>(sleep_ms, limit - elapsed);
      const timespec ts{static_cast<time_t>(nap / 1000), static_cast<long>((nap % 1000) * 1000000)};
      nanosleep(&ts, nullptr);
      sleep_ms = std::min(sleep_ms * 2, 20L);
    }
  }

  int fd_;
  bool owns_fd_;
  bool guard_sigpipe_ = true;
  bool cut_guard_ = false;
  uint64_t written_ = 0;
  std::string name_;
  pid_t child_ = -1;
  std::string command_;
  std::chrono::milliseconds child_timeout_{5000};
  std::string error_;
  bool failed_ = false;
  bool closed_ = false;
};

// gzip as a sequence of complete members (RFC 1952 allows any number in a row; gzip -d, zlib's gzread and
// so Mono's mprof-report, and our reader read them as one stream). Bytes are staged in a fixed buffer; a
// member is compressed (libdeflate, whole-buffer, several times faster than zlib at the same ratio) and
// written when the stage is full and on every flush(). So whatever has been flushed is a complete gzip
// file: a process killed at any moment leaves a file that reads up to its last flush round, plus at most
// one member cut short, which readers report as truncation. Memory: the stage and its compressed bound
// (about 2 MiB) and at most kMaxHeldBytes of members held for the round, whatever the output rate.
// Speed: level 1 by default (~330 MB/s of event data on this machine); while the writer is behind
// (set_hurry: a round found more than a few MiB of buffers waiting, e.g. a helper starved of CPU by the
// host's threads) members are stored, not compressed (GB/s): the file grows, the buffer pool does not.
class GzipSink final : public OutputSink {
 public:
  static constexpr size_t kStageSize = 1024 * 1024;
  static constexpr int kDefaultLevel = 1;  // see SinkOptions::gzip_level
  static constexpr size_t kMaxHeldBytes = 4 * 1024 * 1024;  // members held until the round's flush, at most

  explicit GzipSink(std::unique_ptr<OutputSink> inner) : inner_(std::move(inner)) {}
  ~GzipSink() override {
    close();
    if (compressor_) libdeflate_free_compressor(compressor_);
    if (store_) libdeflate_free_compressor(store_);
  }

  // Returns false (and sets `error`) if the compressor cannot be set up.
  bool init(int level, std::string& error) {
    // zlib's levels (0..9) map to libdeflate's 0..12 one to one below 10; -1 is our default (sink.h).
    if (level < -1 || level > 9) {
      error = "mlpd: cannot compress output to '" + one_line(inner_->describe()) + "': bad compression level " +
              std::to_string(level);
      return false;
    }
    compressor_ = libdeflate_alloc_compressor(level < 0 ? kDefaultLevel : level);
    store_ = libdeflate_alloc_compressor(0);  // "no compression": stored blocks
    stage_.reset(new (std::nothrow) uint8_t[kStageSize]);
    if (compressor_ && store_) {
      out_size_ = std::max(libdeflate_gzip_compress_bound(compressor_, kStageSize),
                           libdeflate_gzip_compress_bound(store_, kStageSize));
      out_.reset(new (std::nothrow) uint8_t[out_size_]);
    }
    if (!compressor_ || !store_ || !stage_ || !out_) {
      error = "mlpd: cannot compress output to '" + one_line(inner_->describe()) + "': out of memory";
      return false;
    }
    return true;
  }

  bool write(const void* data, size_t size) override {
    if (failed_ || closed_) return false;
    const auto* p = static_cast<const uint8_t*>(data);
    while (size > 0) {
      const size_t k = std::min(size, kStageSize - staged_);
      std::memcpy(stage_.get() + staged_, p, k);
      staged_ += k;
      p += k;
      size -= k;
      if (staged_ == kStageSize && !emit_member()) return false;
    }
    return true;
  }

  // A member made elsewhere: it follows the bytes staged so far, which end their member first. Held
  // like the sink's own, so a round stays a sequence of complete members written at its flush.
  bool write_member(const void* data, size_t size) override {
    if (failed_ || closed_) return false;
    if (!emit_member()) return false;
    ++members_;
    return hold(static_cast<const uint8_t*>(data), size);
  }

  // Ends the current member and writes the members held since the last flush: everything written so
  // far is a complete gzip stream in the target, ending where a flush round ended.
  bool flush() override {
    if (failed_ || closed_) return false;
    if (!emit_member() || !write_held()) return false;
    if (!inner_->flush()) return fail_from_inner();
    return true;
  }

  bool close() override {
    if (closed_) return !failed_;
    closed_ = true;
    // A stream with no byte at all still gets one (empty) member: an empty file is not valid gzip.
    if (!failed_ && (staged_ > 0 || members_ == 0) && emit_member(true)) write_held();
    // Always release the target (descriptor, command), even after a failure.
    if (!inner_->close() && !failed_) fail_from_inner();
    return !failed_;
  }

  // Nothing is freed: the allocator may have been held by another thread at fork.
  void abandon() override {
    if (closed_) return;
    closed_ = failed_ = true;
    compressor_ = store_ = nullptr;
    (void)stage_.release();
    (void)out_.release();
    inner_->abandon();
  }

  std::string error() const override { return error_; }
  std::string describe() const override { return inner_->describe(); }
  uint64_t written() const override { return inner_->written(); }
  void set_hurry(bool hurry) override { hurry_ = hurry; }
  // Whole only right after a flush: then the target ends with complete members.
  void mark_whole() override {
    if (!failed_ && !closed_ && staged_ == 0 && held_.empty()) inner_->mark_whole();
  }

 private:
  bool emit_member(bool even_empty = false) {
    if (staged_ == 0 && !even_empty) return true;
    const size_t n =
        libdeflate_gzip_compress(hurry_ ? store_ : compressor_, stage_.get(), staged_, out_.get(), out_size_);
    staged_ = 0;
    if (n == 0) {  // cannot happen with the bound's room; treat as a failure, never as success
      failed_ = true;
      error_ = "mlpd: cannot compress output to '" + one_line(inner_->describe()) + "'; profiling stopped";
      return false;
    }
    ++members_;
    return hold(out_.get(), n);
  }

  // Held until the round's flush: a member that filled the stage ends in the middle of an mlpd
  // buffer, and a file whose last complete member ended there would not read to its last round
  // after a kill. What is held is compressed (a round's worth, a tenth of its size or less; stored
  // while hurrying). A round whose members exceed kMaxHeldBytes is written through as it goes
  // (memory stays bounded; a kill inside such a round leaves its last buffer cut, which the reader
  // reports).
  bool hold(const uint8_t* member, size_t n) {
    // Room for the bound at once and kept: growing by doubling and shrinking back every round made
    // fresh pages to fault in each time (several ms a round in this VM, with the helper behind).
    if (held_.capacity() < held_.size() + n) held_.reserve(std::max(held_.size() + n, kMaxHeldBytes + out_size_));
    held_.insert(held_.end(), member, member + n);
    if (held_.size() >= kMaxHeldBytes) return write_held();
    return true;
  }

  bool write_held() {
    if (held_.empty()) return true;
    const bool ok = inner_->write(held_.data(), held_.size());
    held_.clear();
    return ok || fail_from_inner();
  }

  bool fail_from_inner() {
    if (!failed_) {
      failed_ = true;
      error_ = inner_->error();
      if (error_.empty()) error_ = "mlpd: cannot write to '" + one_line(inner_->describe()) + "'; profiling stopped";
    }
    return false;
  }

  std::unique_ptr<OutputSink> inner_;
  libdeflate_compressor* compressor_ = nullptr;
  libdeflate_compressor* store_ = nullptr;  // level 0, while hurrying
  std::unique_ptr<uint8_t[]> stage_;
  std::unique_ptr<uint8_t[]> out_;
  size_t out_size_ = 0;
  size_t staged_ = 0;
  std::vector<uint8_t> held_;  // complete members not yet written (written at flush and close)
  bool hurry_ = false;
  uint64_t members_ = 0;
  std::string error_;
  bool failed_ = false;
  bool closed_ = false;
};

// Moves a descriptor to 3 or above (keeping O_CLOEXEC), so that the child's dup2 onto 0 never meets
// itself (dup2(fd, fd) would leave close-on-exec set) and our stdio slots stay untouched.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int err = errno;
  ::close(fd);
  errno = err;
  return moved;
}

std::unique_ptr<OutputSink> open_file(const std::string& path, const SinkOptions& options, std::string& error) {
  bool* const taken = options.file_taken;
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
  } while (fd < 0 && errno == EINTR);  // opening a FIFO waits for its reader and may be interrupted
  if (fd < 0) {
    error = "mlpd: cannot create output file '" + one_line(path) + "': " + errno_text(errno);
    return nullptr;
  }
  // One process, one file: a regular file is locked before it is truncated. The lock belongs to this
  // open file description (close-on-exec, so an exec'd child never holds it) and goes with the last
  // descriptor. A file system without locks (ENOLCK, EINVAL) is written unlocked, as before.
  struct stat st{};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno == EWOULDBLOCK) {
      ::close(fd);
      if (taken) *taken = true;
      error = "mlpd: output file '" + one_line(path) + "' is being written by another process";
      return nullptr;
    }
    if (::ftruncate(fd, 0) != 0) {
      error = "mlpd: cannot truncate output file '" + one_line(path) + "': " + errno_text(errno);
      ::close(fd);
      return nullptr;
    }
  }
  auto sink = std::make_unique<DescriptorSink>(fd, true, path);
  if (options.cut_on_kill) sink->guard_for_kill();
  return sink;
}

std::unique_ptr<OutputSink> open_descriptor(const std::string& target, std::string& error) {
  const std::string name = "#" + target;
  long value = -1;
  if (!target.empty() && target.size() <= 10 && std::all_of(target.begin(), target.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    value = std::stol(target);
  }
  if (value < 0 || value > INT_MAX) {
    error = "mlpd: invalid output descriptor '" + one_line(name) + "': expected a descriptor number";
    return nullptr;
  }
  const int fd = static_cast<int>(value);
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) {
    error = "mlpd: cannot use output descriptor '" + name + "': " + errno_text(errno);
    return nullptr;
  }
  if ((flags & O_ACCMODE) == O_RDONLY) {
    error = "mlpd: cannot use output descriptor '" + name + "': it is not open for writing";
    return nullptr;
  }
  return std::make_unique<DescriptorSink>(fd, false, name);
}

// `/bin/sh -c CMD` with its stdin reading from a pipe whose write end is ours. posix_spawn (glibc: clone
// with CLONE_VM|CLONE_VFORK, exec straight away) runs no code of the host in the child, so it is safe
// whatever the host's other threads hold (malloc locks, stdio). popen would fork and is not.
std::unique_ptr<OutputSink> open_pipe(const std::string& command, const SinkOptions& options, std::string& error) {
  const std::string fail_prefix = "mlpd: cannot start output command '" + one_line(command) + "': ";
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) {
    error = fail_prefix + errno_text(errno);
    return nullptr;
  }
  int read_end = above_stdio(fds[0]);
  int write_end = read_end < 0 ? -1 : above_stdio(fds[1]);
  if (read_end < 0 || write_end < 0) {
    const int err = errno;
    if (read_end >= 0) ::close(read_end);
    else ::close(fds[1]);
    error = fail_prefix + errno_text(err);
    return nullptr;
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  int rc = posix_spawn_file_actions_init(&actions);
  if (rc == 0) {
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) posix_spawn_file_actions_destroy(&actions);
  }
  if (rc != 0) {
    ::close(read_end);
    ::close(write_end);
    error = fail_prefix + errno_text(rc);
    return nullptr;
  }
  // dup2 onto stdin clears close-on-exec there; every other descriptor of ours is O_CLOEXEC and vanishes.
  rc = posix_spawn_file_actions_adddup2(&actions, read_end, STDIN_FILENO);
  // The child starts with no blocked signals (our SigpipeGuard may be active on this thread, and the mask
  // is inherited) and SIGPIPE at its default, like a command started from a shell.
  sigset_t none, pipe_only;
  sigemptyset(&none);
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr, &pipe_only);
  if (rc == 0) rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  if (rc == 0) {
    char sh[] = "sh";
    char dash_c[] = "-c";
    std::string cmd = command;
    char* argv[] = {sh, dash_c, cmd.data(), nullptr};
    char* const* env = options.child_env ? options.child_env : environ;
    rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, env);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(read_end);
  if (rc != 0) {
    ::close(write_end);
    error = fail_prefix + errno_text(rc);
    return nullptr;
  }
  auto sink = std::make_unique<DescriptorSink>(write_end, true, "|" + command);
  sink->set_child(pid, command, options.child_exit_timeout);
  return sink;
}

}  // namespace

std::unique_ptr<OutputSink> make_gzip_sink(std::unique_ptr<OutputSink> inner, int level, std::string& error) {
  if (!inner) {
    error = "mlpd: no output to compress";
    return nullptr;
  }
  auto sink = std::make_unique<GzipSink>(std::move(inner));
  if (!sink->init(level, error)) return nullptr;
  return sink;
}

std::unique_ptr<OutputSink> open_sink(OutputKind kind, const std::string& target, bool zip, std::string& error,
                                      const SinkOptions& options) {
  std::unique_ptr<OutputSink> sink;
  switch (kind) {
    case OutputKind::File:
      sink = open_file(target, options, error);
      break;
    case OutputKind::Pipe:
      sink = open_pipe(target, options, error);
      break;
    case OutputKind::Fd:
      sink = open_descriptor(target, error);
      break;
  }
  if (!sink || !zip) return sink;
  return make_gzip_sink(std::move(sink), options.gzip_level, error);
}

// ---- MemorySink ----

bool MemorySink::write(const void* data, size_t size) {
  if (failed_ || closed_) return false;
  const auto* p = static_cast<const uint8_t*>(data);
  const size_t room = fail_limit_ - std::min(fail_limit_, data_.size());
  data_.insert(data_.end(), p, p + std::min(size, room));
  if (size > room) {
    failed_ = true;
    error_ = write_failure(name_, fail_errno_);
    return false;
  }
  return true;
}

bool MemorySink::flush() {
  if (failed_ || closed_) return false;
  ++flushes_;
  return true;
}

bool MemorySink::close() {
  closed_ = true;
  return !failed_ && !abandoned_;
}

void MemorySink::fail_after(size_t bytes, int err) {
  fail_limit_ = bytes > SIZE_MAX - data_.size() ? SIZE_MAX : data_.size() + bytes;
  fail_errno_ = err;
}

}  // namespace mlpd
