// mlpd report and mlpd export driven in-process (reader/cli/cmd_report.cpp, cmd_export.cpp): the
// command writes what the views write for the profile of the file, with its options passed on, and
// refuses what it must (usage errors, a --what the file lacks, an export above --max-output).
#include "mlpd_catch.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../../../reader/cli/commands.h"
#include "cli_run.h"
#include "event_gen.h"
#include "mlpd/input.h"
#include "mlpd/profile.h"
#include "mlpd/report.h"
#include "mlpd/views.h"
#include "temp_dir.h"

#if MLPD_HAVE_NLOHMANN_JSON
#include <nlohmann/json.hpp>
#endif

using namespace mlpd;
using namespace mlpd::test;
using mlpd_test::contains;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000, kC = 0x3000;

Event ev(EventKind k, uint64_t t, uint64_t method = 0) {
  Event e;
  e.kind = k;
  e.time = t;
  e.method = method;
  return e;
}

Event jit(uint64_t method, uint64_t code, const std::string& name) {
  Event e = ev(EventKind::method_jit, 1, method);
  e.ptr = code;
  e.size = 0x100;
  e.name = name;
  return e;
}

// Thread 0x99 ("Main"): samples A;B x3, A;C x1, 10 ms apart; thread 0x98 ("Worker"): A;B x2;
// thread 0x77 calls A [B] [C].
std::vector<uint8_t> file_bytes() {
  std::vector<Event> main_ev = {jit(kA, 0x10000, "N:A ()"), jit(kB, 0x20000, "N:B ()"),
                                jit(kC, 0x30000, "N:C (int)")};
  Event name = ev(EventKind::thread_name, 2);
  name.ptr = 0x99;
  name.name = "Main";
  main_ev.push_back(name);
  name.ptr = 0x98;
  name.name = "Worker";
  main_ev.push_back(name);
  auto hit = [](uint64_t t, uint64_t thread, uint64_t leaf) {
    Event h = ev(EventKind::sample_hit, t);
    h.ptr = thread;
    h.ips = {leaf == kB ? 0x20010u : 0x30010u};
    h.frames = {leaf, kA};
    return h;
  };
  uint64_t t = 1'000'000;
  for (int i = 0; i < 3; ++i) main_ev.push_back(hit(t += 10'000'000, 0x99, kB));
  main_ev.push_back(hit(t += 10'000'000, 0x99, kC));
  std::vector<Event> worker = {hit(5'000'000, 0x98, kB), hit(25'000'000, 0x98, kB)};
  std::vector<Event> calls = {ev(EventKind::method_enter, 1000, kA), ev(EventKind::method_enter, 1100, kB),
                              ev(EventKind::method_leave, 1400, kB), ev(EventKind::method_enter, 1500, kC),
                              ev(EventKind::method_leave, 1600, kC), ev(EventKind::method_leave, 2000, kA)};
  return build_file({{0x99, 0, main_ev}, {0x98, 0, worker}, {0x77, 0, calls}});
}

// What the views write for the file's profile.
profile::Profile built(const std::vector<uint8_t>& bytes, profile::Listener* listener = nullptr) {
  auto input = Input::from_memory(bytes.data(), bytes.size());
  profile::Profile p;
  profile::BuildOptions o;
  o.listener = listener;
  profile::build_profile(*input, p, o);
  return p;
}

std::string report_of(const profile::Profile& p, views::ReportOptions o) {
  std::FILE* f = std::tmpfile();
  std::string error;
  REQUIRE(views::write_report(p, o, f, error));
  std::rewind(f);
  std::string s;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

size_t files_in(const std::filesystem::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

// ---- mlpd report ----

TEST_CASE("report: the text, --top, --thread and --json are the views' for the file", "[cli][report]") {
  TempDir dir;
  const std::vector<uint8_t> bytes = file_bytes();
  const std::string path = dir.write("a.mlpd", bytes);
  const profile::Profile p = built(bytes);
  views::ReportOptions o;
  o.input_name = path;
  const CliRun text = run_cli(cli::cmd_report, "report", {path, "--jobs", "1"});
  CHECK(text.rc == 0);
  CHECK(text.err.empty());
  CHECK(text.out == report_of(p, o));
  CHECK_THAT(text.out, contains("N:B ()") && contains("N:C (int)"));

  o.top = 1;
  const CliRun top = run_cli(cli::cmd_report, "report", {"--top", "1", path});
  CHECK(top.rc == 0);
  CHECK(top.out == report_of(p, o));
  CHECK(top.out != text.out);

  o.top = 10;
  o.has_thread = true;
  o.thread = "Worker";
  const CliRun worker = run_cli(cli::cmd_report, "report", {"--thread", "Worker", path});
  CHECK(worker.rc == 0);
  CHECK(worker.out == report_of(p, o));
  CHECK(worker.out != text.out);

  o.has_thread = false;
  o.json = true;
  const CliRun json = run_cli(cli::cmd_report, "report", {"--json", path});
  CHECK(json.rc == 0);
  CHECK(json.out == report_of(p, o));
#if MLPD_HAVE_NLOHMANN_JSON
  CHECK_NOTHROW(nlohmann::json::parse(json.out));
#endif
}

TEST_CASE("report: --from/--to narrow the samples to the window", "[cli][report]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", file_bytes());
  // The samples at 11, 21, 31, 41 ms (Main) and 5, 25 ms (Worker): 0.020 s to 0.030 s holds Main's
  // second and Worker's second (21 and 25 ms).
  const CliRun all = run_cli(cli::cmd_report, "report", {"--json", path});
  const CliRun part = run_cli(cli::cmd_report, "report", {"--json", "--from", "0.020", "--to", "0.030", path});
  CHECK(all.rc == 0);
  CHECK(part.rc == 0);
#if MLPD_HAVE_NLOHMANN_JSON
  const auto a = nlohmann::json::parse(all.out), b = nlohmann::json::parse(part.out);
  CHECK(a["samples"]["total"] == 6);
  CHECK(b["samples"]["total"] == 2);
#else
  CHECK(all.out != part.out);
#endif
}

TEST_CASE("report: usage errors, an unknown thread, a missing file", "[cli][report]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", file_bytes());
  const CliRun none = run_cli(cli::cmd_report, "report", {});
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, contains("no FILE given"));
  const CliRun top = run_cli(cli::cmd_report, "report", {"--top", "0", path});
  CHECK(top.rc == 2);
  CHECK_THAT(top.err, contains("--top needs a positive number, not '0'"));
  const CliRun follow = run_cli(cli::cmd_report, "report", {"--follow", path, path});
  CHECK(follow.rc == 2);
  CHECK_THAT(follow.err, contains("--follow reads one FILE"));
  const CliRun thread = run_cli(cli::cmd_report, "report", {"--thread", "Nobody", path});
  CHECK(thread.rc == 2);
  CHECK_THAT(thread.err, contains("mlpd report: ") && contains("Nobody"));
  const CliRun missing = run_cli(cli::cmd_report, "report", {dir.file("none.mlpd")});
  CHECK(missing.rc == 1);
  CHECK_THAT(missing.err, contains("cannot open"));
}

// ---- mlpd export ----

TEST_CASE("export: the format from OUT's ending, the exporter's bytes, no partial file left", "[cli][export]") {
  TempDir dir;
  const std::vector<uint8_t> bytes = file_bytes();
  const std::string path = dir.write("a.mlpd", bytes);
  const std::string out = dir.file("a.collapsed");
  const CliRun r = run_cli(cli::cmd_export, "export", {path, "-o", out});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  // What the collapsed exporter writes for the same profile (cpu: the file has samples).
  views::ExportOptions eo;
  eo.what = profile::What::cpu;
  eo.what_given = true;
  eo.input_name = path;
  auto exporter = views::make_collapsed_exporter(eo);
  const profile::Profile p = built(bytes);
  std::FILE* f = std::tmpfile();
  std::string error;
  REQUIRE(exporter->write(p, f, error));
  std::rewind(f);
  std::string expected;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) expected.append(buf, n);
  std::fclose(f);
  CHECK(read_text(out) == expected);
  CHECK(expected == "N:A ();N:B () 5\nN:A ();N:C (int) 1\n");
  CHECK(files_in(dir.path) == 2);  // the input and the export: no .partial file

  // --what calls --threads to standard output: thread 0x77's calls by self ns.
  const CliRun calls = run_cli(cli::cmd_export, "export", {"--format", "collapsed", "--what", "calls", path});
  CHECK(calls.rc == 0);
  CHECK(calls.out == "N:A () 600\nN:A ();N:B () 300\nN:A ();N:C (int) 100\n");

  // pprof: gzip.
  const std::string pb = dir.file("a.pb.gz");
  CHECK(run_cli(cli::cmd_export, "export", {path, "-o", pb}).rc == 0);
  const std::string gz = read_text(pb);
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
}

TEST_CASE("export: usage errors and what the file lacks", "[cli][export]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", file_bytes());
  const CliRun none = run_cli(cli::cmd_export, "export", {"--format", "html"});
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, contains("no FILE given"));
  const CliRun fmt = run_cli(cli::cmd_export, "export", {"--format", "svg", path});
  CHECK(fmt.rc == 2);
  CHECK_THAT(fmt.err, contains("unknown --format 'svg' (collapsed, html, speedscope, trace, pprof, heatmap)"));
  const CliRun neither = run_cli(cli::cmd_export, "export", {path});
  CHECK(neither.rc == 2);
  CHECK_THAT(neither.err, contains("give --format F or -o OUT"));
  const CliRun ext = run_cli(cli::cmd_export, "export", {path, "-o", dir.file("a.txt")});
  CHECK(ext.rc == 2);
  CHECK_THAT(ext.err, contains("cannot tell the format from '" + dir.file("a.txt") + "'"));
  const CliRun alloc = run_cli(cli::cmd_export, "export", {"--what", "alloc", "--format", "collapsed", path});
  CHECK(alloc.rc == 2);
  CHECK_THAT(alloc.err, contains("mlpd export: " + path + ": "));
  const CliRun size = run_cli(cli::cmd_export, "export", {"--max-output", "lots", "--format", "collapsed", path});
  CHECK(size.rc == 2);
  CHECK_THAT(size.err, contains("bad --max-output 'lots'"));
  const CliRun nodir = run_cli(cli::cmd_export, "export", {path, "-o", dir.file("no/such/a.collapsed")});
  CHECK(nodir.rc == 1);
  CHECK_THAT(nodir.err, contains("cannot write "));
}

TEST_CASE("export: above --max-output nothing is written, and the formats that fit are named", "[cli][export]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", file_bytes());
  const std::string out = dir.file("a.html");
  const CliRun r = run_cli(cli::cmd_export, "export", {"--max-output", "1K", path, "-o", out});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, contains("mlpd export: " + path + ": the html export would be about ") &&
                        contains("above --max-output 1 KiB") && contains("nothing written; formats that fit: collapsed"));
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK(files_in(dir.path) == 1);
}
