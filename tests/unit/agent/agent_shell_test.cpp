// The whole agent shell (agent/src/agent.cpp, agent_instance.cpp, process_hooks.cpp) driven with a
// fake runtime that writes events (fake_runtime.h's WritingRuntime): start, the program's threads,
// and the way the process ends -- exit(), exit() from another thread, a fork while profiling, a
// SIGTERM/SIGINT/SIGHUP the agent catches and re-raises, detach and attach again, a refused option.
// The agent installs process-wide handlers (atexit, pthread_atfork, signal handlers) and keeps one
// instance per process, so every case runs it in a child process of its own (fork()); the child
// reports by its exit status (and its stderr, through a pipe), the parent reads the file the child
// wrote back with the reader library: decoded without a problem, every reference known before use,
// the events the child's threads wrote there exactly once.
#include "mlpd_catch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../../../agent/src/process_hooks.h"
#include "agent/child_run.h"
#include "emulated.h"
#include "fake_runtime.h"
#include "mlpd/agent/agent.h"
#include "mlpd/checks.h"
#include "mlpd/decoder.h"
#include "mlpd/input.h"
#include "temp_dir.h"

using namespace mlpd;
using mlpd::test::ChildResult;
using mlpd::test::child_exit;
using mlpd::test::Profile;
using mlpd::test::read_profile;
using mlpd::test::run_child;
using mlpd::test::WritingRuntime;

namespace {

// `n` calls of the method on a thread of the program's, which then ends.
void calls_on_thread(WritingRuntime& rt, int n) {
  std::thread t([&rt, n] {
    for (int i = 0; i < n; ++i) rt.call();
    rt.thread_done();
  });
  t.join();
}

bool handler_is_default(int sig) {
  struct sigaction cur{};
  return ::sigaction(sig, nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
}

void say_line(const std::string& line) {
  const std::string l = line + "\n";
  (void)!::write(STDERR_FILENO, l.data(), l.size());
}

}  // namespace

TEST_CASE("agent shell: exit() ends the file whole and the agent writes nothing on stderr", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const std::string file = dir.file("out.mlpd");
  const ChildResult c = run_child([&] {
    auto* rt = new WritingRuntime;  // the runtime outlives the agent (never freed, as a runtime's)
    agent::start("output=" + file + ",calls", *rt);
    if (!agent::profiling() || rt->installs != 1) return 10;
    if (!rt->installed.calls) return 11;
    calls_on_thread(*rt, 1000);
    calls_on_thread(*rt, 234);
    for (int i = 0; i < 66; ++i) rt->call();  // the main thread's log is never ended: only the exit writes it
    std::exit(0);  // the agent's atexit handler writes the rest and closes the file
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  CHECK(c.err.empty());  // not verbose: the program's stderr is its own
  const Profile p = read_profile(file);
  INFO(p.open_error);
  for (const std::string& pr : p.problems) INFO(pr);
  REQUIRE(p.clean());
  CHECK(p.header.pid == c.pid);
  CHECK(p.header.os == "linux");
  CHECK(p.enters == 1300);
  CHECK(p.leaves == 1300);
  CHECK(p.jitted_work());
  REQUIRE(p.images.size() == 1);
  CHECK(p.images[0] == "fake.exe");
}

TEST_CASE("agent shell: exit() from another thread while main runs writes every thread's events", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const std::string file = dir.file("thread-exit.mlpd");
  const ChildResult c = run_child([&] {
    auto* rt = new WritingRuntime;
    agent::start("output=" + file + ",calls", *rt);
    if (!agent::profiling()) return 10;
    calls_on_thread(*rt, 200);
    std::atomic<bool> main_called{false};
    std::thread t([&] {
      for (int i = 0; i < 300; ++i) rt->call();
      while (!main_called.load()) ::poll(nullptr, 0, 1);
      std::exit(3);  // this thread's log was never ended: the final round writes it
    });
    for (int i = 0; i < 50; ++i) rt->call();  // the main thread's own, still open at exit
    main_called.store(true);
    for (;;) ::pause();  // the program's main thread is busy elsewhere when the exit comes
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(3));
  const Profile p = read_profile(file);
  for (const std::string& pr : p.problems) INFO(pr);
  REQUIRE(p.clean());
  CHECK(p.enters == 550);
  CHECK(p.leaves == 550);
  CHECK(p.jitted_work());
}

TEST_CASE("agent shell: a fork while profiling leaves the parent's file to the parent", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const std::string file = dir.file("fork.mlpd");
  const ChildResult c = run_child([&] {
    auto* rt = new WritingRuntime;
    agent::start("output=" + file + ",calls,dumpsignal=USR2", *rt);
    if (!agent::profiling()) return 10;
    if (handler_is_default(SIGUSR2)) return 11;  // the dump signal is ours
    if (handler_is_default(SIGTERM)) return 12;  // and the exit signals (a file output)
    calls_on_thread(*rt, 300);
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) return 13;
    if (child == 0) {
      // The fork child: the signals are the default again, the runtime was told, nothing it does
      // reaches the parent's file, and its exit does not wait for a helper it does not have.
      int code = 0;
      if (!handler_is_default(SIGUSR2)) code = 1;
      else if (!handler_is_default(SIGTERM)) code = 2;
      else if (rt->after_forks != 1) code = 3;
      const uint64_t written = rt->calls_written;
      for (int i = 0; i < 100; ++i) rt->call();
      if (!code && rt->calls_written != written) code = 4;  // the threads' logs are the parent's: disabled
      agent::shutdown();  // returns at once: nothing of the parent's is finished here
      if (code) child_exit(code);
      std::exit(0);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child) return 14;
    if (!WIFEXITED(status)) return 15;
    if (WEXITSTATUS(status) != 0) return 20 + WEXITSTATUS(status);
    if (rt->after_forks != 0) return 16;  // the parent's runtime was not told
    calls_on_thread(*rt, 200);  // the parent goes on profiling
    std::exit(0);
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  CHECK(c.err.empty());
  const Profile p = read_profile(file);
  for (const std::string& pr : p.problems) INFO(pr);
  REQUIRE(p.clean());
  CHECK(p.enters == 500);  // the parent's 300 + 200; none of the fork child's 100
  CHECK(p.leaves == 500);
  CHECK(p.header.pid == c.pid);
}

TEST_CASE("agent shell: TERM, INT and HUP cut the file to its last whole round and end the process by the signal",
          "[agent][shell]") {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    INFO(strsignal(sig));
    test::TempDir dir("mlpd_shell");
    const std::string file = dir.file("killed.mlpd");
    const ChildResult c = run_child([&] {
      auto* rt = new WritingRuntime;
      agent::start("output=" + file + ",calls", *rt);
      if (!agent::profiling()) return 10;
      if (handler_is_default(sig)) return 11;
      calls_on_thread(*rt, 400);
      if (!agent::live_round_now(60000)) return 12;  // written: the helper's round is done
      for (int i = 0; i < 77; ++i) rt->call();  // in the main thread's buffer, never written
      ::raise(sig);
      return 13;  // not reached: the signal ends the process
    });
    INFO(c.describe() << "\n" << c.err);
    REQUIRE(c.signaled(sig));
    const Profile p = read_profile(file);
    for (const std::string& pr : p.problems) INFO(pr);
    REQUIRE(p.clean());
    CHECK(p.enters == 400);
    CHECK(p.leaves == 400);
    CHECK(p.jitted_work());
  }
}

TEST_CASE("agent shell: a TERM handler the program had at start stays the program's", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const std::string file = dir.file("handled.mlpd");
  const ChildResult c = run_child([&] {
    struct sigaction sa{};
    sa.sa_handler = [](int) { child_exit(42); };
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    auto* rt = new WritingRuntime;
    agent::start("output=" + file + ",calls", *rt);
    if (!agent::profiling()) return 10;
    if (handler_is_default(SIGINT)) return 11;  // the default ones are taken
    ::raise(SIGTERM);
    return 12;
  });
  INFO(c.describe() << "\n" << c.err);
  CHECK(c.exited(42));
}

TEST_CASE("agent shell: detach writes the file whole, and attaching again starts a new file with the metadata",
          "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const std::string first = dir.file("a.mlpd"), second = dir.file("b.mlpd");
  const ChildResult c = run_child([&] {
    auto* rt = new WritingRuntime;
    std::string m;
    if (agent::detach(m) || m != "mlpd: this process is not being profiled") return 10;
    // Refused by the runtime: one line back, and the process can be attached again.
    rt->refusal = "the fake takes no late attach now";
    m.clear();
    if (agent::start_attached("output=" + first + ",calls", *rt, m) || agent::profiling()) return 11;
    say_line("refused: " + m);
    rt->refusal.clear();
    m.clear();
    if (!agent::start_attached("output=" + first + ",calls", *rt, m) || !agent::profiling()) {
      say_line("first: " + m);
      return 12;
    }
    say_line("first: " + m);
    m.clear();
    if (agent::start_attached("output=" + second, *rt, m)) return 13;
    say_line("again: " + m);
    calls_on_thread(*rt, 100);
    m.clear();
    if (!agent::detach(m) || agent::profiling() || rt->detaches != 1) return 14;
    say_line("detach: " + m);
    // The file is whole now, as the process goes on.
    // The second session: the runtime describes nothing again (it did at the first); the file
    // starts with what the first described.
    rt->describe = false;
    m.clear();
    if (!agent::start_attached("output=" + second + ",calls", *rt, m)) {
      say_line("second: " + m);
      return 15;
    }
    say_line("second: " + m);
    calls_on_thread(*rt, 50);
    m.clear();
    if (!agent::detach(m) || rt->detaches != 2 || rt->installs != 2) return 16;
    say_line("detach: " + m);
    return 0;
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  const std::vector<std::string> lines = c.err_lines();
  REQUIRE(lines.size() == 6);
  CHECK_THAT(lines[0], mlpd_test::contains("the fake takes no late attach now"));
  CHECK(lines[1] == "first: mlpd: profiling into " + first);
  CHECK(lines[2] == "again: mlpd: this process is being profiled already");
  CHECK(lines[3] == "detach: mlpd: detached; wrote " + first);
  CHECK(lines[4] == "second: mlpd: profiling into " + second);
  CHECK(lines[5] == "detach: mlpd: detached; wrote " + second);
  const Profile a = read_profile(first);
  for (const std::string& pr : a.problems) INFO(pr);
  REQUIRE(a.clean());
  CHECK(a.enters == 100);
  CHECK(a.jitted_work());
  const Profile b = read_profile(second);
  for (const std::string& pr : b.problems) INFO(pr);
  REQUIRE(b.clean());  // the method used is described before its use: seeded from the first session
  CHECK(b.enters == 50);
  CHECK(b.jitted_work());
}

TEST_CASE("agent shell: a refused configuration is one line on stderr, and the host goes on", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  struct Case {
    std::string options;
    std::string install_error;
    std::string expected;    // in the one line
    std::string no_file;     // a file that must not be left behind
  };
  const std::vector<Case> cases = {
      {"calls,nonsense-option-xyz", "", "nonsense-option-xyz", ""},
      {"output=" + dir.file("no/such/dir/x.mlpd"), "", "x.mlpd", dir.file("no/such/dir/x.mlpd")},
      {"output=" + dir.file("refused.mlpd"), "the fake refuses to start", "mlpd: the fake refuses to start",
       dir.file("refused.mlpd")},
      {"ring=1m,output=" + dir.file("nodir/r.mlpd"), "", "mlpd: ring: cannot write dumps into", ""},
  };
  for (const Case& k : cases) {
    INFO(k.options);
    const ChildResult c = run_child([&] {
      auto* rt = new WritingRuntime;
      rt->install_error = k.install_error;
      agent::start(k.options, *rt);
      if (agent::profiling()) return 10;
      if (!k.install_error.empty() ? rt->installs != 0 || rt->detaches != 0 : rt->installs != 0) return 11;
      say_line("the host goes on");
      std::exit(7);  // the atexit handler, if any, has nothing to do
    });
    INFO(c.describe() << "\n" << c.err);
    REQUIRE(c.exited(7));
    const std::vector<std::string> lines = c.err_lines();
    REQUIRE(lines.size() == 2);
    CHECK_THAT(lines[0], mlpd_test::contains(k.expected));
    CHECK_THAT(lines[0], mlpd_test::contains("profiling is off"));
    CHECK(lines[1] == "the host goes on");
    if (!k.no_file.empty()) CHECK_FALSE(std::filesystem::exists(k.no_file));
  }
}

TEST_CASE("agent shell: output= names: %p, +FILE, a file another process holds (verbose says so)", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  SECTION("%p is the process id") {
    const ChildResult c = run_child([&] {
      auto* rt = new WritingRuntime;
      agent::start("output=" + dir.file("prof.%p.mlpd") + ",calls", *rt);
      calls_on_thread(*rt, 10);
      agent::shutdown();
      return agent::profiling() ? 0 : 10;
    });
    INFO(c.describe() << "\n" << c.err);
    REQUIRE(c.exited(0));
    const Profile p = read_profile(dir.file("prof." + std::to_string(c.pid) + ".mlpd"));
    REQUIRE(p.clean());
    CHECK(p.header.pid == c.pid);
    CHECK(p.enters == 10);
  }
  SECTION("+FILE is FILE.PID") {
    const ChildResult c = run_child([&] {
      auto* rt = new WritingRuntime;
      agent::start("output=+" + dir.file("plus.mlpd") + ",calls", *rt);
      calls_on_thread(*rt, 11);
      agent::shutdown();
      return agent::profiling() ? 0 : 10;
    });
    REQUIRE(c.exited(0));
    const Profile p = read_profile(dir.file("plus.mlpd." + std::to_string(c.pid)));
    REQUIRE(p.clean());
    CHECK(p.enters == 11);
  }
  SECTION("a file another live process writes: NAME.PID instead, said with verbose") {
    const std::string taken = dir.file("taken.mlpd");
    const int fd = ::open(taken.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    const int locked = ::flock(fd, LOCK_EX | LOCK_NB);
    const int lock_error = locked != 0 ? errno : 0;
    if (locked != 0) ::close(fd);
    if (lock_error == ENOLCK || lock_error == EINVAL) {
      WARN("not checked: the temporary directory's file system has no locks");
      return;
    }
    REQUIRE(locked == 0);
    const ChildResult c = run_child([&] {
      auto* rt = new WritingRuntime;
      agent::start("output=" + taken + ",calls,verbose", *rt);
      calls_on_thread(*rt, 12);
      std::exit(agent::profiling() ? 0 : 10);
    });
    ::close(fd);
    INFO(c.describe() << "\n" << c.err);
    REQUIRE(c.exited(0));
    const std::string instead = taken + "." + std::to_string(c.pid);
    CHECK_THAT(c.err, mlpd_test::contains("output file '" + taken + "' is being written by another process; writing '" +
                                          instead + "' instead"));
    CHECK_THAT(c.err, mlpd_test::contains("mlpd: profiling, options 'output=" + taken + ",calls,verbose', clock "));
    CHECK_THAT(c.err, mlpd_test::contains("mlpd: runtime: fake"));
    CHECK(std::filesystem::file_size(taken) == 0);  // the other process's file is untouched
    const Profile p = read_profile(instead);
    REQUIRE(p.clean());
    CHECK(p.enters == 12);
  }
}

TEST_CASE("agent shell: nochildren takes the agent out of the environment children inherit", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const ChildResult c = run_child([&] {
    ::setenv("MLPD_OPTIONS", "calls", 1);
    ::setenv("LD_PRELOAD", "/opt/a/libother.so:/opt/b/libmlpd.so /opt/c/libthird.so", 1);
    ::setenv("MONO_ENV_OPTIONS", "--debug --profile=mlpd:calls --gc=sgen", 1);
    ::setenv("CORECLR_PROFILER_PATH", "/opt/b/libmlpd.so", 1);
    ::setenv("CORECLR_ENABLE_PROFILING", "1", 1);
    ::setenv("CORECLR_PROFILER", "{guid}", 1);
    auto* rt = new WritingRuntime;
    agent::start("output=" + dir.file("nochildren.mlpd") + ",nochildren", *rt);
    if (!agent::profiling()) return 10;
    auto value = [](const char* n) { const char* v = std::getenv(n); return v ? std::string(v) : std::string("(unset)"); };
    say_line("MLPD_OPTIONS=" + value("MLPD_OPTIONS"));
    say_line("LD_PRELOAD=" + value("LD_PRELOAD"));
    say_line("MONO_ENV_OPTIONS=" + value("MONO_ENV_OPTIONS"));
    say_line("CORECLR_ENABLE_PROFILING=" + value("CORECLR_ENABLE_PROFILING"));
    say_line("CORECLR_PROFILER=" + value("CORECLR_PROFILER"));
    agent::shutdown();
    return 0;
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  const std::vector<std::string> lines = c.err_lines();
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "MLPD_OPTIONS=(unset)");
  // The unit test binary is not libmlpd.so: the library's usual names are taken out.
  CHECK(lines[1] == "LD_PRELOAD=/opt/a/libother.so /opt/c/libthird.so");
  CHECK(lines[2] == "MONO_ENV_OPTIONS=--debug --gc=sgen");
  CHECK(lines[3] == "CORECLR_ENABLE_PROFILING=1");  // CORECLR_PROFILER_PATH names libmlpd.so, not this binary
  CHECK(lines[4] == "CORECLR_PROFILER={guid}");
}

TEST_CASE("agent shell: flight recorder: TriggerHeapshot's dump and the exit dump", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const ChildResult c = run_child([&] {
    auto* rt = new WritingRuntime;
    agent::start("ring=4m,output=" + dir.file("ring.%n.mlpd") + ",calls,verbose", *rt);
    if (!agent::profiling()) return 10;
    calls_on_thread(*rt, 300);
    if (!rt->env.after_trigger_heapshot) return 11;
    rt->env.after_trigger_heapshot();  // returns once the dump is written
    if (!std::filesystem::exists(dir.file("ring.0000.mlpd"))) return 12;
    calls_on_thread(*rt, 20);
    std::exit(0);  // the exit dump: ring.0001.mlpd
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  CHECK_THAT(c.err, mlpd_test::contains("mlpd: LogProfiler.TriggerHeapshot: OK dump " + dir.file("ring.0000.mlpd")));
  CHECK_THAT(c.err, mlpd_test::contains("mlpd: exit OK dump " + dir.file("ring.0001.mlpd")));
  const Profile d0 = read_profile(dir.file("ring.0000.mlpd"));
  for (const std::string& pr : d0.problems) INFO(pr);
  REQUIRE(d0.clean());
  CHECK(d0.enters == 300);
  CHECK(d0.jitted_work());
  const Profile d1 = read_profile(dir.file("ring.0001.mlpd"));
  for (const std::string& pr : d1.problems) INFO(pr);
  REQUIRE(d1.clean());
  CHECK(d1.enters == 320);
  CHECK(d1.header.pid == c.pid);
}

namespace {

// One request line to a TCP command port on the loopback, its answer line.
std::string ask_port(int port, const std::string& line) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "(no socket)";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer = "(no connection)";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string l = line + "\r\n";
    if (::write(fd, l.data(), l.size()) == static_cast<ssize_t>(l.size())) {
      answer.clear();
      char ch;
      while (::read(fd, &ch, 1) == 1 && ch != '\n') {
        if (ch != '\r') answer += ch;
      }
    }
  }
  ::close(fd);
  return answer;
}

}  // namespace

TEST_CASE("agent shell: the command port and metrics= are served, announced, and the port is in the header",
          "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const std::string file = dir.file("port.mlpd");
  const ChildResult c = run_child([&] {
    auto* rt = new WritingRuntime;
    agent::start("output=" + file + ",calls,port=0,metrics=0,verbose", *rt);
    if (!agent::profiling()) return 10;
    const Profile header = read_profile(file);  // the header is written at start: the port the kernel chose
    if (!header.opened || header.header.port == 0) return 11;
    const int port = header.header.port;
    say_line("stats: " + ask_port(port, "stats"));
    say_line("pause: " + ask_port(port, "pause"));
    say_line("resume: " + ask_port(port, "resume"));
    say_line("dump: " + ask_port(port, "dump"));
    calls_on_thread(*rt, 5);
    std::exit(0);
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  const Profile p = read_profile(file);
  REQUIRE(p.clean());
  CHECK(p.enters == 5);
  const std::string port = std::to_string(p.header.port);
  CHECK_THAT(c.err, mlpd_test::contains("mlpd: command port 127.0.0.1:" + port + "\n"));
  CHECK_THAT(c.err, mlpd_test::contains("mlpd: metrics at http://127.0.0.1:"));
  CHECK_THAT(c.err, mlpd_test::contains("\nstats: OK bytes="));
  CHECK_THAT(c.err, mlpd_test::contains("\npause: OK paused\n"));
  CHECK_THAT(c.err, mlpd_test::contains("\nresume: OK resumed\n"));
  CHECK_THAT(c.err, mlpd_test::contains("\ndump: ERR dump: only in flight-recorder mode"));
  CHECK_THAT(c.err, mlpd_test::contains("\nmlpd: wrote "));  // verbose: the summary at exit
}

TEST_CASE("agent shell: rotation by size keeps the newest files, each whole on its own", "[agent][shell]") {
  test::TempDir dir("mlpd_shell");
  const ChildResult c = run_child([&] {
    auto* rt = new WritingRuntime;
    agent::start("output=" + dir.file("rot.%n.mlpd") + ",calls,rotate-size=4k,rotate-keep=2", *rt);
    if (!agent::profiling()) return 10;
    for (int i = 0; i < 8; ++i) {
      calls_on_thread(*rt, 1000);
      if (!agent::live_round_now(60000)) return 11;
    }
    std::exit(0);
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  CHECK(c.err.empty());
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 2);  // rotate-keep=2: the older ones deleted
  uint64_t enters = 0;
  for (const std::string& f : files) {
    INFO(f);
    const Profile p = read_profile(f);
    for (const std::string& pr : p.problems) INFO(pr);
    REQUIRE(p.clean());  // every reference described in the file itself
    CHECK(p.jitted_work());
    enters += p.enters;
  }
  CHECK(files.back() != dir.file("rot.0000.mlpd"));
  CHECK(enters > 0);
  CHECK(enters < 8000);
}

TEST_CASE("agent shell: an output that fails stops profiling with one line, and dumpsignal flushes", "[agent][shell]") {
  SECTION("a pipe whose reader went away") {
    const ChildResult c = run_child([&] {
      int p[2];
      if (::pipe(p) != 0) return 9;
      ::signal(SIGPIPE, SIG_IGN);  // the host's choice; the agent never raises SIGPIPE itself
      auto* rt = new WritingRuntime;
      agent::start("output=#" + std::to_string(p[1]) + ",calls", *rt);
      if (!agent::profiling()) return 10;
      ::close(p[0]);
      calls_on_thread(*rt, 100);
      agent::live_round_now(60000);
      say_line("the host goes on");
      std::exit(5);
    });
    INFO(c.describe() << "\n" << c.err);
    REQUIRE(c.exited(5));
    const std::vector<std::string> lines = c.err_lines();
    REQUIRE(lines.size() == 2);
    CHECK_THAT(lines[0], mlpd_test::contains("profiling stopped"));
    CHECK(lines[1] == "the host goes on");
  }
  SECTION("dumpsignal=USR1 without ring: a flush round, said with verbose") {
    test::TempDir dir("mlpd_shell");
    const std::string file = dir.file("flushed.mlpd");
    const ChildResult c = run_child([&] {
      auto* rt = new WritingRuntime;
      agent::start("output=" + file + ",calls,dumpsignal=USR1,flush=3600000", *rt);
      if (!agent::profiling()) return 10;
      for (int i = 0; i < 40; ++i) rt->call();  // the main thread's log: only a round writes it
      ::raise(SIGUSR1);
      // Waited for: the helper's round has the 40 calls in the file.
      for (int i = 0; i < 6000 && read_profile(file).enters < 40; ++i) ::poll(nullptr, 0, 10);
      if (read_profile(file).enters != 40) return 11;
      agent::shutdown();
      return 0;
    });
    INFO(c.describe() << "\n" << c.err);
    REQUIRE(c.exited(0));
    const Profile p = read_profile(file);
    REQUIRE(p.clean());
    CHECK(p.enters == 40);
  }
}
