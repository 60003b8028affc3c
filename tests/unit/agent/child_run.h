// Test support for the agent's process-wide parts (agent_shell_test.cpp, coreclr/attach_entry_test.cpp):
// a test case's body run in a child process of its own (run_child: its exit status, its stderr), and
// a profile the child wrote read back with the reader library (read_profile: decoded, every reference
// checked, the events counted).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "fake_runtime.h"
#include "mlpd/checks.h"
#include "mlpd/decoder.h"
#include "mlpd/input.h"
#include "child_exit.h"
#include "mlpd_catch.h"

namespace mlpd::test {

struct ChildResult {
  int pid = -1;
  int status = -1;
  bool timed_out = false;
  std::string err;  // the child's stderr, when captured
  bool exited(int code) const { return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == code; }
  bool signaled(int sig) const { return !timed_out && WIFSIGNALED(status) && WTERMSIG(status) == sig; }
  std::string describe() const {
    if (timed_out) return "timed out";
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
  }
  std::vector<std::string> err_lines() const {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < err.size()) {
      size_t nl = err.find('\n', at);
      if (nl == std::string::npos) nl = err.size();
      out.push_back(err.substr(at, nl - at));
      at = nl + 1;
    }
    return out;
  }
};

// Runs `body` in a child process; what it returns is the child's exit code (it may also end the
// process its own way). The child's stderr comes back through a pipe. Waited for, bounded (a child
// still running after `limit` is killed: it is ours, just forked).
template <class F>
ChildResult run_child(F&& body, std::chrono::seconds limit = std::chrono::seconds(120)) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);  // the copy is not close-on-exec
    // A program starts with the default actions: not the test framework's handlers (Catch2 takes
    // the fatal signals to report them), which the agent would leave alone as the program's.
    for (const int sig : {SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGUSR1, SIGUSR2})
      ::signal(sig, SIG_DFL);
    int code = 90;
    try {
      if constexpr (std::is_void_v<decltype(body())>) {
        body();
        code = 0;
      } else {
        code = body();
      }
    } catch (...) {
      code = 91;
    }
    child_exit(code);
  }
  ::close(fds[1]);
  ChildResult r;
  r.pid = pid;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int rfd = fds[0];
  for (;;) {
    if (rfd >= 0) {
      pollfd p{rfd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = ::read(rfd, buf, sizeof buf);
        if (n > 0) r.err.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR) {
          ::close(rfd);
          rfd = -1;
        }
      }
    } else {
      ::poll(nullptr, 0, 20);
    }
    const pid_t w = ::waitpid(pid, &r.status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      if (pid > 0) ::kill(pid, SIGKILL);
      ::waitpid(pid, &r.status, 0);
      break;
    }
  }
  if (rfd >= 0) {  // what is left (the child is gone: no writer but a grandchild, which it reaped)
    ::fcntl(rfd, F_SETFL, O_NONBLOCK);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(rfd, buf, sizeof buf)) > 0) r.err.append(buf, static_cast<size_t>(n));
    ::close(rfd);
  }
  return r;
}

// A file read back with the reader library.
struct Profile {
  bool opened = false;
  std::string open_error;
  DecodeSummary summary;
  FileHeader header;
  std::vector<std::string> problems;       // decoding problems and unknown references
  std::array<uint64_t, kEventKindCount> counts{};
  uint64_t enters = 0, leaves = 0;         // of WritingRuntime::kMethod
  std::vector<std::string> jit_names, images;

  uint64_t count(EventKind k) const { return counts[static_cast<size_t>(k)]; }
  bool clean() const { return opened && summary.header_ok && problems.empty() && !summary.truncated; }
  bool jitted_work() const {
    for (const std::string& n : jit_names)
      if (n == WritingRuntime::kMethodName) return true;
    return false;
  }
};

struct ProfileVisitor final : Visitor {
  Profile& p;
  ReferenceChecker refs;
  explicit ProfileVisitor(Profile& out) : p(out) {}
  void on_header(const FileHeader& h) override { p.header = h; }
  void on_event(const Event& e, const EventInfo& info) override {
    ++p.counts[static_cast<size_t>(e.kind)];
    if (e.kind == EventKind::method_enter && e.method == WritingRuntime::kMethod) ++p.enters;
    if (e.kind == EventKind::method_leave && e.method == WritingRuntime::kMethod) ++p.leaves;
    if (e.kind == EventKind::method_jit) p.jit_names.push_back(e.name);
    if (e.kind == EventKind::image_load) p.images.push_back(e.name);
    if (std::string why = refs.check(e); !why.empty())
      p.problems.push_back("at " + std::to_string(info.offset) + ": " + why);
  }
  void on_problem(const Problem& pr) override {
    p.problems.push_back("at " + std::to_string(pr.offset) + ": " + pr.message);
  }
};

inline Profile read_profile(const std::string& path) {
  Profile p;
  std::unique_ptr<Input> in = Input::open(path, p.open_error);
  if (!in) return p;
  p.opened = true;
  ProfileVisitor v(p);
  p.summary = decode(*in, v);
  return p;
}

}  // namespace mlpd::test
