#include "heapshots_retained.h"

#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "args.h"
#include "mlpd/budget.h"
#include "mlpd/decoder.h"
#include "mlpd/heap/heap_graph.h"
#include "mlpd/retention.h"
#include "out_buffer.h"

namespace mlpd::cli {

namespace {
using views::Retention;
using views::RetentionAnalysis;

// glibc's allocator while a heap graph is built and analysed. Its arrays (tens of MB each) are
// allocated and freed phase after phase; by default glibc gives each large one back to the kernel
// when it is freed (munmap, or a trim of its heap's top), and the next phase's arrays come back as
// fresh pages, each a page fault and a clear (179K faults, 0.4 s of system time on the 5.6M objects
// of retained_speed.sh, for a peak of 283 MB). Here arrays below 32 MiB come from the heap, which
// keeps what is freed (no trim, 64 MiB of padding at each growth) for the next phase to reuse.
class HeapGraphMalloc {
 public:
  HeapGraphMalloc() {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    mallopt(M_TOP_PAD, 64 << 20);
#endif
  }
  ~HeapGraphMalloc() {
#ifdef __GLIBC__
    mallopt(M_TRIM_THRESHOLD, 128 << 10);  // glibc's defaults (the mmap threshold stays fixed)
    mallopt(M_TOP_PAD, 128 << 10);
#endif
  }
  HeapGraphMalloc(const HeapGraphMalloc&) = delete;
  HeapGraphMalloc& operator=(const HeapGraphMalloc&) = delete;
};

std::string where(const Problem& p) {
  std::string s = "offset " + std::to_string(p.offset);
  s += p.buffer < 0 ? " (header)" : " (buffer " + std::to_string(p.buffer) + ")";
  return s;
}

}  // namespace

FileResult read_heapshots(const char* command, const std::string& path, bool single, bool have_index, uint64_t index,
                          const std::function<bool(size_t)>& want, bool offsets, uint32_t fold_depth,
                          bool print_problems) {
  FileResult fr;
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "mlpd %s: cannot open '%s': %s\n", command, path.c_str(), std::strerror(EISDIR));
    return fr;
  }
  std::string open_error;
  std::unique_ptr<Input> input = Input::open(path, open_error);
  if (!input) {
    std::fprintf(stderr, "mlpd %s: cannot open '%s': %s\n", command, path.c_str(), open_error.c_str());
    return fr;
  }
  fr.opened = true;
  HeapGraphMalloc tuned;
  MemoryBudget* budget = &process_budget();
  views::RetentionOptions ro;
  ro.fold_depth = fold_depth;
  ro.budget = budget;
  std::optional<HeapGraph> last;
  HeapGraphCollector* self = nullptr;
  struct Loose {
    size_t result;
    uint64_t start_time;
    std::vector<uint64_t> slots;  // its root slots in no range when it was labelled
  };
  std::vector<Loose> relabel;
  HeapGraphCollector::Options o;
  o.offsets = offsets;
  o.budget = budget;
  if (single) {
    if (have_index)
      o.want = [index](size_t i) { return i == index; };
    else
      o.last_only = true;  // the last heapshot: the others are never resolved
    o.done = [&last](HeapGraph&& g) { last = std::move(g); };
  } else {
    o.want = want;
    o.done = [&](HeapGraph&& g) {
      // Root slots in no range known yet: the range may come later in the file (a thread's buffer,
      // with its stack's registration, is written when it fills or the thread ends).
      std::vector<uint64_t> loose;
      self->label(g, &loose);
      if (!loose.empty()) relabel.push_back({fr.results.size(), g.start_time, std::move(loose)});
      RetentionAnalysis a(std::move(g), self->names(), ro);
      fr.results.push_back(a.result());
    };
  }
  HeapGraphCollector collector(std::move(o));
  self = &collector;
  decode(*input, collector, read_options());
  collector.finish();
  if (print_problems)
    for (const Problem& p : collector.problems())
      std::fprintf(stderr, "%s: %s: %s\n", path.c_str(), where(p).c_str(), p.message.c_str());
  fr.problems = !collector.problems().empty();
  fr.heapshots = collector.heapshot_count();
  // Heapshots labelled before a root range registered later in the file was read: built again in a
  // second pass, labelled with every range of the file (as a single heapshot is), so that one stack
  // or static field is named alike in every heapshot (--suspects, --diff). Not for standard input.
  std::erase_if(relabel, [&](const Loose& x) {
    HeapGraph probe;  // the slots alone, labelled with the whole file's ranges
    probe.start_time = x.start_time;
    for (const uint64_t slot : x.slots) probe.roots.push_back({0, 0, slot});
    std::vector<uint64_t> still;
    collector.label(probe, &still);
    return still.size() == x.slots.size();
  });
  if (!relabel.empty() && path != "-") {
    std::unique_ptr<Input> again = Input::open(path, open_error);
    if (again) {
      std::map<size_t, size_t> position;  // heapshot index -> its result
      for (const Loose& x : relabel) position.emplace(fr.results[x.result].index, x.result);
      HeapGraphCollector::Options o2;
      o2.offsets = offsets;
      o2.budget = budget;
      o2.want = [&position](size_t i) { return position.count(i) != 0; };
      o2.done = [&](HeapGraph&& g) {
        const auto it = position.find(g.index);
        if (it == position.end()) return;
        collector.label(g);
        RetentionAnalysis a(std::move(g), collector.names(), ro);
        fr.results[it->second] = a.result();
      };
      HeapGraphCollector second(std::move(o2));
      decode(*again, second, read_options());
      second.finish();
    }
  }
  if (single && last) {
    collector.label(*last);
    fr.kept = std::make_unique<RetentionAnalysis>(std::move(*last), collector.names(), ro);
    last.reset();
    fr.results.push_back(fr.kept->result());
  }
  return fr;
}

namespace heapshots_detail {

void seconds(OutBuffer& out, int64_t ns, const char* format) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, static_cast<double>(ns) / 1e9);
  out.put(buf);
}

void padded(OutBuffer& out, std::string_view s, size_t width) {
  for (size_t i = s.size(); i < width; ++i) out.put(' ');
  out.put(s);
}

bool index_ok(const FileResult& fr, uint64_t index, const std::string& path) {
  if (index < fr.heapshots) return true;
  if (fr.heapshots == 0)
    std::fprintf(stderr, "mlpd heapshots: no heapshot %llu: '%s' has no heapshots\n",
                 static_cast<unsigned long long>(index), path.c_str());
  else
    std::fprintf(stderr, "mlpd heapshots: no heapshot %llu: '%s' has %zu (0..%zu)\n",
                 static_cast<unsigned long long>(index), path.c_str(), fr.heapshots, fr.heapshots - 1);
  return false;
}

bool report_error(const views::Retention& r) {
  if (r.error.empty()) return false;
  std::fprintf(stderr, "mlpd heapshots: %s\n", r.error.c_str());
  return true;
}

int finish_output(OutBuffer& out, int status) {
  out.flush();
  if (std::fflush(stdout) != 0 || out.failed()) {
    std::fprintf(stderr, "mlpd heapshots: cannot write the output: %s\n", std::strerror(errno));
    return 1;
  }
  return status;
}

}  // namespace heapshots_detail

namespace {
using namespace heapshots_detail;
using views::Retention;
using views::RetentionAnalysis;

constexpr char kCmd[] = "heapshots";

// One line: the heapshot, what is reached and what is not, what was dropped.
void header(OutBuffer& out, const Retention& r) {
  out.put("heapshot ").dec(r.index).put(" at ");
  seconds(out, r.time_ns, "%.3f");
  out.put(" s: ").dec(r.objects).put(" objects, ").dec(r.bytes).put(" bytes, ").dec(r.root_objects);
  out.put(" held by GC roots; unreached: ").dec(r.unreached_objects).put(" objects, ");
  out.dec(r.unreached_bytes).put(" bytes");
  if (!r.complete) out.put(" (incomplete: no heap_end)");
  out.put('\n');
  if (r.dangling_refs || r.dangling_roots || r.duplicate_objects) {
    out.put("  (dropped: ").dec(r.dangling_refs).put(" references and ").dec(r.dangling_roots);
    out.put(" roots to objects not in the heapshot, ").dec(r.duplicate_objects).put(" objects listed twice)\n");
  }
}

void retained_text(OutBuffer& out, const Retention& r, uint64_t top) {
  header(out, r);
  auto row = [&out](const std::string& a, const std::string& b, const std::string& c, std::string_view name) {
    out.put("  ");
    padded(out, a, 12);
    out.put(' ');
    padded(out, b, 10);
    out.put(' ');
    padded(out, c, 12);
    out.put("  ").text(name, false).put('\n');
  };
  row("retained", "objects", "shallow", "class");
  size_t shown = 0;
  for (const views::RetainedClass& c : r.classes) {
    if (shown == top) break;
    row(std::to_string(c.retained), std::to_string(c.objects), std::to_string(c.shallow), c.name);
    ++shown;
  }
  if (shown < r.classes.size()) out.put("  (").dec(r.classes.size() - shown).put(" more classes)\n");
}

void retained_json(OutBuffer& out, const Retention& r, uint64_t top) {
  out.put("{\"index\":").dec(r.index).put(",\"time\":");
  seconds(out, r.time_ns, "%.9f");
  out.put(",\"objects\":").dec(r.objects).put(",\"bytes\":").dec(r.bytes);
  out.put(",\"unreached\":{\"objects\":").dec(r.unreached_objects).put(",\"bytes\":").dec(r.unreached_bytes);
  out.put("},\"classes\":[");
  size_t shown = 0;
  for (const views::RetainedClass& c : r.classes) {
    if (shown == top) break;
    if (shown++) out.put(',');
    out.put("{\"name\":").json(c.name).put(",\"objects\":").dec(c.objects).put(",\"shallow\":").dec(c.shallow);
    out.put(",\"retained\":").dec(c.retained).put('}');
  }
  out.put("]}\n");
}

// The folded tree's nodes to show: at most `top` top-level subtrees, nodes of at least min_bytes
// down to `depth` (a node is shown only when its parent is).
std::vector<char> shown_nodes(const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes) {
  std::vector<char> show(r.folded.size(), 0);
  uint64_t tops = 0;
  for (size_t i = 0; i < r.folded.size(); ++i) {
    const views::FoldedNode& x = r.folded[i];
    if (x.retained < min_bytes || x.depth > depth) continue;
    if (x.parent == UINT32_MAX) {
      if (tops == top) continue;
      ++tops;
      show[i] = 1;
    } else {
      show[i] = show[x.parent];
    }
  }
  return show;
}

void dominators_text(OutBuffer& out, const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes) {
  header(out, r);
  out.put("  subtrees of the dominator tree of at least ").dec(min_bytes).put(" bytes, ").dec(depth);
  out.put(" levels, folded by class:\n");
  out.put("      retained    objects  instances  held by / class\n");
  const std::vector<char> show = shown_nodes(r, top, depth, min_bytes);
  for (size_t i = 0; i < r.folded.size(); ++i) {
    if (!show[i]) continue;
    const views::FoldedNode& x = r.folded[i];
    out.put("  ");
    padded(out, std::to_string(x.retained), 12);
    out.put(' ');
    padded(out, std::to_string(x.objects), 10);
    out.put(' ');
    padded(out, std::to_string(x.instances), 10);
    out.put("  ");
    for (uint32_t d = 1; d < x.depth; ++d) out.put("  ");
    if (x.parent == UINT32_MAX) {
      const views::RootName& root = r.roots[x.root];
      out.put(root.kind);
      if (!root.name.empty()) out.put(" \"").text(root.name, false).put('"');
      out.put(" -> ");
    }
    out.text(r.classes[x.klass].name, false).put('\n');
  }
}

void dominators_json(OutBuffer& out, const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes) {
  const std::vector<char> show = shown_nodes(r, top, depth, min_bytes);
  out.put("{\"index\":").dec(r.index).put(",\"time\":");
  seconds(out, r.time_ns, "%.9f");
  out.put(",\"objects\":").dec(r.objects).put(",\"bytes\":").dec(r.bytes);
  out.put(",\"unreached\":{\"objects\":").dec(r.unreached_objects).put(",\"bytes\":").dec(r.unreached_bytes);
  out.put("},\"subtrees\":[");
  // Nodes come parents first, each subtree contiguous: close the open ones as depth goes back up.
  std::vector<std::pair<uint32_t, bool>> open;  // (depth, has a child) of the nodes whose children are open
  bool top_has = false;
  for (size_t i = 0; i < r.folded.size(); ++i) {
    if (!show[i]) continue;
    const views::FoldedNode& x = r.folded[i];
    while (!open.empty() && open.back().first >= x.depth) {
      out.put("]}");
      open.pop_back();
    }
    bool& has = open.empty() ? top_has : open.back().second;
    if (has) out.put(',');
    has = true;
    out.put("{");
    if (x.parent == UINT32_MAX) {
      const views::RootName& root = r.roots[x.root];
      out.put("\"root\":{\"kind\":").json(root.kind).put(",\"name\":").json(root.name).put("},");
    }
    out.put("\"class\":").json(r.classes[x.klass].name).put(",\"instances\":").dec(x.instances);
    out.put(",\"objects\":").dec(x.objects).put(",\"retained\":").dec(x.retained).put(",\"children\":[");
    open.emplace_back(x.depth, false);
  }
  while (!open.empty()) {
    out.put("]}");
    open.pop_back();
  }
  out.put("]}\n");
}

void path_text(OutBuffer& out, const views::RootPath& p) {
  out.put("  retained ").dec(p.retained).put(": root ").put(p.root.kind);
  if (!p.root.name.empty()) out.put(" \"").text(p.root.name, false).put('"');
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.total_steps > p.steps.size() && i == p.steps.size() / 2)
      out.put(" -> ... (").dec(p.total_steps - p.steps.size()).put(" steps)");
    out.put(" -> ").text(p.steps[i].klass, false);
    if (p.steps[i].offset >= 0) out.put(" (+").dec(static_cast<uint64_t>(p.steps[i].offset)).put(')');
  }
  out.put('\n');
}

void path_json(OutBuffer& out, const views::RootPath& p) {
  out.put("{\"retained\":").dec(p.retained).put(",\"root\":{\"kind\":").json(p.root.kind);
  out.put(",\"name\":").json(p.root.name).put("},\"length\":").dec(p.total_steps).put(",\"steps\":[");
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (i) out.put(',');
    out.put("{\"class\":").json(p.steps[i].klass).put(",\"offset\":");
    if (p.steps[i].offset >= 0)
      out.dec(static_cast<uint64_t>(p.steps[i].offset));
    else
      out.put("null");
    out.put('}');
  }
  out.put("]}");
}

}  // namespace

std::optional<views::report::HeldBySection> held_by_section(const std::string& path, size_t top) {
  FileResult f = read_heapshots("report", path, true, false, 0, nullptr, false, 0, false);
  if (!f.kept) return std::nullopt;
  const Retention& r = f.kept->result();
  views::report::HeldBySection h;
  h.index = r.index;
  h.error = r.error;
  if (!h.error.empty()) return h;
  h.objects = r.objects;
  h.bytes = r.bytes;
  h.unreached_objects = r.unreached_objects;
  h.unreached_bytes = r.unreached_bytes;
  for (const views::RetainedClass& c : r.classes) {
    if (h.classes.size() == top || c.retained == 0) break;
    views::report::HeldBySection::Class x;
    x.name = c.name;
    x.objects = c.objects;
    x.shallow = c.shallow;
    x.retained = c.retained;
    if (c.held_by < r.roots.size()) {
      x.has_root = true;
      x.root_kind = r.roots[c.held_by].kind;
      x.root_name = r.roots[c.held_by].name;
    }
    h.classes.push_back(std::move(x));
  }
  return h;
}

int run_retained(const RetainedRequest& q) {
  using View = RetainedRequest::View;
  const uint32_t fold_depth = static_cast<uint32_t>(std::min<uint64_t>(q.depth, 64));
  OutBuffer out(stdout);
  int status = 0;

  if (q.view == View::diff || q.view == View::suspects) return run_growth(q);

  // Only --dominators shows the folded tree: the others skip building it.
  FileResult f = read_heapshots(kCmd, q.files[0], true, q.have_heapshot, q.heapshot, nullptr, q.view == View::paths,
                                q.view == View::dominators ? fold_depth : 0);
  if (!f.opened) return 1;
  if (f.problems) status = 1;
  if (q.have_heapshot && !index_ok(f, q.heapshot, q.files[0])) return 2;
  if (!f.kept) {
    if (!q.json) out.text(q.files[0], false).put(": no heapshots\n");
    return finish_output(out, status);
  }
  const Retention& r = f.kept->result();
  if (report_error(r)) return 1;
  switch (q.view) {
    case View::retained:
      q.json ? retained_json(out, r, q.top) : retained_text(out, r, q.top);
      break;
    case View::dominators: {
      const uint64_t min_bytes = q.have_min_bytes ? q.min_bytes : std::max<uint64_t>(1, r.bytes / 100);
      const uint64_t top = q.top == UINT64_MAX ? 20 : q.top;
      q.json ? dominators_json(out, r, top, q.depth, min_bytes) : dominators_text(out, r, top, q.depth, min_bytes);
      break;
    }
    case View::paths: {
      uint64_t instances = 0;
      const std::vector<views::RootPath> paths = f.kept->paths(q.paths_class, q.max, instances);
      if (q.json) {
        out.put("{\"class\":").json(q.paths_class).put(",\"paths\":[");
        for (size_t i = 0; i < paths.size(); ++i) {
          if (i) out.put(',');
          path_json(out, paths[i]);
        }
        out.put("]}\n");
      } else {
        header(out, r);
        out.put("  ").dec(instances).put(" reached instances of ").text(q.paths_class, false);
        out.put(paths.empty() ? "" : ", shortest paths from a GC root to the largest:").put('\n');
        for (const views::RootPath& p : paths) path_text(out, p);
      }
      break;
    }
    default:
      break;
  }
  return finish_output(out, status);
}

}  // namespace mlpd::cli
