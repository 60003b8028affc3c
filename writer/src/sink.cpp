// Output sinks (sink.h). Everything here runs on the agent's helper thread inside someone else's process,
// so: no stdio (its locks and buffers belong to the host), no popen (it forks the whole process and is not
// safe with the host's threads), every descriptor we create is O_CLOEXEC, and no signal of ours ever
// reaches the host.
#include "mlpd/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "mlpd/output_cut.h"
#include "sink_io.h"

extern char** environ;

namespace mlpd {
namespace {
// The largest piece of the output file written at once while a kill can cut it back (DescriptorSink::write).
constexpr size_t kCutPiece = 64 * 1024;

using namespace sink_detail;

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
    // The process is ending by a signal and the file is cut back (output_cut.h): write nothing more,
    // and say nothing either. The round then goes on as if written, but its mark_whole() is ignored.
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
