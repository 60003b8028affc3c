// What `mlpd attach` reads of a target in /proc (reader/cli/attach_proc.cpp), on child processes made
// for each question: alive or gone, its argument words, a Mono by its executable's name, attaching
// refused through MONO_ENV_OPTIONS, a thread of our agent, a signal pending (blocked) or caught, and
// when it started.
#include "mlpd_catch.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../../../../reader/cli/attach_proc.h"
#include "cli_run.h"
#include "temp_dir.h"

using namespace mlpd::cli;
using namespace mlpd::test;

namespace {

// A child running `exe` (argv as given, environment `env`) with `blocked` signals blocked; killed and
// reaped when it goes.
struct Child {
  pid_t pid = -1;
  Child(const std::string& exe, std::vector<std::string> argv, std::vector<std::string> env = {}, int blocked = 0) {
    std::vector<char*> a, e;
    for (std::string& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (std::string& s : env) e.push_back(s.data());
    e.push_back(nullptr);
    pid = ::fork();
    if (pid == 0) {
      if (blocked) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, blocked);
        sigprocmask(SIG_BLOCK, &set, nullptr);
      }
      ::execve(exe.c_str(), a.data(), e.data());
      ::_exit(127);
    }
    // Until the exec is done (the new image's arguments and environment in place), /proc shows this
    // test's image or nothing.
    const std::vector<std::string> want(argv.begin(), argv.end());
    for (int i = 0; i < 400 && attach_proc::proc_words(pid, "cmdline") != want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  void end() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  ~Child() { end(); }
};

const char* sleep_path() { return std::filesystem::exists("/bin/sleep") ? "/bin/sleep" : "/usr/bin/sleep"; }

void handler(int) {}

}  // namespace

TEST_CASE("attach_proc: alive, its argument words, gone once reaped", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  Child c(sleep_path(), {"sleep", "30"});
  REQUIRE(c.pid > 0);
  const long pid = c.pid;
  CHECK(attach_proc::alive(pid));
  CHECK(attach_proc::proc_words(pid, "cmdline") == std::vector<std::string>{"sleep", "30"});
  CHECK_FALSE(attach_proc::is_mono(pid));
  CHECK_FALSE(attach_proc::attach_disabled(pid));
  CHECK_FALSE(attach_proc::profiled(pid));
  c.end();
  CHECK_FALSE(attach_proc::alive(pid));
  CHECK(attach_proc::proc_words(pid, "cmdline").empty());
  CHECK(attach_proc::process_start(pid) == 0);
  CHECK(attach_proc::read_file("/proc/nonexistent/file").empty());
}

TEST_CASE("attach_proc: a Mono by its executable's name - --attach=disable in MONO_ENV_OPTIONS", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  TempDir dir;
  const std::string mono = dir.file("mono-sgen");
  std::filesystem::copy_file(sleep_path(), mono);
  std::filesystem::permissions(mono, std::filesystem::perms::owner_all);
  Child m(mono, {"mono-sgen", "30"}, {"MONO_ENV_OPTIONS=--debug --attach=disable", "HOME=/"});
  REQUIRE(m.pid > 0);
  CHECK(attach_proc::is_mono(m.pid));
  CHECK(attach_proc::attach_disabled(m.pid));
  Child other(sleep_path(), {"sleep", "30"}, {"MONO_ENV_OPTIONS=--debug", "X=--attach=disable"});
  REQUIRE(other.pid > 0);
  CHECK_FALSE(attach_proc::is_mono(other.pid));
  CHECK_FALSE(attach_proc::attach_disabled(other.pid));
}

TEST_CASE("attach_proc: a signal blocked and sent is pending - a handler makes it caught", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  Child c(sleep_path(), {"sleep", "30"}, {}, SIGUSR2);
  REQUIRE(c.pid > 0);
  CHECK_FALSE(attach_proc::signal_pending(c.pid, SIGUSR2));
  CHECK_FALSE(attach_proc::signal_caught(c.pid, SIGUSR1));
  REQUIRE(::kill(c.pid, SIGUSR2) == 0);
  bool pending = false;
  for (int i = 0; i < 100 && !pending; ++i) {
    pending = attach_proc::signal_pending(c.pid, SIGUSR2);
    if (!pending) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(pending);
  CHECK_FALSE(attach_proc::signal_pending(c.pid, SIGUSR1));
  CHECK(attach_proc::alive(c.pid));

  // A child that catches SIGUSR1 (no exec: it only waits).
  const pid_t catcher = ::fork();
  if (catcher == 0) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    ::sigaction(SIGUSR1, &sa, nullptr);
    for (;;) ::pause();
  }
  REQUIRE(catcher > 0);
  bool caught = false;
  for (int i = 0; i < 100 && !caught; ++i) {
    caught = attach_proc::signal_caught(catcher, SIGUSR1);
    if (!caught) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(caught);
  CHECK_FALSE(attach_proc::signal_caught(catcher, SIGUSR2));
  ::kill(catcher, SIGKILL);
  ::waitpid(catcher, nullptr, 0);
}

TEST_CASE("attach_proc: a thread of the agent (mlpd-helper) marks the process profiled", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  std::atomic<bool> named{false}, stop{false};
  std::thread helper([&] {
    pthread_setname_np(pthread_self(), "mlpd-helper");
    named = true;
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  while (!named) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(attach_proc::profiled(::getpid()));
  stop = true;
  helper.join();
}

TEST_CASE("attach_proc: a process's start, in seconds since the epoch", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  Child c(sleep_path(), {"sleep", "30"});
  REQUIRE(c.pid > 0);
  const double now = static_cast<double>(std::time(nullptr));
  const double start = attach_proc::process_start(c.pid);
  CHECK(start > now - 5);
  CHECK(start < now + 5);
  CHECK(attach_proc::process_start(1) <= start);
}
