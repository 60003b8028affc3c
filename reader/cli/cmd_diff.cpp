// mlpd diff [--what W] [--threads] [-o OUT.html|OUT.collapsed] A B
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"
#include "load.h"
#include "window.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd diff [--what W] [--threads] [--managed] [--jobs N] [-o OUT] A B\n"
    "\n"
    "A differential flame graph: how the stacks of profile B (after) differ from those of profile A\n"
    "(before), for one --what (as in 'mlpd export'; the default: cpu when both files have samples,\n"
    "else the first of calls, alloc, exceptions, monitor that both have). Stacks are matched by\n"
    "their frame names.\n"
    "\n"
    "  -o OUT.html       an interactive flame graph, frame widths from B (or from A, scaled to B's\n"
    "                    total, for what shrank or vanished), red where B grew, blue where it shrank,\n"
    "                    relative to A scaled to B's total; tooltips give both values\n"
    "  -o OUT.collapsed  (or .folded, or no -o: standard output) lines 'frame;...;leaf A_COUNT B_COUNT',\n"
    "                    the input of FlameGraph's 'flamegraph.pl' for differential graphs\n"
    "  --what W          cpu, alloc, alloc-bytes, calls, exceptions, monitor\n"
    "  --threads         one root per thread, matched by name (a thread without a name: by id)\n"
    "  --managed         the program's managed frames only (no native frames, no runtime wrappers):\n"
    "                    one program profiled on Mono and on .NET lines up by its own methods\n"
    "                    (a frame equal to its caller's is kept once: .NET's OSR bodies, recursion)\n"
    "  --jobs N, -j N    read each file on N threads (default: one per core; 1: one thread)\n"
    "\n"
    "Exit status: 0 success, 1 a file has problems or cannot be read, 2 bad usage.\n";

int usage_error(const std::string& m) { return cli::usage_error("diff", m); }

bool ends_with(const std::string& s, const char* e) {
  const size_t n = std::strlen(e);
  return s.size() >= n && s.compare(s.size() - n, n, e) == 0;
}

}  // namespace

int cmd_diff(int argc, char** argv) {
  profile::What what = profile::What::cpu;
  bool what_given = false, threads = false, managed = false;
  std::string out_path;
  std::vector<std::string> files;
  unsigned jobs = default_jobs();
  const int rc = parse_command(argc, argv, "diff", kHelp,
                               {{"--threads", nullptr, &threads},
                                {"--managed", nullptr, &managed},
                                what_option(what, what_given),
                                {"--output", "-o", nullptr, [&](const std::string& v) {
                                   out_path = v;
                                   return std::string();
                                 }},
                                jobs_option(jobs)},
                               files);
  if (rc >= 0) return rc;
  if (files.size() != 2) return usage_error("give two files, A and B");
  bool html = false;
  if (!out_path.empty() && out_path != "-") {
    if (ends_with(out_path, ".html") || ends_with(out_path, ".htm"))
      html = true;
    else if (!ends_with(out_path, ".collapsed") && !ends_with(out_path, ".folded"))
      return usage_error("OUT must end in .html, .collapsed or .folded");
  }
  profile::Profile a, b;
  bool pa = false, pb = false;
  if (!load_profile("diff", files[0], a, nullptr, pa, jobs) || !load_profile("diff", files[1], b, nullptr, pb, jobs))
    return 1;
  if (!what_given) {
    for (profile::What w : {profile::What::cpu, profile::What::calls, profile::What::alloc, profile::What::exceptions,
                            profile::What::monitor}) {
      if (a.total(w) && b.total(w)) {
        what = w;
        break;
      }
    }
  }
  for (size_t k = 0; k < 2; ++k) {
    const std::string m = views::missing_what_error(k ? b : a, what);
    if (!m.empty()) {
      std::fprintf(stderr, "mlpd diff: %s: %s\n", files[k].c_str(), m.c_str());
      return 2;
    }
  }
  views::DiffOptions d;
  d.what = what;
  d.threads = threads;
  d.managed = managed;
  d.name_a = files[0];
  d.name_b = files[1];
  const views::FlameGraphInput in = views::diff_stacks(a, b, d);
  const std::string text = html ? views::flame_graph_html(in) : views::diff_collapsed_text(in);
  std::FILE* out = stdout;
  if (!out_path.empty() && out_path != "-") {
    out = std::fopen(out_path.c_str(), "wb");
    if (!out) {
      std::fprintf(stderr, "mlpd diff: cannot write %s: %s\n", out_path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  ok = (out == stdout ? std::fflush(out) == 0 : std::fclose(out) == 0) && ok;
  if (!ok) {
    std::fprintf(stderr, "mlpd diff: write error\n");
    return 1;
  }
  return pa || pb ? 1 : 0;
}

}  // namespace mlpd::cli
