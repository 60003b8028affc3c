// mlpd heapshots --diff A B --retained and --suspects as text and JSON (mlpd/heap_views.h;
// docs/reports.md "What grew"): the growth and the leak suspects of views/retention.cpp.
#include <string>
#include <vector>

#include "heap_out.h"
#include "mlpd/heap_views.h"

namespace mlpd::views {

using detail::HeapOut;
using detail::signed_str;

namespace {

void growth_rows_json(HeapOut& o, const std::vector<Growth>& v, uint64_t top, bool objects) {
  size_t shown = 0;
  for (const Growth& g : v) {
    if (shown == top) break;
    if (shown++) o.put(',');
    o.put(objects ? "{\"name\":" : "{\"path\":").json(g.name).put(",\"retained\":").sdec(g.retained);
    if (objects) o.put(",\"objects\":").sdec(g.objects);
    o.put(",\"from\":").dec(g.from).put(",\"to\":").dec(g.to).put('}');
  }
}

void growth_rows_text(HeapOut& o, const std::vector<Growth>& v, uint64_t top, bool objects) {
  size_t shown = 0;
  for (const Growth& g : v) {
    if (shown == top) break;
    ++shown;
    o.put("  ").padded(signed_str(g.retained), 12);
    if (objects) o.put(' ').padded(signed_str(g.objects), 10);
    o.put("  ").text(g.name).put('\n');
  }
  if (shown < v.size()) o.put("  (").dec(v.size() - shown).put(" more)\n");
}

}  // namespace

void growth_text(std::string& out, const Retention& a, const Retention& b, const std::vector<Growth>& classes,
                 const std::vector<Growth>& subtrees, uint64_t top) {
  HeapOut o(out);
  o.put("heapshot ").dec(a.index).put(" -> ").dec(b.index).put(" (").seconds(a.time_ns, "%.3f");
  o.put(" s -> ").seconds(b.time_ns, "%.3f");
  o.put(" s), growth of retained bytes\n  by class:\n      retained    objects  class\n");
  growth_rows_text(o, classes, top, true);
  o.put("  by dominator subtree (held by > class path):\n      retained  subtree\n");
  growth_rows_text(o, subtrees, top, false);
}

void growth_json(std::string& out, const Retention& a, const Retention& b, const std::vector<Growth>& classes,
                 const std::vector<Growth>& subtrees, uint64_t top) {
  HeapOut o(out);
  o.put("{\"from\":").dec(a.index).put(",\"to\":").dec(b.index).put(",\"retained\":");
  o.sdec(static_cast<int64_t>((b.bytes - b.unreached_bytes) - (a.bytes - a.unreached_bytes)));
  o.put(",\"classes\":[");
  growth_rows_json(o, classes, top, true);
  o.put("],\"subtrees\":[");
  growth_rows_json(o, subtrees, top, false);
  o.put("]}\n");
}

void suspects_text(std::string& out, size_t heapshots, const std::vector<Suspect>& suspects, uint64_t top) {
  HeapOut o(out);
  o.put("subtrees whose retained bytes grew over the ").dec(heapshots);
  o.put(" heapshots (never shrank, grew at most steps):\n");
  o.put("        growth  first -> last  subtree\n");
  size_t shown = 0;
  for (const auto& [path, v] : suspects) {
    if (shown == top) break;
    ++shown;
    o.put("  ").padded("+" + std::to_string(v.back() - v.front()), 12);
    o.put("  ").dec(v.front()).put(" -> ").dec(v.back()).put("  ").text(path).put('\n');
  }
  if (suspects.empty()) o.put("  (none)\n");
}

void suspects_json(std::string& out, size_t heapshots, const std::vector<Suspect>& suspects, uint64_t top) {
  HeapOut o(out);
  o.put("{\"heapshots\":").dec(heapshots).put(",\"suspects\":[");
  size_t shown = 0;
  for (const auto& [path, v] : suspects) {
    if (shown == top) break;
    if (shown++) o.put(',');
    o.put("{\"path\":").json(path).put(",\"growth\":").dec(v.back() - v.front()).put(",\"retained\":[");
    for (size_t i = 0; i < v.size(); ++i) (i ? o.put(',') : o).dec(v[i]);
    o.put("]}");
  }
  o.put("]}\n");
}

}  // namespace mlpd::views
