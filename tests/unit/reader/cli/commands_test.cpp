// The CLI's subcommands driven in-process (reader/cli: cmd_verify.cpp, cmd_dump.cpp with the dump's
// drivers and formats, cmd_diff.cpp, load.cpp, follow.cpp), on small files built with the test encoder:
// what each prints for the events it was given, its exit status, and its errors.
#include "mlpd_catch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../../../../reader/cli/commands.h"
#include "../../../../reader/cli/follow.h"
#include "../../../../reader/cli/load.h"
#include "cli_run.h"
#include "event_gen.h"
#include "mlpd/format.h"
#include "temp_dir.h"

#if MLPD_HAVE_NLOHMANN_JSON
#include <nlohmann/json.hpp>
#endif

using namespace mlpd;
using namespace mlpd::test;
using mlpd_test::contains;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000, kC = 0x3000;

Event jit(uint64_t method, uint64_t code, const std::string& name) {
  Event e;
  e.kind = EventKind::method_jit;
  e.time = 1;
  e.method = method;
  e.ptr = code;
  e.size = 0x100;
  e.name = name;
  return e;
}

Event at(EventKind k, uint64_t t, uint64_t method = 0) {
  Event e;
  e.kind = k;
  e.time = t;
  e.method = method;
  return e;
}

Event hit(uint64_t t, uint64_t thread, std::vector<uint64_t> frames) {
  Event h = at(EventKind::sample_hit, t);
  h.ptr = thread;
  h.ips = {frames.front() == kB ? 0x20010u : 0x30010u};  // inside the leaf's code
  h.frames = std::move(frames);
  return h;
}

Event thread_name(uint64_t tid, const std::string& name) {
  Event e = at(EventKind::thread_name, 2);
  e.ptr = tid;
  e.name = name;
  return e;
}

// A file of a profile: thread 0x99 ("Main") samples A;B `ab` times and A;C `ac` times; thread 0x77
// calls A [B] [C].
std::vector<uint8_t> samples_file(int ab, int ac) {
  std::vector<Event> ev = {jit(kA, 0x10000, "N:A ()"), jit(kB, 0x20000, "N:B ()"), jit(kC, 0x30000, "N:C (int)"),
                           thread_name(0x99, "Main")};
  uint64_t t = 100;
  for (int i = 0; i < ab; ++i) ev.push_back(hit(t += 1000, 0x99, {kB, kA}));
  for (int i = 0; i < ac; ++i) ev.push_back(hit(t += 1000, 0x99, {kC, kA}));
  std::vector<Event> calls = {at(EventKind::method_enter, 1000, kA), at(EventKind::method_enter, 1100, kB),
                              at(EventKind::method_leave, 1400, kB), at(EventKind::method_enter, 1500, kC),
                              at(EventKind::method_leave, 1600, kC), at(EventKind::method_leave, 2000, kA)};
  return build_file({{0x99, 0, ev}, {0x77, 0, calls}});
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at_ = text.find(what); at_ != std::string::npos; at_ = text.find(what, at_ + 1)) ++n;
  return n;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace

// ---- mlpd verify ----

TEST_CASE("verify: a valid file's summary line counts its buffers, events, threads and bytes", "[cli][verify]") {
  TempDir dir;
  const std::vector<uint8_t> bytes = samples_file(3, 1);
  const std::string path = dir.write("a.mlpd", bytes);
  const CliRun r = run_cli(cli::cmd_verify, "verify", {path});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  // 4 names + 4 samples on 0x99, 6 calls on 0x77.
  CHECK(r.out == path + ": ok: 2 buffers, 14 events, 2 threads writing events, " + std::to_string(bytes.size()) +
                     " bytes\n");
  const CliRun strict = run_cli(cli::cmd_verify, "verify", {"--strict", path});
  CHECK(strict.rc == 0);
  CHECK_THAT(strict.out, contains(": ok: 2 buffers, 14 events") && contains(" bytes (strict)\n"));
}

TEST_CASE("verify: a problem is one line with its offset and buffer, and the status is 1", "[cli][verify]") {
  TempDir dir;
  std::vector<uint8_t> bytes = samples_file(1, 0);
  const std::string good = dir.write("good.mlpd", bytes);
  // The first event byte of the second buffer made an unknown event type (type 15).
  const DecodedFile d = decode_bytes(bytes);
  REQUIRE(d.buffers.size() == 2);
  const uint64_t off = d.buffers[1].offset + 48;
  bytes[off] = 0x0f;
  const std::string bad = dir.write("bad.mlpd", bytes);
  const CliRun r = run_cli(cli::cmd_verify, "verify", {good, bad});
  CHECK(r.rc == 1);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], contains(good + ": ok: "));
  CHECK_THAT(lines[1], contains(bad + ": offset " + std::to_string(off) + " (buffer 1): "));
  CHECK_THAT(r.out, !contains(bad + ": ok"));
  // A file that cannot be opened is a problem of that file too.
  const CliRun missing = run_cli(cli::cmd_verify, "verify", {dir.file("none.mlpd")});
  CHECK(missing.rc == 1);
  CHECK_THAT(missing.out, contains("none.mlpd: offset 0 (header): cannot open: "));
}

TEST_CASE("verify --strict: a method no earlier event described is a problem", "[cli][verify]") {
  TempDir dir;
  const std::string path =
      dir.write("a.mlpd", build_file({{0x99, 0, {at(EventKind::method_enter, 10, 0x4440), at(EventKind::method_leave, 20, 0x4440)}}}));
  CHECK(run_cli(cli::cmd_verify, "verify", {path}).rc == 0);
  const CliRun r = run_cli(cli::cmd_verify, "verify", {"--strict", path});
  CHECK(r.rc == 1);
  CHECK(count(r.out, path + ": offset ") == 1);  // once for the method, at its first reference
  CHECK_THAT(r.out, contains("0x4440"));
}

#if MLPD_HAVE_NLOHMANN_JSON
TEST_CASE("verify --json: one object per file, counts by kind, errors with offset and buffer", "[cli][verify]") {
  TempDir dir;
  std::vector<uint8_t> bytes = samples_file(3, 1);
  const std::string good = dir.write("good.mlpd", bytes);
  const DecodedFile d = decode_bytes(bytes);
  const uint64_t off = d.buffers[1].offset + 48;
  bytes[off] = 0x0f;
  const std::string bad = dir.write("bad.mlpd", bytes);
  const CliRun r = run_cli(cli::cmd_verify, "verify", {"--json", good, bad});
  CHECK(r.rc == 1);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  const auto a = nlohmann::json::parse(lines[0]);
  CHECK(a["file"] == good);
  CHECK(a["ok"] == true);
  CHECK(a["buffers"] == 2);
  CHECK(a["threads"] == 2);
  CHECK(a["counts"] == nlohmann::json({{"method_jit", 3}, {"thread_name", 1}, {"sample_hit", 4},
                                       {"method_enter", 3}, {"method_leave", 3}}));
  CHECK(a["errors"].empty());
  const auto b = nlohmann::json::parse(lines[1]);
  CHECK(b["ok"] == false);
  REQUIRE(b["errors"].size() == 1);
  CHECK(b["errors"][0]["offset"] == off);
  CHECK(b["errors"][0]["buffer"] == 1);
  CHECK_FALSE(b["errors"][0]["message"].get<std::string>().empty());
}
#endif

TEST_CASE("verify: bad usage is status 2", "[cli][verify]") {
  CHECK(run_cli(cli::cmd_verify, "verify", {"--frobnicate", "x"}).rc == 2);
  CHECK(run_cli(cli::cmd_verify, "verify", {}).rc == 2);
}

// ---- mlpd dump ----

TEST_CASE("dump: the header, each buffer and each event on a line of its own, names resolved", "[cli][dump]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", samples_file(2, 1));
  ScopedEnv one("MLPD_DUMP_THREADS", "1");
  const CliRun r = run_cli(cli::cmd_dump, "dump", {path});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  const std::vector<std::string> lines = lines_of(r.out);
  // 1 header + 2 buffers + 13 events.
  REQUIRE(lines.size() == 16);
  CHECK_THAT(lines[0], contains("header version=") && contains(" pid=4242 port=37001") &&
                           contains(" args=\"alloc,calls,output=test.mlpd\" arch=\"x86-64\" os=\"linux\""));
  CHECK(count(r.out, "\nbuffer ") == 2);
  // The first buffer's line comes before the thread's name.
  CHECK_THAT(lines[1], contains("buffer 0 offset=92 thread=0x99 time_base=0 "));
  CHECK(count(r.out, " 0x99 method_jit ") == 3);
  CHECK_THAT(r.out, contains(" method_jit code=0x30000 size=256 method=0x3000 N:C (int)\n"));
  // Samples on thread 0x99, once its name is known; their frames by name, innermost first.
  CHECK(count(r.out, " 0x99 \"Main\" sample_hit tid=0x99 Main ") == 3);
  CHECK(count(r.out, " sample_hit ") == 3);
  CHECK(count(r.out, " frames=[N:B () | N:A ()]\n") == 2);
  CHECK(count(r.out, " frames=[N:C (int) | N:A ()]\n") == 1);
  // The calls of thread 0x77, the method named.
  CHECK(count(r.out, " 0x77 method_enter method=0x1000 N:A ()\n") == 1);
  CHECK(count(r.out, " method_leave ") == 3);
}

TEST_CASE("dump: the same output on one thread and on several, and a problem where it occurs", "[cli][dump]") {
  TempDir dir;
  EventGen gen(17);
  std::vector<ThreadBuffer> bufs;
  for (uint64_t t = 0; t < 6; ++t) bufs.push_back({0x100 + t, 1000 * t, gen.events(300)});
  std::vector<uint8_t> bytes = build_file(bufs);
  const std::string path = dir.write("a.mlpd", bytes);
  std::string one_out, many_out;
  {
    ScopedEnv one("MLPD_DUMP_THREADS", "1");
    const CliRun r = run_cli(cli::cmd_dump, "dump", {path});
    CHECK(r.rc == 0);
    one_out = r.out;
  }
  {
    ScopedEnv many("MLPD_DUMP_THREADS", "3");
    ScopedEnv small("MLPD_DUMP_JOB_TEXT", "5000");  // workers stop early and the driver goes on
    const CliRun r = run_cli(cli::cmd_dump, "dump", {path});
    CHECK(r.rc == 0);
    many_out = r.out;
  }
  CHECK(lines_of(one_out).size() == 1 + 6 + 6 * 300);
  CHECK(one_out == many_out);

  // Cut inside the last buffer: everything before is printed, then the problem, status 1.
  bytes.resize(bytes.size() - 5);
  const std::string cut = dir.write("cut.mlpd", bytes);
  ScopedEnv many("MLPD_DUMP_THREADS", "2");
  const CliRun r = run_cli(cli::cmd_dump, "dump", {cut});
  CHECK(r.rc == 1);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE_FALSE(lines.empty());
  CHECK_THAT(lines.back(), contains("offset ") && contains(" (buffer 5): "));
  CHECK(one_out.compare(0, 1000, r.out, 0, 1000) == 0);
}

#if MLPD_HAVE_NLOHMANN_JSON
TEST_CASE("dump --json: JSON Lines, one object per header, buffer and event, with the event's fields", "[cli][dump]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", samples_file(2, 1));
  const CliRun r = run_cli(cli::cmd_dump, "dump", {"--json", path});
  CHECK(r.rc == 0);
  std::map<std::string, int> kinds;
  int headers = 0, buffers = 0;
  nlohmann::json enter;
  for (const std::string& line : lines_of(r.out)) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("kind")) {
      const std::string k = j["kind"];
      ++kinds[k];
      if (k == "method_enter" && enter.is_null()) enter = j;
    } else if (j.contains("header")) {
      ++headers;
      CHECK(j["header"]["pid"] == 4242);
    } else if (j.contains("buffer")) {
      ++buffers;
    }
  }
  CHECK(headers == 1);
  CHECK(buffers == 2);
  CHECK(kinds == std::map<std::string, int>{{"method_jit", 3}, {"thread_name", 1}, {"sample_hit", 3},
                                            {"method_enter", 3}, {"method_leave", 3}});
  REQUIRE_FALSE(enter.is_null());
  CHECK(enter["method"] == "0x1000");
  CHECK(enter["method_name"] == "N:A ()");
  CHECK(enter["time"] == 1000);
  CHECK(enter["thread"] == "0x77");
}
#endif

TEST_CASE("dump: one file only, a directory or a missing file is an error", "[cli][dump]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", samples_file(1, 0));
  const CliRun two = run_cli(cli::cmd_dump, "dump", {path, path});
  CHECK(two.rc == 2);
  CHECK_THAT(two.err, contains("only one FILE"));
  const CliRun d = run_cli(cli::cmd_dump, "dump", {dir.path.string()});
  CHECK(d.rc == 1);
  CHECK_THAT(d.err, contains("cannot open '" + dir.path.string() + "'"));
  const CliRun m = run_cli(cli::cmd_dump, "dump", {dir.file("none.mlpd")});
  CHECK(m.rc == 1);
  CHECK_THAT(m.err, contains("cannot open '"));
}

// ---- mlpd diff ----

TEST_CASE("diff: the stacks of A and B by frame names, A's and B's weights", "[cli][diff]") {
  TempDir dir;
  const std::string a = dir.write("a.mlpd", samples_file(3, 1));
  const std::string b = dir.write("b.mlpd", samples_file(1, 4));
  const std::string out = dir.file("d.collapsed");
  const CliRun r = run_cli(cli::cmd_diff, "diff", {a, b, "-o", out, "--jobs", "1"});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(read_text(out) == "N:A ();N:B () 3 1\nN:A ();N:C (int) 1 4\n");
  // Standard output without -o; one root per thread with --threads.
  const CliRun t = run_cli(cli::cmd_diff, "diff", {"--threads", a, b});
  CHECK(t.rc == 0);
  CHECK(t.out == "Main;N:A ();N:B () 3 1\nMain;N:A ();N:C (int) 1 4\n");
  // --what calls: the call tree of thread 0x77, the same in both.
  const CliRun c = run_cli(cli::cmd_diff, "diff", {"--what", "calls", a, b});
  CHECK(c.rc == 0);
  // Self nanoseconds: A 1000 less B's 300 and C's 100.
  CHECK(c.out == "N:A () 600 600\nN:A ();N:B () 300 300\nN:A ();N:C (int) 100 100\n");
}

TEST_CASE("diff: an HTML flame graph titled with both files", "[cli][diff]") {
  TempDir dir;
  const std::string a = dir.write("a.mlpd", samples_file(3, 1));
  const std::string b = dir.write("b.mlpd", samples_file(1, 4));
  const std::string out = dir.file("d.html");
  const CliRun r = run_cli(cli::cmd_diff, "diff", {a, b, "-o", out});
  CHECK(r.rc == 0);
  const std::string page = read_text(out);
  CHECK_THAT(page, contains("<html") && contains("a.mlpd") && contains("b.mlpd") && contains("N:C (int)"));
}

TEST_CASE("diff: usage errors (files, output name, what the files lack) and unreadable files", "[cli][diff]") {
  TempDir dir;
  const std::string a = dir.write("a.mlpd", samples_file(1, 1));
  const CliRun one = run_cli(cli::cmd_diff, "diff", {a});
  CHECK(one.rc == 2);
  CHECK_THAT(one.err, contains("give two files, A and B"));
  const CliRun ext = run_cli(cli::cmd_diff, "diff", {a, a, "-o", dir.file("x.txt")});
  CHECK(ext.rc == 2);
  CHECK_THAT(ext.err, contains("OUT must end in .html, .collapsed or .folded"));
  const CliRun what = run_cli(cli::cmd_diff, "diff", {"--what", "alloc", a, a});
  CHECK(what.rc == 2);
  CHECK_THAT(what.err, contains("mlpd diff: " + a + ": "));
  const CliRun missing = run_cli(cli::cmd_diff, "diff", {a, dir.file("none.mlpd")});
  CHECK(missing.rc == 1);
  CHECK_THAT(missing.err, contains("mlpd diff: " + dir.file("none.mlpd") + ": cannot open: "));
  const CliRun nodir = run_cli(cli::cmd_diff, "diff", {a, a, "-o", dir.file("no/such/dir.folded")});
  CHECK(nodir.rc == 1);
  CHECK_THAT(nodir.err, contains("cannot write "));
}

TEST_CASE("diff: a file with problems is read as far as it goes, printed, and the status is 1", "[cli][diff]") {
  TempDir dir;
  const std::string a = dir.write("a.mlpd", samples_file(3, 1));
  std::vector<uint8_t> bytes = samples_file(2, 2);
  bytes.resize(bytes.size() - 3);  // cut inside the calls' buffer
  const std::string b = dir.write("b.mlpd", bytes);
  const std::string out = dir.file("d.folded");
  const CliRun r = run_cli(cli::cmd_diff, "diff", {a, b, "-o", out});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, contains(b + ": offset ") && contains("(buffer 1): "));
  CHECK(read_text(out) == "N:A ();N:B () 3 2\nN:A ();N:C (int) 1 2\n");
}

// ---- load.cpp: several files as one profile; follow.cpp: a file still being written ----

TEST_CASE("load_profiles: rotated files read as one profile - a missing one is an error", "[cli][load]") {
  TempDir dir;
  const std::string a = dir.write("a.mlpd", samples_file(3, 1));
  const std::string b = dir.write("b.mlpd", samples_file(1, 4));
  profile::Profile p;
  bool problems = true;
  CliRun r;
  {
    cli_run_detail::Capture err(2, stderr);
    CHECK(cli::load_profiles("test", {a, b}, p, nullptr, {}, problems));
    r.err = err.finish();
  }
  CHECK_FALSE(problems);
  CHECK(r.err.empty());
  CHECK(p.total(profile::What::cpu) == 9);
  profile::Profile q;
  {
    cli_run_detail::Capture err(2, stderr);
    CHECK_FALSE(cli::load_profiles("test", {a, dir.file("none.mlpd")}, q, nullptr, {}, problems));
    r.err = err.finish();
  }
  CHECK_THAT(r.err, contains("mlpd test: " + dir.file("none.mlpd") + ": cannot open: "));
}

namespace {

// A child process that stands for the agent writing a file: alive until killed.
struct FakeWriter {
  pid_t pid = -1;
  FakeWriter() {
    pid = ::fork();
    if (pid == 0) {
      for (;;) ::pause();
    }
  }
  void exit_now() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  ~FakeWriter() { exit_now(); }
};

std::vector<uint8_t> file_of_writer(pid_t pid, int ab, int ac) {
  FileHeader h = default_header();
  h.pid = pid;
  std::vector<Event> ev = {jit(kA, 0x10000, "N:A ()"), jit(kB, 0x20000, "N:B ()"), jit(kC, 0x30000, "N:C (int)")};
  uint64_t t = 100;
  for (int i = 0; i < ab; ++i) ev.push_back(hit(t += 1000, 0x99, {kB, kA}));
  for (int i = 0; i < ac; ++i) ev.push_back(hit(t += 1000, 0x99, {kC, kA}));
  return build_file(h, {{0x99, 0, ev}});
}

}  // namespace

TEST_CASE("load_profile_follow: waits at the end while the writer lives, then reads what it appended", "[cli][follow]") {
  TempDir dir;
  FakeWriter writer;
  REQUIRE(writer.pid > 0);
  const std::vector<uint8_t> bytes = file_of_writer(writer.pid, 5, 2);
  const size_t half = bytes.size() / 2;  // inside the buffer
  const std::string path = dir.write("a.mlpd", std::vector<uint8_t>(bytes.begin(), bytes.begin() + half));
  profile::Profile p;
  bool problems = true, loaded = false;
  std::thread reader([&] { loaded = cli::load_profile_follow("test", path, p, nullptr, {}, problems); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the reader waits at the cut
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(bytes.data() + half), static_cast<std::streamsize>(bytes.size() - half));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  writer.exit_now();
  reader.join();
  CHECK(loaded);
  CHECK_FALSE(problems);
  CHECK(p.total(profile::What::cpu) == 7);
}

TEST_CASE("load_profile_follow: a file cut by a writer that has exited is a problem, said once", "[cli][follow]") {
  TempDir dir;
  FakeWriter writer;
  REQUIRE(writer.pid > 0);
  const pid_t pid = writer.pid;
  writer.exit_now();
  const std::vector<uint8_t> bytes = file_of_writer(pid, 5, 2);
  const std::string path = dir.write("a.mlpd", std::vector<uint8_t>(bytes.begin(), bytes.end() - 4));
  profile::Profile p;
  bool problems = false;
  cli_run_detail::Capture err(2, stderr);
  CHECK(cli::load_profile_follow("test", path, p, nullptr, {}, problems));
  const std::string text = err.finish();
  CHECK(problems);
  CHECK_THAT(text, contains("mlpd test: " + path + ": the writer (pid " + std::to_string(pid) +
                            ") has exited and left the file incomplete"));
  std::string error;
  CHECK(cli::FollowInput::open(dir.file("none.mlpd"), 10, error) == nullptr);
  CHECK_FALSE(error.empty());
}
