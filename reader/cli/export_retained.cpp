// mlpd export --what retained [--heapshot I] [--depth D] -o OUT FILE: the dominator tree of a heapshot
// as a flame graph by retained bytes (docs/reports.md "Retained sizes"): the root that holds a subtree
// at the base, then its class path, each frame as wide as the bytes its objects retain.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "heapshots_retained.h"
#include "mlpd/heap_views.h"
#include "mlpd/retention.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

constexpr char kCmd[] = "export";

const char kHelp[] =
    "usage: mlpd export --what retained [--heapshot I] [--depth D] -o OUT FILE\n"
    "\n"
    "Draws the dominator tree of heapshot I of FILE (default: the last one) as a flame graph by\n"
    "retained bytes: at the base the GC root holding each subtree (KIND \"NAME\", as in\n"
    "'mlpd heapshots --dominators'), above it the subtree's class path, siblings of one class merged;\n"
    "each frame's width is the bytes its objects retain. --depth D: class levels (default 32).\n"
    "The format follows OUT's name: .html (the self-contained, searchable flame graph page),\n"
    ".pb.gz (pprof: sample type retained/bytes, for go tool pprof, Pyroscope, Parca) or .collapsed /\n"
    ".txt (collapsed stacks: 'root;Class;Class BYTES', one line per frame with bytes of its own).\n"
    "Exit status: 0 success, 1 FILE has problems or a heapshot is too large, 2 bad usage.\n";

int usage_error(const std::string& message) { return cli::usage_error("export --what retained", message); }

bool parse_number(const std::string& s, uint64_t& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// Writes `text` to `path`; false after saying why.
bool write_file(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) {
    std::fprintf(stderr, "mlpd %s: cannot write '%s': %s\n", kCmd, path.c_str(), std::strerror(errno));
    return false;
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  if (std::fclose(out) != 0 || !ok) {
    std::fprintf(stderr, "mlpd %s: cannot write '%s': %s\n", kCmd, path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

std::vector<Option> RetainedExportArgs::options() {
  return {
      {"--what", nullptr, nullptr,
       [](const std::string& v) { return v == "retained" ? std::string() : "--what retained does not go with another --what"; },
       true},
      {"--output", "-o", nullptr,
       [this](const std::string& v) { return v.empty() ? std::string("--output needs a file name") : (out_path = v, std::string()); },
       true},
      {"--heapshot", nullptr, nullptr,
       [this](const std::string& v) {
         if (!parse_number(v, heapshot)) return std::string("--heapshot needs a heapshot index (0, 1, ...)");
         have_heapshot = true;
         return std::string();
       },
       true},
      {"--depth", nullptr, nullptr,
       [this](const std::string& v) {
         return parse_number(v, depth) && depth > 0 ? std::string() : std::string("--depth needs a number of levels");
       },
       true},
  };
}

int cmd_export_retained(int argc, char** argv) {
  RetainedExportArgs args;
  std::vector<std::string> files;
  // The one parser (args.h); its usage lines name `--what retained --help`, this command's help.
  const int parsed = parse_command(argc, argv, "export --what retained", kHelp, args.options(), files);
  if (parsed >= 0) return parsed;
  const std::string& out_path = args.out_path;
  const uint64_t heapshot = args.heapshot, depth = args.depth;
  const bool have_heapshot = args.have_heapshot;
  std::string file;
  if (files.size() > 1) return usage_error("--what retained reads one FILE");
  const bool have_file = !files.empty();
  if (have_file) file = files[0];
  if (!have_file) return usage_error("no FILE");
  if (out_path.empty()) return usage_error("--what retained needs -o OUT (.html, .collapsed or .txt)");
  const bool html = ends_with(out_path, ".html") || ends_with(out_path, ".htm");
  const bool pprof = ends_with(out_path, ".pb.gz");
  if (!html && !pprof && !ends_with(out_path, ".collapsed") && !ends_with(out_path, ".txt"))
    return usage_error("--what retained writes .html, .pb.gz, .collapsed or .txt, not '" + out_path + "'");

  const uint32_t fold = static_cast<uint32_t>(std::min<uint64_t>(depth, 256));
  FileResult f = read_heapshots(kCmd, file, true, have_heapshot, heapshot, nullptr, false, fold);
  if (!f.opened) return 1;
  int status = f.problems ? 1 : 0;
  if (have_heapshot && heapshot >= f.heapshots) {
    std::fprintf(stderr, "mlpd %s: no heapshot %llu: '%s' has %zu\n", kCmd, static_cast<unsigned long long>(heapshot),
                 file.c_str(), f.heapshots);
    return 2;
  }
  if (!f.kept) {
    std::fprintf(stderr, "mlpd %s: '%s' has no heapshots (record with the heapshot option)\n", kCmd, file.c_str());
    return 2;
  }
  const views::Retention& r = f.kept->result();
  if (!r.error.empty()) {
    std::fprintf(stderr, "mlpd %s: %s\n", kCmd, r.error.c_str());
    return 1;
  }
  std::vector<views::CollapsedStack> kept = views::retained_stacks(r);
  std::string text;
  if (pprof) {
    std::FILE* out = std::fopen(out_path.c_str(), "wb");
    if (!out) {
      std::fprintf(stderr, "mlpd %s: cannot write '%s': %s\n", kCmd, out_path.c_str(), std::strerror(errno));
      return 1;
    }
    std::string error;
    const bool ok = views::write_retained_pprof(kept, out, error);
    if (std::fclose(out) != 0 || !ok) {
      std::fprintf(stderr, "mlpd %s: cannot write '%s': %s\n", kCmd, out_path.c_str(), ok ? std::strerror(errno) : error.c_str());
      return 1;
    }
    return status;
  }
  if (html) {
    views::FlameGraphInput in;
    in.title = "retained bytes, heapshot " + std::to_string(r.index) + " of " + file;
    in.unit = "bytes";
    in.stacks = std::move(kept);
    text = views::flame_graph_html(in);
  } else {
    text = views::retained_collapsed(kept);
  }
  if (!write_file(out_path, text)) return 1;
  return status;
}

}  // namespace mlpd::cli
