// `mlpd top` (reader/cli/cmd_top.cpp) driven in-process: on a file whose writer has exited (one final
// view, its exit status, a file left cut), on standard input, on a file that grows while top follows
// it (the writer a child process of the test that stays alive until the test lets it end), and its
// refusals. The writer's pid is the file header's; a dead writer's pid is that of a child already
// reaped.
#include "mlpd_catch.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../../../../reader/cli/commands.h"
#include "cli_run.h"
#include "event_gen.h"
#include "event_makers.h"
#include "temp_dir.h"

using namespace mlpd;
using namespace mlpd::test;
using mlpd_test::contains;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000, kC = 0x3000;
constexpr uint64_t kThread = 0x99;

Event sample(uint64_t t, std::vector<uint64_t> frames) {
  Event h = at(EventKind::sample_hit, t);
  h.ptr = kThread;
  h.ips = {frames.front() == kB ? 0x20010u : 0x30010u};
  h.frames = std::move(frames);
  return h;
}

// The names (A, B, C compiled) and `n` samples of A;B.
ThreadBuffer first_part(int n) {
  ThreadBuffer b{kThread, 1000, {jit(kA, 0x10000, 0x100, "N:A ()"), jit(kB, 0x20000, 0x100, "N:B ()"),
                                 jit(kC, 0x30000, 0x100, "N:C (int)")}};
  uint64_t t = 1000;
  for (int i = 0; i < n; ++i) b.events.push_back(sample(t += 1000, {kB, kA}));
  return b;
}

// `n` samples of A;C.
ThreadBuffer second_part(int n) {
  ThreadBuffer b{kThread, 100000, {}};
  uint64_t t = 100000;
  for (int i = 0; i < n; ++i) b.events.push_back(sample(t += 1000, {kC, kA}));
  return b;
}

FileHeader header_of(int pid) {
  FileHeader h = default_header();
  h.pid = pid;
  return h;
}

// The pid of a process that has exited and been reaped: a writer that is gone.
int dead_pid() {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(0);
  REQUIRE(pid > 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return pid;
}

// A child process standing for a running writer: alive until end() (or the destructor) closes the
// pipe it waits on; then reaped.
struct Writer {
  pid_t pid = -1;
  int gate = -1;
  Writer() {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      char c;
      while (::read(fds[0], &c, 1) > 0) {
      }
      ::_exit(0);
    }
    ::close(fds[0]);
    gate = fds[1];
  }
  // Lets the child exit and reaps it; true when it was reaped.
  bool end() {
    if (gate >= 0) ::close(gate);
    gate = -1;
    if (pid <= 0) return false;
    int status = 0;
    const bool ok = ::waitpid(pid, &status, 0) == pid;
    pid = -1;
    return ok;
  }
  ~Writer() { end(); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
};

CliRun top(std::vector<std::string> args) { return run_cli(cli::cmd_top, "top", std::move(args)); }

void append(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// What has been written so far to `fd` (a regular file), from its start.
std::string written(int fd) {
  std::string text;
  char buf[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return text;
}

// Waits (up to a minute) until `fd`'s text holds `what`.
bool wait_for(int fd, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (written(fd).find(what) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("mlpd top: a file whose writer has exited: one final view, from its start", "[cli][top]") {
  TempDir dir;
  const std::string path =
      dir.write("done.mlpd", build_file(header_of(dead_pid()), {first_part(3), second_part(5)}));
  const CliRun r = top({"--interval", "0.05", "--stats", path});
  CHECK(r.rc == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(!lines.empty());
  // One view: the writer is gone, so top counts the whole file and ends.
  CHECK(lines[0].rfind("== mlpd top: +", 0) == 0);
  CHECK_THAT(lines[0], contains(" 11 events, "));  // 3 methods compiled, 8 samples
  CHECK_THAT(lines[0], contains(", program exited (final) =="));
  CHECK(r.out.find("== mlpd top", 1) == std::string::npos);
  // The short report: both leaves' samples (5 of C, 3 of B).
  CHECK_THAT(r.out, contains("N:C (int)"));
  CHECK_THAT(r.out, contains("N:B ()"));
  CHECK(r.out.find("N:C (int)") < r.out.find("N:B ()"));
  // --stats: the totals at the end.
  CHECK_THAT(r.err, contains("mlpd top: read "));
  CHECK_THAT(r.err, contains(" bytes, decoded "));

  // --top 1: only the first method of each list.
  const CliRun one = top({"--interval", "0.05", "--top", "1", "-j", "1", path});
  CHECK(one.rc == 0);
  CHECK_THAT(one.out, contains("N:C (int)"));
  CHECK(one.out.find("N:B ()") == std::string::npos);
}

TEST_CASE("mlpd top: a file its gone writer left cut, a damaged file", "[cli][top]") {
  TempDir dir;
  const int pid = dead_pid();
  std::vector<uint8_t> bytes = build_file(header_of(pid), {first_part(3), second_part(5)});
  bytes.resize(bytes.size() - 10);
  const std::string cut = dir.write("cut.mlpd", bytes);
  const CliRun r = top({"--interval", "0.05", cut});
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, contains("program exited (final)"));
  CHECK_THAT(r.err, contains("mlpd top: " + cut + ": the writer (pid " + std::to_string(pid) +
                             ") has exited and left the file incomplete"));
}

TEST_CASE("mlpd top -: standard input, read until it closes", "[cli][top]") {
  TempDir dir;
  const std::string path = dir.write("in.mlpd", build_file(header_of(dead_pid()), {first_part(2), second_part(4)}));
  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(in >= 0);
  const int saved = ::dup(0);
  REQUIRE(saved >= 0);
  REQUIRE(::dup2(in, 0) == 0);
  ::close(in);
  const CliRun r = top({"--interval", "0.05", "-"});
  ::dup2(saved, 0);
  ::close(saved);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, contains(" 9 events, "));  // 3 methods compiled, 6 samples
  CHECK_THAT(r.out, contains("program exited (final)"));
  CHECK_THAT(r.out, contains("N:C (int)"));
}

TEST_CASE("mlpd top: a growing file, counted from where it was when top started", "[cli][top]") {
  TempDir dir;
  // The writer: a child that lives until the test closes its pipe (and is reaped whatever happens).
  Writer child;
  REQUIRE(child.pid > 0);
  const pid_t writer = child.pid;
  const std::vector<uint8_t> whole = build_file(header_of(writer), {first_part(3), second_part(5)});
  const std::vector<uint8_t> start = build_file(header_of(writer), {first_part(3)});
  REQUIRE(whole.size() > start.size());
  const std::string path = dir.write("live.mlpd", start);

  // Standard output and error to files of our own, read while top runs.
  std::fflush(stdout);
  std::fflush(stderr);
  std::FILE* out_file = std::tmpfile();
  std::FILE* err_file = std::tmpfile();
  REQUIRE(out_file);
  REQUIRE(err_file);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  ::dup2(::fileno(out_file), 1);
  ::dup2(::fileno(err_file), 2);
  int rc = -1;
  std::string p = path;
  std::vector<std::string> args = {"top", "--interval", "0.05", "--stats", p};
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::thread follower([&] { rc = cli::cmd_top(static_cast<int>(args.size()), argv.data()); });
  // The first view: the file up to the end of its first part, counted from there.
  const bool first_view = wait_for(::fileno(err_file), "the file up to byte " + std::to_string(start.size()));
  // The program writes on.
  append(path, std::vector<uint8_t>(whole.begin() + static_cast<std::ptrdiff_t>(start.size()), whole.end()));
  const bool second_view = first_view && wait_for(::fileno(err_file), "the file up to byte " + std::to_string(whole.size()));
  // The program ends.
  const bool reaped = child.end();
  follower.join();
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  const std::string out = written(::fileno(out_file)), err = written(::fileno(err_file));
  std::fclose(out_file);
  std::fclose(err_file);
  CAPTURE(out, err);
  CHECK(reaped);
  CHECK(first_view);
  CHECK(second_view);
  CHECK(rc == 0);
  const std::vector<std::string> lines = lines_of(out);
  REQUIRE(!lines.empty());
  // Counting since top started: the 3 samples of the first part are not counted, only their names read.
  CHECK_THAT(lines[0], contains(" 0 events, "));
  CHECK_THAT(lines[0], contains("counting since top started"));
  // The final view: the 5 samples written while top followed the file.
  const size_t final_at = out.rfind("== mlpd top: +");
  REQUIRE(final_at != std::string::npos);
  const std::string last = out.substr(final_at);
  CHECK_THAT(last, contains(" 5 events, "));
  CHECK_THAT(last, contains("program exited (final)"));
  CHECK_THAT(last, contains("N:C (int)"));
  CHECK(last.find("N:B ()") == std::string::npos);
}

TEST_CASE("mlpd top: refusals", "[cli][top]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", build_file(header_of(dead_pid()), {first_part(1)}));
  struct Case {
    std::vector<std::string> args;
    int rc;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, 2, "mlpd top: no FILE given (try 'mlpd top --help')"},
      {{path, path}, 2, "mlpd top: one FILE only"},
      {{"--interval", "0", path}, 2, "--interval needs a positive number"},
      {{"--interval", "soon", path}, 2, "--interval needs a positive number"},
      {{"--top", "-3", path}, 2, "--top needs a positive number"},
      {{dir.file("missing.mlpd")}, 1, "mlpd top: " + dir.file("missing.mlpd") + ": cannot open: "},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const CliRun r = top(c.args);
    CHECK(r.rc == c.rc);
    CHECK(r.out.empty());
    CHECK(lines_of(r.err).size() == 1);
    CHECK_THAT(r.err, contains(c.message));
  }
  const CliRun help = top({"--help"});
  CHECK(help.rc == 0);
  CHECK(help.out.rfind("usage: mlpd top", 0) == 0);
}
