// mlpd heapshots --retained / --dominators / --paths as text and JSON, the retained flame graph's
// collapsed stacks and the report's "Held by" section (mlpd/heap_views.h; docs/reports.md "Retained
// sizes"), from one heapshot's retention analysis (mlpd/retention.h).
#include <string>
#include <utility>
#include <vector>

#include "heap_out.h"
#include "mlpd/heap_views.h"

namespace mlpd::views {

using detail::drain_some;
using detail::HeapOut;

namespace {

// One line: the heapshot, what is reached and what is not, what was dropped.
void header(HeapOut& o, const Retention& r) {
  o.put("heapshot ").dec(r.index).put(" at ").seconds(r.time_ns, "%.3f");
  o.put(" s: ").dec(r.objects).put(" objects, ").dec(r.bytes).put(" bytes, ").dec(r.root_objects);
  o.put(" held by GC roots; unreached: ").dec(r.unreached_objects).put(" objects, ");
  o.dec(r.unreached_bytes).put(" bytes");
  if (!r.complete) o.put(" (incomplete: no heap_end)");
  o.put('\n');
  if (r.dangling_refs || r.dangling_roots || r.duplicate_objects) {
    o.put("  (dropped: ").dec(r.dangling_refs).put(" references and ").dec(r.dangling_roots);
    o.put(" roots to objects not in the heapshot, ").dec(r.duplicate_objects).put(" objects listed twice)\n");
  }
}

// {"index","time","objects","bytes","unreached":{...}, -- the rest is the caller's.
void json_head(HeapOut& o, const Retention& r) {
  o.put("{\"index\":").dec(r.index).put(",\"time\":").seconds(r.time_ns, "%.9f");
  o.put(",\"objects\":").dec(r.objects).put(",\"bytes\":").dec(r.bytes);
  o.put(",\"unreached\":{\"objects\":").dec(r.unreached_objects).put(",\"bytes\":").dec(r.unreached_bytes);
  o.put("},");
}

// The folded tree's nodes to show: at most `top` top-level subtrees, nodes of at least min_bytes
// down to `depth` (a node is shown only when its parent is).
std::vector<char> shown_nodes(const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes) {
  std::vector<char> show(r.folded.size(), 0);
  uint64_t tops = 0;
  for (size_t i = 0; i < r.folded.size(); ++i) {
    const FoldedNode& x = r.folded[i];
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

void path_text(HeapOut& o, const RootPath& p) {
  o.put("  retained ").dec(p.retained).put(": root ").put(p.root.kind);
  if (!p.root.name.empty()) o.put(" \"").text(p.root.name).put('"');
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.total_steps > p.steps.size() && i == p.steps.size() / 2)
      o.put(" -> ... (").dec(p.total_steps - p.steps.size()).put(" steps)");
    o.put(" -> ").text(p.steps[i].klass);
    if (p.steps[i].offset >= 0) o.put(" (+").dec(static_cast<uint64_t>(p.steps[i].offset)).put(')');
  }
  o.put('\n');
}

void path_json(HeapOut& o, const RootPath& p) {
  o.put("{\"retained\":").dec(p.retained).put(",\"root\":{\"kind\":").json(p.root.kind);
  o.put(",\"name\":").json(p.root.name).put("},\"length\":").dec(p.total_steps).put(",\"steps\":[");
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (i) o.put(',');
    o.put("{\"class\":").json(p.steps[i].klass).put(",\"offset\":");
    if (p.steps[i].offset >= 0)
      o.dec(static_cast<uint64_t>(p.steps[i].offset));
    else
      o.put("null");
    o.put('}');
  }
  o.put("]}");
}

}  // namespace

void retained_text(std::string& out, const Retention& r, uint64_t top, const Drain& drain) {
  HeapOut o(out);
  header(o, r);
  auto row = [&o](const std::string& a, const std::string& b, const std::string& c, std::string_view name) {
    o.put("  ").padded(a, 12).put(' ').padded(b, 10).put(' ').padded(c, 12).put("  ").text(name).put('\n');
  };
  row("retained", "objects", "shallow", "class");
  size_t shown = 0;
  for (const RetainedClass& c : r.classes) {
    if (shown == top) break;
    row(std::to_string(c.retained), std::to_string(c.objects), std::to_string(c.shallow), c.name);
    ++shown;
    drain_some(out, drain);
  }
  if (shown < r.classes.size()) o.put("  (").dec(r.classes.size() - shown).put(" more classes)\n");
}

void retained_json(std::string& out, const Retention& r, uint64_t top, const Drain& drain) {
  HeapOut o(out);
  json_head(o, r);
  o.put("\"classes\":[");
  size_t shown = 0;
  for (const RetainedClass& c : r.classes) {
    if (shown == top) break;
    if (shown++) o.put(',');
    o.put("{\"name\":").json(c.name).put(",\"objects\":").dec(c.objects).put(",\"shallow\":").dec(c.shallow);
    o.put(",\"retained\":").dec(c.retained).put('}');
    drain_some(out, drain);
  }
  o.put("]}\n");
}

void dominators_text(std::string& out, const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes,
                     const Drain& drain) {
  HeapOut o(out);
  header(o, r);
  o.put("  subtrees of the dominator tree of at least ").dec(min_bytes).put(" bytes, ").dec(depth);
  o.put(" levels, folded by class:\n");
  o.put("      retained    objects  instances  held by / class\n");
  const std::vector<char> show = shown_nodes(r, top, depth, min_bytes);
  for (size_t i = 0; i < r.folded.size(); ++i) {
    if (!show[i]) continue;
    const FoldedNode& x = r.folded[i];
    o.put("  ").padded(std::to_string(x.retained), 12).put(' ').padded(std::to_string(x.objects), 10);
    o.put(' ').padded(std::to_string(x.instances), 10).put("  ");
    for (uint32_t d = 1; d < x.depth; ++d) o.put("  ");
    if (x.parent == UINT32_MAX) {
      const RootName& root = r.roots[x.root];
      o.put(root.kind);
      if (!root.name.empty()) o.put(" \"").text(root.name).put('"');
      o.put(" -> ");
    }
    o.text(r.classes[x.klass].name).put('\n');
    drain_some(out, drain);
  }
}

void dominators_json(std::string& out, const Retention& r, uint64_t top, uint64_t depth, uint64_t min_bytes,
                     const Drain& drain) {
  HeapOut o(out);
  const std::vector<char> show = shown_nodes(r, top, depth, min_bytes);
  json_head(o, r);
  o.put("\"subtrees\":[");
  // Nodes come parents first, each subtree contiguous: close the open ones as depth goes back up.
  std::vector<std::pair<uint32_t, bool>> open;  // (depth, has a child) of the nodes whose children are open
  bool top_has = false;
  for (size_t i = 0; i < r.folded.size(); ++i) {
    if (!show[i]) continue;
    const FoldedNode& x = r.folded[i];
    while (!open.empty() && open.back().first >= x.depth) {
      o.put("]}");
      open.pop_back();
    }
    bool& has = open.empty() ? top_has : open.back().second;
    if (has) o.put(',');
    has = true;
    o.put('{');
    if (x.parent == UINT32_MAX) {
      const RootName& root = r.roots[x.root];
      o.put("\"root\":{\"kind\":").json(root.kind).put(",\"name\":").json(root.name).put("},");
    }
    o.put("\"class\":").json(r.classes[x.klass].name).put(",\"instances\":").dec(x.instances);
    o.put(",\"objects\":").dec(x.objects).put(",\"retained\":").dec(x.retained).put(",\"children\":[");
    open.emplace_back(x.depth, false);
    drain_some(out, drain);
  }
  for (; !open.empty(); open.pop_back()) o.put("]}");
  o.put("]}\n");
}

void paths_text(std::string& out, const Retention& r, std::string_view klass, uint64_t instances,
                const std::vector<RootPath>& paths) {
  HeapOut o(out);
  header(o, r);
  o.put("  ").dec(instances).put(" reached instances of ").text(klass);
  o.put(paths.empty() ? "" : ", shortest paths from a GC root to the largest:").put('\n');
  for (const RootPath& p : paths) path_text(o, p);
}

void paths_json(std::string& out, std::string_view klass, const std::vector<RootPath>& paths) {
  HeapOut o(out);
  o.put("{\"class\":").json(klass).put(",\"paths\":[");
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i) o.put(',');
    path_json(o, paths[i]);
  }
  o.put("]}\n");
}

std::string retained_collapsed(const std::vector<CollapsedStack>& stacks) {
  std::string text;
  for (const CollapsedStack& s : stacks) text += s.stack + ' ' + std::to_string(s.weight) + '\n';
  return text;
}

report::HeldBySection held_by_section(const Retention& r, size_t top) {
  report::HeldBySection h;
  h.index = r.index;
  h.error = r.error;
  if (!h.error.empty()) return h;
  h.objects = r.objects;
  h.bytes = r.bytes;
  h.unreached_objects = r.unreached_objects;
  h.unreached_bytes = r.unreached_bytes;
  for (const RetainedClass& c : r.classes) {
    if (h.classes.size() == top || c.retained == 0) break;
    report::HeldBySection::Class x;
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

}  // namespace mlpd::views
