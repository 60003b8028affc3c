#include "heapshots_retained.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
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
#include "mlpd/heap_views.h"
#include "mlpd/retention.h"
#include "out_buffer.h"

namespace mlpd::cli {

namespace {
using views::Retention;
using views::RetentionAnalysis;

std::string where(const Problem& p) {
  std::string s = "offset " + std::to_string(p.offset);
  s += p.buffer < 0 ? " (header)" : " (buffer " + std::to_string(p.buffer) + ")";
  return s;
}

}  // namespace

namespace {

// A heapshot labelled before a root range registered later in the file was read: its result's place
// and the root slots that were in no range then.
struct Loose {
  size_t result;
  uint64_t start_time;
  std::vector<uint64_t> slots;
};

// Heapshots labelled before a root range registered later in the file was read: built again in a
// second pass, labelled with every range of the file (as a single heapshot is), so that one stack or
// static field is named alike in every heapshot (--suspects, --diff). Not for standard input.
void relabel(FileResult& fr, std::vector<Loose>& loose, const HeapGraphCollector& collector, const std::string& path,
             bool offsets, const views::RetentionOptions& ro) {
  std::erase_if(loose, [&](const Loose& x) {
    HeapGraph probe;  // the slots alone, labelled with the whole file's ranges
    probe.start_time = x.start_time;
    for (const uint64_t slot : x.slots) probe.roots.push_back({0, 0, slot});
    std::vector<uint64_t> still;
    collector.label(probe, &still);
    return still.size() == x.slots.size();
  });
  if (loose.empty() || path == "-") return;
  std::string open_error;
  std::unique_ptr<Input> again = Input::open(path, open_error);
  if (!again) return;
  std::map<size_t, size_t> position;  // heapshot index -> its result
  for (const Loose& x : loose) position.emplace(fr.results[x.result].index, x.result);
  HeapGraphCollector::Options o2;
  o2.offsets = offsets;
  o2.budget = ro.budget;
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
  std::vector<Loose> loose_shots;
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
      if (!loose.empty()) loose_shots.push_back({fr.results.size(), g.start_time, std::move(loose)});
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
  relabel(fr, loose_shots, collector, path, offsets, ro);
  if (single && last) {
    collector.label(*last);
    fr.kept = std::make_unique<RetentionAnalysis>(std::move(*last), collector.names(), ro);
    last.reset();
    fr.results.push_back(fr.kept->result());
  }
  return fr;
}

namespace heapshots_detail {

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

using namespace heapshots_detail;

int run_retained(const RetainedRequest& q) {
  using View = RetainedRequest::View;
  const uint32_t fold_depth = static_cast<uint32_t>(std::min<uint64_t>(q.depth, 64));
  OutBuffer out(stdout);
  int status = 0;

  if (q.view == View::diff || q.view == View::suspects) return run_growth(q);

  // Only --dominators shows the folded tree: the others skip building it.
  FileResult f = read_heapshots("heapshots", q.files[0], true, q.have_heapshot, q.heapshot, nullptr,
                                q.view == View::paths, q.view == View::dominators ? fold_depth : 0);
  if (!f.opened) return 1;
  if (f.problems) status = 1;
  if (q.have_heapshot && !index_ok(f, q.heapshot, q.files[0])) return 2;
  if (!f.kept) {
    if (!q.json) out.text(q.files[0], false).put(": no heapshots\n");
    return finish_output(out, status);
  }
  const views::Retention& r = f.kept->result();
  if (report_error(r)) return 1;
  std::string text;
  // Written as it is rendered (a long listing is never held whole).
  const views::Drain drain = [&out](std::string& t) {
    out.write(t);
    t.clear();
  };
  switch (q.view) {
    case View::retained:
      q.json ? views::retained_json(text, r, q.top, drain) : views::retained_text(text, r, q.top, drain);
      break;
    case View::dominators: {
      const uint64_t min_bytes = q.have_min_bytes ? q.min_bytes : std::max<uint64_t>(1, r.bytes / 100);
      const uint64_t top = q.top == UINT64_MAX ? 20 : q.top;
      q.json ? views::dominators_json(text, r, top, q.depth, min_bytes, drain)
             : views::dominators_text(text, r, top, q.depth, min_bytes, drain);
      break;
    }
    case View::paths: {
      uint64_t instances = 0;
      const std::vector<views::RootPath> paths = f.kept->paths(q.paths_class, q.max, instances);
      q.json ? views::paths_json(text, q.paths_class, paths) : views::paths_text(text, r, q.paths_class, instances, paths);
      break;
    }
    default:
      break;
  }
  out.write(text);
  return finish_output(out, status);
}

}  // namespace mlpd::cli
