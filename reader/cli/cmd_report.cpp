// mlpd report [--json] [--top N] [--thread NAME|ID] FILE
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "load.h"
#include "window.h"
#include "mlpd/heap_views.h"
#include "mlpd/report.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd report [--json] [--top N] [--thread NAME|ID] [--from T] [--to T] [--follow] [--jobs N]\n"
    "                   FILE...\n"
    "\n"
    "One screen that says where the time and the memory went in FILE (plain or gzip; - reads standard\n"
    "input), from one pass over its events. Sections appear only when the file has their events:\n"
    "  header       program, pid, start, duration, the profiler options\n"
    "  recorded     the intervals recorded, when the mlpd agent was paused and resumed (or\n"
    "               started paused: start-paused)\n"
    "  samples      CPU samples by method: self and total (inclusive) hits and percentages, managed,\n"
    "               native and runtime frames (from the 'sample' option)\n"
    "  calls        methods by inclusive and self time and by calls, and the hot path of the call tree\n"
    "               (from 'calls'; recursion counted once; calls still open at the end close there)\n"
    "  alloc        allocations by type and by allocation site, the innermost frame of the backtrace\n"
    "               (or of the call stack with 'calls'); with the agent's alloc-sample=BYTES the\n"
    "               numbers are estimates scaled up from the samples (said in the section's title)\n"
    "  exceptions   throws by type and by throw site, clauses run\n"
    "  monitor      monitor contentions by site, time waited\n"
    "  gc           collections per generation, pause count/total/p50/p99/max (START..END)\n"
    "  jit          methods compiled, code size, helpers\n"
    "  counters     last value of each counter\n"
    "  cpu threads  CPU time by thread (user, system), from the agent's per-thread CPU counters\n"
    "  heapshots    objects and bytes per heapshot ('mlpd heapshots' lists them by class)\n"
    "A method never described by the file is shown as [unknown method 0x...], its weight kept.\n"
    "\n"
    "  --top N             lines per ranking (default 10)\n"
    "  --thread NAME|ID    only what this thread did (samples, calls, allocations, throws, monitor);\n"
    "                      a thread name or id (decimal or 0x hex)\n"
    "  --from T, --to T    only what happened from T (inclusive) to T (exclusive): samples,\n"
    "                      allocations, throws, monitor events, collections by their time, calls\n"
    "                      by the time they returned. T is seconds from the start (what 'mlpd dump'\n"
    "                      prints as +SECONDS: 90, 1.5) or a time of day HH:MM:SS[.fff] (local time)\n"
    "  --follow            FILE is being written by a running program (profiled with flush=MS):\n"
    "                      read it as it grows and print the report once the program has exited\n"
    "                      (the pid in FILE's header) and everything it wrote is read\n"
    "  --jobs N, -j N      build the profile on N threads (default: one per core; 1: one thread); the\n"
    "                      report is the same whatever N\n"
    "  FILE...             several files of one run (rotated files) are read in order as one profile\n"
    "  --json              one JSON object with the keys header, recorded, samples, calls, alloc,\n"
    "                      exceptions, monitor, gc, jit, counters, cpu_threads, heapshots (present\n"
    "                      when the file has them; alloc.estimated with alloc-sample), held_by (the\n"
    "                      last heapshot's classes by retained size, each with its root);\n"
    "                      totals are integers: samples.total, calls.total, alloc.objects, alloc.bytes,\n"
    "                      exceptions.throws; every ranking is a list of objects with a \"name\"\n"
    "\n"
    "Problems in FILE go to standard error, spelled as in 'mlpd verify', and the report shows what\n"
    "could be read. Exit status: 0 success, 1 FILE has problems or cannot be read, 2 bad usage.\n";

int usage_error(const std::string& m) { return cli::usage_error("report", m); }

}  // namespace

int cmd_report(int argc, char** argv) {
  views::ReportOptions o;
  std::vector<std::string> files;
  profile::BuildOptions window;
  window.jobs = default_jobs();
  bool follow = false;
  const int rc = parse_command(
      argc, argv, "report", kHelp,
      {{"--follow", nullptr, &follow},
       {"--json", nullptr, &o.json},
       {"--top", nullptr, nullptr,
        [&](const std::string& v) {
          size_t n = 0;
          const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
          if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n == 0)
            return "--top needs a positive number, not '" + v + "'";
          o.top = n;
          return std::string();
        }},
       {"--thread", nullptr, nullptr,
        [&](const std::string& v) {
          o.has_thread = true;
          o.thread = v;
          return std::string();
        }},
       window_option("--from", window.from), window_option("--to", window.to), jobs_option(window.jobs)},
      files);
  if (rc >= 0) return rc;
  if (files.empty()) return usage_error("no FILE given");
  const std::string file = files[0];
  o.input_name = file;
  profile::Profile p;
  bool problems = false;
  if (follow && files.size() != 1) return usage_error("--follow reads one FILE");
  // The last heapshot's "Held by" section: its graph built from the events of the profile's own pass
  // (the build's tap), analysed once the file is read. For one named file, without --thread or
  // --follow, as ever.
  views::HeldByTap held_by;
  if (!o.has_thread && !follow && files.size() == 1 && file != "-") window.tap = &held_by;
  if (follow ? !load_profile_follow("report", file, p, nullptr, window, problems)
             : !load_profiles("report", files, p, nullptr, window, problems))
    return 1;
  std::string error;
  views::report::Report report;
  if (!views::report::build_report(p, o, report, error)) {
    std::fprintf(stderr, "mlpd report: %s\n", error.c_str());
    return o.has_thread ? 2 : 1;
  }
  if (window.tap && !p.heapshots().empty()) report.held_by = held_by.section(o.top);
  const std::string out = o.json ? views::report::render_json(report) : views::report::render_text(report);
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) {
    std::fprintf(stderr, "mlpd report: write error\n");
    return 1;
  }
  if (std::fflush(stdout) != 0) {
    std::fprintf(stderr, "mlpd report: write error\n");
    return 1;
  }
  return problems ? 1 : 0;
}

}  // namespace mlpd::cli
