// mlpd export [--format F] [--what W] [--threads] [-o OUT] FILE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "commands.h"
#include "heapshots_retained.h"
#include "load.h"
#include "window.h"
#include "mlpd/budget.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

// The exporters. Adding one: a file in reader/views/ with its factory (declared in mlpd/views.h)
// and one row here.
struct ExporterEntry {
  const char* name;        // --format value
  const char* extensions;  // OUT endings that select it, space-separated, longest match wins
  const char* summary;
  std::unique_ptr<views::Exporter> (*make)(const views::ExportOptions&);
};

constexpr ExporterEntry kExporters[] = {
    {"collapsed", ".collapsed .folded", "frame;frame;leaf COUNT lines (FlameGraph's flamegraph.pl, inferno)",
     views::make_collapsed_exporter},
    {"html", ".html .htm", "self-contained interactive flame graph (one file, no network)",
     views::make_html_exporter},
    {"speedscope", ".speedscope.json", "speedscope's JSON (sampled; evented per thread for --what calls)",
     views::make_speedscope_exporter},
    {"trace", ".trace.json", "Chrome Trace Event JSON (Perfetto UI, chrome://tracing): spans, GC, samples",
     views::make_trace_exporter},
    {"pprof", ".pb.gz .pprof", "pprof's profile.proto, gzipped (go tool pprof, Pyroscope, Parca)",
     views::make_pprof_exporter},
    {"heatmap", ".heatmap.html", "FlameScope-style heat map of samples (or allocations) per 20 ms, flame graph of a range",
     views::make_heatmap_exporter},
};

std::string help_text() {
  std::string h =
      "usage: mlpd export [--format F] [--what W] [--threads] [--from T] [--to T] [--jobs N] [-o OUT]\n"
      "                   FILE...\n"
      "\n"
      "Writes the profile in FILE (plain or gzip; - reads standard input) in a format other tools\n"
      "read. The format is --format F, else taken from OUT's ending:\n";
  for (const ExporterEntry& e : kExporters) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-11s %-28s %s\n", e.name, e.extensions, e.summary);
    h += line;
  }
  h +=
      "\n"
      "  --what W    what the stacks are weighted by:\n"
      "                cpu          CPU sample hits (profiler option 'sample'; the default when the\n"
      "                             file has samples, else the first of calls, alloc, exceptions,\n"
      "                             monitor that it has)\n"
      "                alloc        allocated objects ('alloc'), alloc-bytes: allocated bytes\n"
      "                             (estimates scaled up from the samples with alloc-sample=BYTES)\n"
      "                calls        self time in nanoseconds, from method enter/leave ('calls')\n"
      "                exceptions   throws ('exception'), monitor: monitor contentions ('monitor')\n"
      "                retained     bytes retained, the dominator tree of a heapshot as a flame graph\n"
      "                             (.html, .pb.gz, .collapsed: 'mlpd export --what retained --help')\n"
      "              asking for what the file does not have is an error naming the option to use\n"
      "  --threads   one root per thread (the thread's name and id as the outermost frame)\n"
      "  --from T, --to T  only the events from T to T (as in 'mlpd report --help'): seconds from\n"
      "              the start or a time of day HH:MM:SS; several FILEs of one run are read as one\n"
      "  --jobs N, -j N  build the profile on N threads (default: one per core; 1: one thread); the\n"
      "              output is the same whatever N (the timelines of --format trace and speedscope\n"
      "              --what calls need the events in file order: one thread)\n"
      "  -o OUT      write to OUT (default: standard output, which needs --format); OUT is written\n"
      "              under a temporary name in its directory and renamed when complete, so an export\n"
      "              that fails leaves no partial file\n"
      "  --max-output SIZE  the most the export may write (default 2G; 512M, 10G, 0 = no limit): an\n"
      "              output estimated above it is refused before anything is written, with the\n"
      "              formats that fit named (a --what calls timeline can be tens of times the file)\n"
      "\n"
      "Exit status: 0 success, 1 FILE has problems (reported on standard error; what could be read\n"
      "is exported) or cannot be read or written, 2 bad usage (including a --what the file lacks).\n";
  return h;
}

int usage_error(const std::string& m) { return cli::usage_error("export", m); }

constexpr uint64_t kDefaultMaxOutput = uint64_t{2} << 30;

std::string size_h(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1 << 30));
  else if (b >= (1u << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.0f KiB", static_cast<double>(b) / 1024);
  return buf;
}

// Bytes written through a stdio stream, failing (EFBIG) past a limit: whatever an estimate missed,
// the export stops at the limit instead of filling the disk.
struct Capped {
  std::FILE* to;
  uint64_t limit, written;
  bool over;
};

ssize_t capped_write(void* cookie, const char* data, size_t n) {
  auto* c = static_cast<Capped*>(cookie);
  if (c->limit && c->written + n > c->limit) {
    c->over = true;
    errno = EFBIG;
    return -1;
  }
  const size_t w = std::fwrite(data, 1, n, c->to);
  c->written += w;
  if (w != n) return -1;
  return static_cast<ssize_t>(n);
}

const ExporterEntry* by_name(std::string_view name) {
  for (const ExporterEntry& e : kExporters)
    if (name == e.name) return &e;
  return nullptr;
}

const ExporterEntry* by_extension(std::string_view out) {
  const ExporterEntry* best = nullptr;
  size_t best_len = 0;
  for (const ExporterEntry& e : kExporters) {
    std::string_view exts = e.extensions;
    while (!exts.empty()) {
      const size_t sp = exts.find(' ');
      const std::string_view ext = exts.substr(0, sp);
      if (out.size() > ext.size() && out.substr(out.size() - ext.size()) == ext && ext.size() > best_len) {
        best = &e;
        best_len = ext.size();
      }
      exts = sp == std::string_view::npos ? std::string_view{} : exts.substr(sp + 1);
    }
  }
  return best;
}

// The exporter --format names, else the one OUT's ending names; null with the usage error in `why`.
const ExporterEntry* choose_exporter(const std::string& format, const std::string& out_path, std::string& why) {
  if (!format.empty()) {
    if (const ExporterEntry* e = by_name(format)) return e;
    std::string names;
    for (const ExporterEntry& e : kExporters) names += (names.empty() ? "" : ", ") + std::string(e.name);
    why = "unknown --format '" + format + "' (" + names + ")";
    return nullptr;
  }
  if (out_path.empty()) {
    why = "give --format F or -o OUT";
    return nullptr;
  }
  if (const ExporterEntry* e = by_extension(out_path)) return e;
  why = "cannot tell the format from '" + out_path + "'; give --format";
  return nullptr;
}

// The refusal of an export estimated above --max-output: what it would be, and the formats that fit.
void refuse_too_large(const std::string& file, const ExporterEntry* entry, const views::ExportOptions& o,
                      profile::What what, const profile::Profile& p, uint64_t estimate, uint64_t max_output) {
  std::string fit;
  for (const ExporterEntry& e : kExporters) {
    if (&e == entry) continue;
    views::ExportOptions eo = o;
    eo.what = what;
    eo.what_given = true;
    auto other = e.make(eo);
    if (other->listener()) continue;  // needs the events of the pass: not estimated here
    const uint64_t size = other->estimate(p);
    if (size <= max_output) fit += (fit.empty() ? "" : ", ") + std::string(e.name) + " (about " + size_h(size) + ")";
  }
  std::fprintf(stderr,
               "mlpd export: %s: the %s export would be about %s, above --max-output %s: nothing written; %s%s\n",
               file.c_str(), entry->name, size_h(estimate).c_str(), size_h(max_output).c_str(),
               fit.empty() ? "no other format fits either; " : ("formats that fit: " + fit + "; ").c_str(),
               "--max-output SIZE raises the limit, --from/--to narrow the time");
}

// Where the export goes: standard output; a special file (/dev/null, a FIFO, a terminal) written in
// place (renaming over it would replace it); else a temporary name in OUT's directory, renamed to OUT
// once complete and removed on any failure.
struct OutputTarget {
  std::FILE* file = stdout;
  std::string path, tmp_path;
  bool special = false;

  bool open(const std::string& out_path) {
    path = out_path;
    if (out_path.empty() || out_path == "-") return true;
    struct stat existing{};
    special = ::stat(out_path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode);
    if (special) {
      file = std::fopen(out_path.c_str(), "wb");
      if (!file) return cannot_write();
      return true;
    }
    const size_t slash = out_path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? std::string() : out_path.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? out_path : out_path.substr(slash + 1);
    tmp_path = dir + "." + base + ".partial-XXXXXX";
    const int fd = ::mkostemp(tmp_path.data(), O_CLOEXEC);
    if (fd < 0 || !(file = ::fdopen(fd, "wb"))) {
      file = nullptr;
      const int saved = errno;
      if (fd >= 0) {
        ::close(fd);
        ::unlink(tmp_path.c_str());
      }
      errno = saved;
      return cannot_write();
    }
    ::fchmod(fd, 0666 & ~[] { const mode_t m = ::umask(0); ::umask(m); return m; }());
    return true;
  }
  bool cannot_write() const {
    std::fprintf(stderr, "mlpd export: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  // Flushed and closed (a file renamed into place when `ok`, removed when not); `ok` and `error` updated.
  void close(bool& ok, std::string& error) {
    if (file == stdout) {
      if (std::fflush(stdout) != 0 && ok) {
        ok = false;
        error = "write error";
      }
      return;
    }
    if (std::fflush(file) != 0 || std::fclose(file) != 0) {
      if (ok) error = std::string("write error: ") + std::strerror(errno);
      ok = false;
    }
    if (!special && ok && std::rename(tmp_path.c_str(), path.c_str()) != 0) {
      error = "cannot rename " + tmp_path + " to " + path + ": " + std::strerror(errno);
      ok = false;
    }
    if (!special && !ok) ::unlink(tmp_path.c_str());
  }
};

// What a profile's export takes (help_text()); its options fill these.
struct ProfileExportArgs {
  views::ExportOptions o;
  profile::BuildOptions window;
  std::string out_path, format;
  uint64_t max_output = kDefaultMaxOutput;

  ProfileExportArgs() { window.jobs = default_jobs(); }
  std::vector<Option> options() {
    auto value = [](std::string& to) {
      return [&to](const std::string& v) {
        to = v;
        return std::string();
      };
    };
    return {{"--threads", nullptr, &o.threads},
            {"--format", nullptr, nullptr, value(format)},
            what_option(o.what, o.what_given),
            {"--output", "-o", nullptr, value(out_path)},
            {"--max-output", nullptr, nullptr,
             [this](const std::string& v) {
               return parse_size(v, max_output) ? std::string()
                                                : "bad --max-output '" + v + "': expected a size such as 512M or 2G";
             },
             true},
            window_option("--from", window.from), window_option("--to", window.to), jobs_option(window.jobs)};
  }
};

// Which export the arguments ask for, as the one parser reads them (a survey: every option of both
// exports known with its value, none acted on; --help and unknown options passed over): --what retained or --what=retained is a
// heapshot's dominator tree (export_retained.cpp), anything else a profile's. Then the export asked
// for parses them for real, with its own options, messages and help.
bool asks_retained(int argc, char** argv) {
  ProfileExportArgs profile_args;
  RetainedExportArgs retained_args;
  std::vector<Option> all = profile_args.options();
  for (const Option& r : retained_args.options()) {
    auto same = std::find_if(all.begin(), all.end(), [&r](const Option& o) { return std::string_view(o.name) == r.name; });
    if (same == all.end())
      all.push_back(r);
    else
      same->joined = same->joined || r.joined;
  }
  bool retained = false;
  for (Option& o : all) {
    if (o.flag) continue;
    const bool what = std::string_view(o.name) == "--what";
    o.take = [what, &retained](const std::string& v) {
      retained = retained || (what && v == "retained");
      return std::string();
    };
    o.missing_empty = true;
  }
  std::vector<std::string> files;
  walk_arguments(argc, argv, all, files, true);
  return retained;
}

}  // namespace

int cmd_export(int argc, char** argv) {
  if (asks_retained(argc, argv)) return cmd_export_retained(argc, argv);
  ProfileExportArgs args;
  std::vector<std::string> files;
  const int rc = parse_command(argc, argv, "export", help_text(), args.options(), files);
  if (rc >= 0) return rc;
  views::ExportOptions& o = args.o;
  profile::BuildOptions& window = args.window;
  const std::string& out_path = args.out_path;
  const std::string& format = args.format;
  const uint64_t max_output = args.max_output;
  if (files.empty()) return usage_error("no FILE given");
  const std::string file = files[0];
  std::string why;
  const ExporterEntry* entry = choose_exporter(format, out_path, why);
  if (!entry) return usage_error(why);
  o.input_name = file;
  std::unique_ptr<views::Exporter> exporter = entry->make(o);
  profile::Profile p;
  bool problems = false;
  if (!load_profiles("export", files, p, exporter->listener(), window, problems)) return 1;
  const profile::What what = views::effective_what(p, o);
  if (const std::string m = views::missing_what_error(p, what); !m.empty()) {
    std::fprintf(stderr, "mlpd export: %s: %s\n", file.c_str(), m.c_str());
    return 2;
  }
  if (!exporter->listener() && (!o.what_given || o.what != what)) {  // now that the file is known
    o.what = what;
    o.what_given = true;
    exporter = entry->make(o);
  }
  // The size, before anything is written.
  const uint64_t estimate = exporter->estimate(p);
  if (max_output && estimate > max_output) {
    refuse_too_large(file, entry, o, what, p, estimate, max_output);
    return 1;
  }
  OutputTarget target;
  if (!target.open(out_path)) return 1;
  Capped cap{target.file, max_output, 0, false};
  std::FILE* out = ::fopencookie(&cap, "wb", cookie_io_functions_t{nullptr, capped_write, nullptr, nullptr});
  std::string error;
  bool ok = out != nullptr;
  if (!ok) error = std::string("cannot set up the output: ") + std::strerror(errno);
  if (ok) ok = exporter->write(p, out, error);
  if (out && std::fclose(out) != 0 && ok) {
    ok = false;
    error = "write error";
  }
  if (cap.over) {
    ok = false;
    error = "the output reached --max-output " + size_h(max_output) + " (estimated " + size_h(estimate) +
            "): stopped" + (target.file != stdout ? ", nothing kept" : "") + "; --max-output SIZE raises the limit";
  }
  target.close(ok, error);
  if (!ok) {
    std::fprintf(stderr, "mlpd export: %s\n", error.c_str());
    return 1;
  }
  return problems ? 1 : 0;
}

}  // namespace mlpd::cli
