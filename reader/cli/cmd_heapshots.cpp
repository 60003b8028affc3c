// mlpd heapshots [--json] [--top N] [--diff A B [--all]] FILE [FILE2]
// and the retention views (heapshots_retained.cpp): --retained, --dominators, --paths, --suspects;
// the output rendered by the heap views (mlpd/heap_views.h)
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "commands.h"
#include "heapshots_retained.h"
#include "mlpd/budget.h"
#include "mlpd/decoder.h"
#include "mlpd/heap/heapshots.h"
#include "mlpd/heap_views.h"
#include "out_buffer.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd heapshots [--json] [--top N] [--jobs N] FILE\n"
    "       mlpd heapshots --diff A B [--all] [--json] [--top N] [--jobs N] FILE [FILE2]\n"
    "       mlpd heapshots --retained [--heapshot I] [--top N] [--json] FILE\n"
    "       mlpd heapshots --dominators [--heapshot I] [--depth D] [--min-bytes B] [--top N] [--json] FILE\n"
    "       mlpd heapshots --paths CLASS [--heapshot I] [--max K] [--json] FILE\n"
    "       mlpd heapshots --diff A B --retained [--top N] [--json] FILE [FILE2]\n"
    "       mlpd heapshots --suspects [--top N] [--json] FILE\n"
    "\n"
    "Lists the heapshots in FILE (plain or gzip; - reads standard input), as mprof-report counts them:\n"
    "a heapshot is what one thread writes between heap_start and heap_end; its objects are the\n"
    "heap_object events with a size (continuation chunks of big objects carry none), grouped by class\n"
    "through their vtable. Per heapshot, a header line then one line per class, most bytes first:\n"
    "  heapshot INDEX at SECONDS s: N objects, B bytes, C classes, R roots\n"
    "        BYTES    OBJECTS  CLASS\n"
    "SECONDS counts from the first buffer's time_base (mprof-report's \"at X secs\"); R is the number of\n"
    "GC roots reported during the heapshot. A file without heapshots prints 'FILE: no heapshots'.\n"
    "\n"
    "  --diff A B  what changed from heapshot A to heapshot B (0-based indices): one line per class\n"
    "              whose objects or bytes changed, largest byte growth first, then a totals line:\n"
    "                      +BYTES   +OBJECTS  CLASS\n"
    "                total: +BYTES bytes, +OBJECTS objects (FROM -> TO bytes, FROM -> TO objects)\n"
    "              With FILE2, A is a heapshot of FILE and B one of FILE2 (say, two runs of a\n"
    "              program); classes are then matched by name instead of by class address.\n"
    "  --all       with --diff, also list the classes that did not change\n"
    "  --top N     print at most N class lines per heapshot (default: all)\n"
    "  --jobs N, -j N  read the file on N threads (default: one per core; 1: one thread); the result\n"
    "              is the same whatever N (not for the views below, which read on one thread)\n"
    "  --json      JSON Lines instead: one object per heapshot\n"
    "              {\"index\",\"time\",\"objects\",\"bytes\",\"roots\",\"complete\",\"class_count\",\n"
    "               \"classes\":[{\"name\",\"objects\",\"bytes\"}]}\n"
    "              or, with --diff, one object {\"from\",\"to\",\"objects\",\"bytes\",\n"
    "               \"classes\":[{\"name\",\"objects\",\"bytes\"}]} holding the deltas (B minus A)\n"
    "\n"
    "Why memory is held (docs/reports.md, \"Retained sizes\"): the dominator tree of one heapshot's object\n"
    "graph, under a virtual root pointing to every object a GC root of that heapshot holds. An object's\n"
    "retained size is the bytes of the objects it dominates (itself included); a class's is the sum over\n"
    "its instances with no instance of the class above them in the tree (Eclipse MAT's figure).\n"
    "  --retained         per class, most retained first (of the last heapshot, or --heapshot I):\n"
    "                       RETAINED    OBJECTS     SHALLOW  CLASS\n"
    "                     JSON: {\"index\",\"time\",\"objects\",\"bytes\",\"unreached\":{\"objects\",\"bytes\"},\n"
    "                      \"classes\":[{\"name\",\"objects\",\"shallow\",\"retained\"}]}\n"
    "  --dominators       the dominator tree's biggest subtrees folded by class path, each top-level\n"
    "                     one with the GC root holding it (KIND \"NAME\" -> Class); --depth D levels\n"
    "                     (default 4), subtrees of at least --min-bytes B (default 1% of the heapshot),\n"
    "                     --top N top-level subtrees (default 20). JSON: {\"index\",\"time\",\"objects\",\n"
    "                      \"bytes\",\"unreached\",\"subtrees\":[{\"root\":{\"kind\",\"name\"},\"class\",\n"
    "                      \"instances\",\"objects\",\"retained\",\"children\":[...]}]}\n"
    "  --paths CLASS      for the --max K (default 5) instances of CLASS retaining most, the shortest\n"
    "                     path from a GC root: root KIND \"NAME\" -> Class -> Class (+OFFSET) -> ... -> CLASS\n"
    "                     (+OFFSET: the field's offset in the object before). JSON: {\"class\",\"paths\":\n"
    "                      [{\"retained\",\"root\":{\"kind\",\"name\"},\"length\",\"steps\":[{\"class\",\"offset\"}]}]}\n"
    "  --diff A B --retained  growth of retained bytes from heapshot A to B (of FILE, or of FILE and\n"
    "                     FILE2), by class and by dominator subtree (root > class path), most first\n"
    "  --suspects         over 3 heapshots or more, the dominator subtrees whose retained bytes never\n"
    "                     shrank from one heapshot to the next and grew at more than half of the steps\n"
    "  --heapshot I       the heapshot to analyse (default: the last one)\n"
    "KIND is the registered root source: static, stack, gc_handle, finalizer_queue, thread_static,\n"
    "handle, domain, ... (unknown: a slot in no registered range; several: held through more than one\n"
    "root). A thread's stack slot that holds an object a lasting root (static, GC handle, ...) reaches\n"
    "too is a transient copy and does not count: the lasting root holds it. Objects no root reaches are\n"
    "counted as unreached. A heapshot too large for the memory budget (--max-memory) is refused with a\n"
    "message (exit 1).\n"
    "\n"
    "Problems in FILE go to standard error, spelled as in 'mlpd verify':\n"
    "  FILE: offset N (buffer K): what is wrong\n"
    "and what could be read is still listed. Exit status: 0 on success, 1 when FILE has problems or\n"
    "cannot be read, 2 for bad usage (including a heapshot index that is not in FILE).\n";

constexpr char kCmd[] = "heapshots";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "mlpd %s: %s (try 'mlpd %s --help')\n", kCmd, message.c_str(), kCmd);
  return 2;
}

bool parse_index(const char* s, uint64_t& out) {
  const char* end = s + std::strlen(s);
  if (s == end || *s < '0' || *s > '9') return false;
  const auto r = std::from_chars(s, end, out);
  return r.ec == std::errc() && r.ptr == end;
}

std::string where(const Problem& p) {
  std::string s = "offset " + std::to_string(p.offset);
  s += p.buffer < 0 ? " (header)" : " (buffer " + std::to_string(p.buffer) + ")";
  return s;
}

}  // namespace

// Each file's heapshots (the problems met printed); false when a file cannot be opened (said).
bool collect_heapshots(const std::vector<std::string>& files, unsigned jobs, HeapshotCollector* collectors, int& status) {
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string& path = files[f];
    struct stat st {};
    if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "mlpd %s: cannot open '%s': %s\n", kCmd, path.c_str(), std::strerror(EISDIR));
      return false;
    }
    std::string open_error;
    std::unique_ptr<Input> input = Input::open(path, open_error);
    if (!input) {
      std::fprintf(stderr, "mlpd %s: cannot open '%s': %s\n", kCmd, path.c_str(), open_error.c_str());
      return false;
    }
    HeapshotCollector& collector = collectors[f];
    decode_heapshots(*input, collector, read_options(), jobs);
    collector.finish();
    for (const Problem& p : collector.problems())
      std::fprintf(stderr, "%s: %s: %s\n", path.c_str(), where(p).c_str(), p.message.c_str());
    if (!collector.problems().empty()) status = 1;
  }
  return true;
}

// --diff A B: both heapshots exist (A in the first file, B in the second when there are two); false
// after saying which does not.
bool diff_indices_ok(const std::vector<std::string>& files, const HeapshotCollector* collectors, uint64_t from,
                     uint64_t to) {
  const bool two_files = files.size() == 2;
  for (const size_t which : {0, 1}) {
    const uint64_t ix = which ? to : from;
    const size_t f = two_files ? which : 0;
    const std::vector<HeapshotSummary>& in = collectors[f].heapshots();
    if (ix < in.size()) continue;
    if (in.empty())
      std::fprintf(stderr, "mlpd %s: no heapshot %llu: '%s' has no heapshots\n", kCmd,
                   static_cast<unsigned long long>(ix), files[f].c_str());
    else
      std::fprintf(stderr, "mlpd %s: no heapshot %llu: '%s' has %zu (0..%zu)\n", kCmd,
                   static_cast<unsigned long long>(ix), files[f].c_str(), in.size(), in.size() - 1);
    return false;
  }
  return true;
}

// What `mlpd heapshots` takes (its options fill these).
struct HeapshotsArgs {
  bool diff = false, have_top = false;
  uint64_t diff_from = 0, diff_to = 0, top = UINT64_MAX;
  RetainedRequest rq;
  bool have_paths = false, have_max = false, have_depth = false;
  bool json = false, all = false, retained = false, dominators = false, suspects = false;
  unsigned jobs = default_jobs();

  std::vector<Option> options() {
  // The options with values take --NAME VALUE or --NAME=VALUE (--diff: two values); a missing value
  // is their own error ("--max needs one number of paths"), as is an option given twice.
  auto valued = [](const char* name, std::function<std::string(const std::string&)> take) {
    Option o{name, nullptr, nullptr, std::move(take), true};
    o.missing_empty = true;
    return o;
  };
  Option diff_option{"--diff", nullptr, nullptr, {}, false};
  diff_option.missing_empty = true;
  diff_option.take2 = [this](const std::string& a, const std::string& b) -> std::string {
    if (diff) return "--diff given twice";
    if (a.empty() || b.empty() || !parse_index(a.c_str(), diff_from) || !parse_index(b.c_str(), diff_to))
      return "--diff needs two heapshot indices (0, 1, ...)";
    diff = true;
    return {};
  };
    return {{"--json", nullptr, &json},
       jobs_option(jobs),
       {"--all", nullptr, &all},
       {"--retained", nullptr, &retained},
       {"--dominators", nullptr, &dominators},
       {"--suspects", nullptr, &suspects},
       diff_option,
       valued("--heapshot",
              [this](const std::string& v) -> std::string {
                if (rq.have_heapshot) return "--heapshot given twice";
                if (!parse_index(v.c_str(), rq.heapshot)) return "--heapshot needs a heapshot index (0, 1, ...)";
                rq.have_heapshot = true;
                return {};
              }),
       valued("--paths",
              [this](const std::string& v) -> std::string {
                if (have_paths) return "--paths given twice";
                if (v.empty()) return "--paths needs a class name";
                rq.paths_class = v;
                have_paths = true;
                return {};
              }),
       valued("--max",
              [this](const std::string& v) -> std::string {
                if (have_max || !parse_index(v.c_str(), rq.max)) return "--max needs one number of paths";
                have_max = true;
                return {};
              }),
       valued("--depth",
              [this](const std::string& v) -> std::string {
                if (have_depth || !parse_index(v.c_str(), rq.depth) || rq.depth == 0)
                  return "--depth needs one number of levels (1, 2, ...)";
                have_depth = true;
                return {};
              }),
       valued("--min-bytes",
              [this](const std::string& v) -> std::string {
                if (rq.have_min_bytes || !parse_size(v, rq.min_bytes))
                  return "--min-bytes needs one size (4096, 64K, 1M, ...)";
                rq.have_min_bytes = true;
                return {};
              }),
       valued("--top",
              [this](const std::string& v) -> std::string {
                if (have_top) return "--top given twice";
                if (!parse_index(v.c_str(), top)) return "--top needs a number of classes";
                have_top = true;
                return {};
              })};
  }
};

int cmd_heapshots(int argc, char** argv) {
  HeapshotsArgs args;
  std::vector<std::string> files;
  const int rc = parse_command(argc, argv, kCmd, kHelp, args.options(), files);
  if (rc >= 0) return rc;
  const bool diff = args.diff, have_paths = args.have_paths, have_max = args.have_max, have_depth = args.have_depth;
  const bool json = args.json, all = args.all, retained = args.retained, dominators = args.dominators;
  const bool suspects = args.suspects;
  const uint64_t diff_from = args.diff_from, diff_to = args.diff_to, top = args.top;
  const unsigned jobs = args.jobs;
  RetainedRequest& rq = args.rq;
  if (files.empty()) return usage_error("no FILE given");
  const int views = int{retained && !diff} + int{dominators} + int{have_paths} + int{suspects} + int{diff};
  if (views > 1) return usage_error("--retained, --dominators, --paths, --suspects and --diff go one at a time (--diff A B --retained is one)");
  if (retained || dominators || have_paths || suspects) {
    if (files.size() > 2 || (files.size() == 2 && !diff)) return usage_error("only one FILE at a time (two only with --diff)");
    if (all) return usage_error("--all only applies to --diff without --retained");
    if ((have_max && !have_paths) || ((have_depth || rq.have_min_bytes) && !(dominators || diff || suspects)))
      return usage_error("--max goes with --paths, --depth and --min-bytes with --dominators");
    if (rq.have_heapshot && (diff || suspects)) return usage_error("--heapshot does not go with --diff or --suspects");
    rq.view = diff ? RetainedRequest::View::diff
              : dominators ? RetainedRequest::View::dominators
              : have_paths ? RetainedRequest::View::paths
              : suspects ? RetainedRequest::View::suspects
                         : RetainedRequest::View::retained;
    rq.json = json;
    rq.top = top;
    rq.diff_from = diff_from;
    rq.diff_to = diff_to;
    rq.files = files;
    if (files.size() == 2 && files[0] == "-" && files[1] == "-") return usage_error("standard input given twice");
    return run_retained(rq);
  }
  if (have_max || have_depth || rq.have_min_bytes || rq.have_heapshot)
    return usage_error("--heapshot, --max, --depth and --min-bytes go with --retained, --dominators or --paths");
  if (files.size() > 2 || (files.size() == 2 && !diff))
    return usage_error("only one FILE at a time (two only with --diff)");
  if (files.size() == 2 && (files[0] == "-") && (files[1] == "-")) return usage_error("standard input given twice");
  if (all && !diff) return usage_error("--all only applies to --diff");

  // With --diff A B FILE1 FILE2, A is a heapshot of FILE1 and B one of FILE2.
  HeapshotCollector collectors[2];
  int status = 0;
  if (!collect_heapshots(files, jobs, collectors, status)) return 1;
  const std::string& path = files[0];
  const std::vector<HeapshotSummary>& shots = collectors[0].heapshots();
  const bool two_files = files.size() == 2;
  if (diff && !diff_indices_ok(files, collectors, diff_from, diff_to)) return 2;

  OutBuffer out(stdout);
  std::string text;
  // Written as it is rendered (a long listing is never held whole).
  const views::Drain drain = [&out](std::string& t) {
    out.write(t);
    t.clear();
  };
  if (diff) {
    const HeapshotSummary& a = shots[diff_from];
    const HeapshotSummary& b = collectors[two_files ? 1 : 0].heapshots()[diff_to];
    // Two processes: the same class has other addresses, so classes are matched by name.
    const HeapshotDiff d = diff_heapshots(a, b, two_files);
    json ? views::heapshot_diff_json(text, d, all, top, drain) : views::heapshot_diff_text(text, d, a, b, all, top, drain);
  } else {
    json ? views::heapshots_json(text, shots, top, drain) : views::heapshots_text(text, path, shots, top, drain);
  }
  out.write(text);
  out.flush();
  if (std::fflush(stdout) != 0 || out.failed()) {
    std::fprintf(stderr, "mlpd %s: cannot write the output: %s\n", kCmd, std::strerror(errno));
    return 1;
  }
  return status;
}

}  // namespace mlpd::cli
