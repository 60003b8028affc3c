// mlpd heapshots [--diff A B [--all]] as text and JSON Lines (mlpd/heap_views.h; docs/reports.md
// "Heapshots"): the heap model's heapshot summaries and their differences, counted the way Mono's
// mprof-report counts them.
#include <string>

#include "heap_out.h"
#include "mlpd/heap_views.h"

namespace mlpd::views {

using detail::drain_some;
using detail::HeapOut;
using detail::signed_str;

namespace {

void class_line(HeapOut& o, const std::string& bytes, const std::string& objects, std::string_view name) {
  o.put("  ").padded(bytes, 12).put(' ').padded(objects, 10).put("  ").text(name).put('\n');
}

}  // namespace

void heapshots_text(std::string& out, std::string_view path, const std::vector<HeapshotSummary>& shots, uint64_t top,
                    const Drain& drain) {
  HeapOut o(out);
  if (shots.empty()) {
    o.text(path).put(": no heapshots\n");
    return;
  }
  for (const HeapshotSummary& s : shots) {
    if (s.index) o.put('\n');
    o.put("heapshot ").dec(s.index).put(" at ").seconds(s.time_ns, "%.3f");
    o.put(" s: ").dec(s.objects).put(" objects, ").dec(s.bytes).put(" bytes, ").dec(s.classes.size());
    o.put(" classes, ").dec(s.roots).put(" roots");
    if (!s.complete) o.put(" (incomplete: no heap_end)");
    o.put('\n');
    class_line(o, "bytes", "objects", "class");
    size_t shown = 0;
    for (const HeapshotClass& c : s.classes) {
      if (shown == top) break;
      class_line(o, std::to_string(c.bytes), std::to_string(c.objects), c.name);
      ++shown;
    }
    if (shown < s.classes.size()) o.put("  (").dec(s.classes.size() - shown).put(" more classes)\n");
    drain_some(out, drain);
  }
}

void heapshots_json(std::string& out, const std::vector<HeapshotSummary>& shots, uint64_t top, const Drain& drain) {
  HeapOut o(out);
  for (const HeapshotSummary& s : shots) {
    o.put("{\"index\":").dec(s.index).put(",\"time\":").seconds(s.time_ns, "%.9f");
    o.put(",\"objects\":").dec(s.objects).put(",\"bytes\":").dec(s.bytes).put(",\"roots\":").dec(s.roots);
    o.put(",\"complete\":").put(s.complete ? "true" : "false");
    o.put(",\"class_count\":").dec(s.classes.size()).put(",\"classes\":[");
    size_t shown = 0;
    for (const HeapshotClass& c : s.classes) {
      if (shown == top) break;
      if (shown++) o.put(',');
      o.put("{\"name\":").json(c.name).put(",\"objects\":").dec(c.objects).put(",\"bytes\":").dec(c.bytes).put('}');
    }
    o.put("]}\n");
    drain_some(out, drain);
  }
}

void heapshot_diff_text(std::string& out, const HeapshotDiff& d, const HeapshotSummary& a, const HeapshotSummary& b,
                        bool all, uint64_t top, const Drain& drain) {
  HeapOut o(out);
  o.put("heapshot ").dec(d.from).put(" -> ").dec(d.to).put(" (").seconds(a.time_ns, "%.3f");
  o.put(" s -> ").seconds(b.time_ns, "%.3f").put(" s)\n");
  class_line(o, "bytes", "objects", "class");
  size_t shown = 0, changed = 0, unchanged = 0;
  for (const HeapshotClassDelta& c : d.classes) {
    const bool same = c.objects == 0 && c.bytes == 0;
    (same ? unchanged : changed)++;
    if (same && !all) continue;
    if (shown == top) continue;
    class_line(o, signed_str(c.bytes), signed_str(c.objects), c.name);
    ++shown;
    drain_some(out, drain);
  }
  const size_t listable = all ? d.classes.size() : changed;
  if (shown < listable) o.put("  (").dec(listable - shown).put(" more classes)\n");
  if (changed == 0) o.put("  (no class changed)\n");
  if (!all && unchanged) o.put("  (").dec(unchanged).put(" unchanged classes; --all lists them)\n");
  o.put("total: ").put(signed_str(d.bytes)).put(" bytes, ").put(signed_str(d.objects)).put(" objects (");
  o.dec(a.bytes).put(" -> ").dec(b.bytes).put(" bytes, ").dec(a.objects).put(" -> ").dec(b.objects);
  o.put(" objects)\n");
}

void heapshot_diff_json(std::string& out, const HeapshotDiff& d, bool all, uint64_t top, const Drain& drain) {
  HeapOut o(out);
  o.put("{\"from\":").dec(d.from).put(",\"to\":").dec(d.to).put(",\"objects\":").sdec(d.objects);
  o.put(",\"bytes\":").sdec(d.bytes).put(",\"classes\":[");
  size_t shown = 0;
  for (const HeapshotClassDelta& c : d.classes) {
    if (!all && c.objects == 0 && c.bytes == 0) continue;
    if (shown == top) break;
    if (shown++) o.put(',');
    o.put("{\"name\":").json(c.name).put(",\"objects\":").sdec(c.objects).put(",\"bytes\":").sdec(c.bytes).put('}');
    drain_some(out, drain);
  }
  o.put("]}\n");
}

}  // namespace mlpd::views
