// The heatmap (mlpd export --format heatmap): a self-contained page with the samples (or
// allocations, with --what alloc / alloc-bytes) per time slot as a FlameScope-style heat map --
// one column per second, one row per 20 ms slot of that second -- and, for a range of slots
// selected with two clicks, the flame graph of that range: the HTML flame graph's own page (html.cpp,
// html_flamegraph_template) in an iframe, made from the range's stacks in the browser. Nothing is
// fetched at view time. `#from=S&to=S` in the address selects seconds [S, S) at load.
#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mlpd/json.h"
#include "mlpd/views.h"

namespace mlpd::views {

using namespace mlpd::profile;

namespace {

constexpr uint32_t kRows = 50;  // slots per second (20 ms)
constexpr uint64_t kSlotNs = 1000000000ULL / kRows;

const char kHead[] = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
body{margin:0;font:12px/1.3 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;background:#fafafa;color:#222}
header{padding:8px 12px;background:#fff;border-bottom:1px solid #ddd}
header h1{font-size:15px;margin:0 0 4px 0;font-weight:600}
#map{display:flex;gap:1px;padding:8px 12px;overflow-x:auto}
.col{display:flex;flex-direction:column;gap:1px}
.col .lab{font-size:10px;color:#666;text-align:center;height:12px}
.cell{width:14px;height:8px;background:#eee;cursor:pointer}
.cell.sel{outline:2px solid #1565c0;outline-offset:-1px}
#sel{padding:4px 12px}
#top{padding:0 12px;margin:0}
iframe{width:100%;height:60vh;border:0;border-top:1px solid #ddd}
</style></head><body>
<header><h1 id="title"></h1><div>Columns are seconds from the start, rows 20 ms slots (top: the
start of the second). Click a slot, then another: the flame graph below shows that range.</div></header>
<div id="map"></div><div id="sel">No range selected.</div><ol id="top"></ol>
<iframe id="flame" title="flame graph of the selected range"></iframe>
<script id="heat" type="application/json">)HTML";

const char kTail[] = R"HTML(</script>
<script>
"use strict";
(function () {
  var H = JSON.parse(document.getElementById("heat").textContent);
  var FG = JSON.parse(document.getElementById("fg").textContent);
  var rows = H.rows, cols = H.cols, grid = H.grid, names = H.names, nodes = H.nodes, slots = H.slots;
  var N = nodes.length / 3, max = 1, i;
  for (i = 0; i < grid.length; i++) if (grid[i] > max) max = grid[i];
  document.getElementById("title").textContent = H.title;
  document.title = H.title;
  var map = document.getElementById("map"), cells = [];
  for (var c = 0; c < cols; c++) {
    var col = document.createElement("div"); col.className = "col";
    var lab = document.createElement("div"); lab.className = "lab"; lab.textContent = c; col.appendChild(lab);
    var sum = 0;
    for (var r = 0; r < rows; r++) {
      var s = c * rows + r, v = grid[s] || 0, cell = document.createElement("div");
      sum += v;
      cell.className = "cell"; cell.id = "s" + s; cell.setAttribute("data-count", v);
      cell.title = c + "." + (r * 20 < 100 ? (r * 20 < 10 ? "00" : "0") : "") + r * 20 + " s: " + v + " " + H.unit;
      if (v > 0) cell.style.background = "hsl(" + Math.round(50 - 50 * v / max) + ",90%," + Math.round(85 - 40 * v / max) + "%)";
      cell.onclick = (function (slot) { return function () { pick(slot); }; })(s);
      col.appendChild(cell); cells.push(cell);
    }
    col.setAttribute("data-second", c); col.setAttribute("data-count", sum);
    map.appendChild(col);
  }
  var start = -1, end = -1;
  function pick(s) {
    if (start < 0 || end >= 0) { start = s; end = -1; show(s, s); } else { end = s; show(Math.min(start, s), Math.max(start, s)); }
  }
  function show(a, b) {
    cells.forEach(function (cell, j) { cell.classList.toggle("sel", j >= a && j <= b); });
    var self = new Array(N).fill(0), total = 0;
    for (var s = a; s <= b; s++) {
      var l = slots[s] || [];
      for (var k = 0; k < l.length; k += 2) { self[l[k]] += l[k + 1]; total += l[k + 1]; }
    }
    var fmt = function (s) { return (Math.floor(s / rows) + (s % rows) / rows).toFixed(2); };
    document.getElementById("sel").textContent = "Selected " + fmt(a) + " s to " + fmt(b + 1) + " s: " + total + " " + H.unit;
    // Totals and children, for the flame graph page's pre-order [name, kind, depth, self] list.
    var tot = self.slice(), kids = [], roots = [];
    for (i = 0; i < N; i++) kids.push([]);
    for (i = N - 1; i >= 0; i--) { var p = nodes[i * 3]; if (p >= 0) tot[p] += tot[i]; }
    for (i = 0; i < N; i++) { var q = nodes[i * 3]; if (tot[i] > 0) (q >= 0 ? kids[q] : roots).push(i); }
    var out = [0, "s", 0, 0], todo = [];
    for (i = roots.length - 1; i >= 0; i--) todo.push([roots[i], 1]);
    while (todo.length) {
      var t = todo.pop(), n = t[0];
      out.push(nodes[n * 3 + 1] + 1, nodes[n * 3 + 2], t[1], self[n]);
      for (var k2 = kids[n].length - 1; k2 >= 0; k2--) todo.push([kids[n][k2], t[1] + 1]);
    }
    // Frames by inclusive weight in the range (each frame once per stack), for a glance.
    var bySelf = {};
    for (i = 0; i < N; i++) if (self[i] > 0) {
      var seen = {};
      for (var u = i; u >= 0; u = nodes[u * 3]) {
        if (nodes[u * 3 + 2] === "t") continue;
        var nm = names[nodes[u * 3 + 1]];
        if (!seen[nm]) { seen[nm] = 1; bySelf[nm] = (bySelf[nm] || 0) + self[i]; }
      }
    }
    var top = Object.keys(bySelf).sort(function (x, y) { return bySelf[y] - bySelf[x]; }).slice(0, 10);
    var ol = document.getElementById("top"); ol.innerHTML = "";
    top.forEach(function (nm) { var li = document.createElement("li"); li.textContent = bySelf[nm] + " " + nm; ol.appendChild(li); });
    var D = { title: H.title + " (" + fmt(a) + "-" + fmt(b + 1) + " s)", unit: H.unit, names: ["all"].concat(names), nodes: out };
    var json = JSON.stringify(D).replace(/</g, "\\u003c");
    var esc = D.title.replace(/&/g, "&amp;").replace(/</g, "&lt;");
    document.getElementById("flame").srcdoc = FG.head.replace("@TITLE@", esc) + json + FG.tail;
  }
  var m = /from=([0-9.]+)&to=([0-9.]+)/.exec(location.hash);
  if (m) {
    var a0 = Math.max(0, Math.round(parseFloat(m[1]) * rows)), b0 = Math.min(cols * rows, Math.round(parseFloat(m[2]) * rows)) - 1;
    if (b0 >= a0) { start = a0; end = b0; show(a0, b0); }
  }
})();
</script></body></html>
)HTML";

std::string safe_json(const std::string& json) {
  std::string s;
  s.reserve(json.size());
  for (const char ch : json) {
    if (ch == '<')
      s += "\\u003c";
    else
      s += ch;
  }
  return s;
}

char kind_char(const Profile& p, const Node& n) {
  if (n.frame == kNoFrame) return 't';
  switch (p.frames()[n.frame].kind) {
    case FrameKind::managed: return 'm';
    case FrameKind::native: return 'n';
    case FrameKind::runtime: return 'r';
    default: return 's';
  }
}

class HeatmapExporter final : public Exporter, public Listener {
 public:
  explicit HeatmapExporter(const ExportOptions& o) : o_(o) {}
  Listener* listener() override { return this; }

  void on_event(const TimelineEvent& e) override {
    if (e.kind == TimelineKind::sample)
      cpu_.push_back({e.time, e.node, 1});
    else if (e.kind == TimelineKind::alloc) {
      alloc_.push_back({e.time, e.node, 1});
      alloc_bytes_.push_back({e.time, e.node, e.value});
    }
  }

  bool write(const Profile& p, std::FILE* out, std::string& error) override {
    What what = effective_what(p, o_);
    if (!o_.what_given && what != What::alloc && what != What::alloc_bytes) what = What::cpu;
    const std::vector<Hit>& hits = what == What::alloc ? alloc_ : what == What::alloc_bytes ? alloc_bytes_ : cpu_;
    if (what != What::cpu && what != What::alloc && what != What::alloc_bytes) {
      error = "the heatmap shows cpu, alloc or alloc-bytes, not " + std::string(what_name(what));
      return false;
    }
    uint64_t t0 = p.window_from() ? p.window_from() : p.first_time();
    for (const Hit& h : hits) t0 = std::min(t0, h.time);
    uint64_t last = t0;
    for (const Hit& h : hits) last = std::max(last, h.time);
    const uint64_t cols = hits.empty() ? 1 : (last - t0) / 1000000000ULL + 1;
    if (cols > 7 * 86400) {
      error = "the profile spans more than a week; narrow it with --from/--to";
      return false;
    }
    std::vector<uint64_t> grid(cols * kRows, 0);
    std::vector<std::unordered_map<NodeId, uint64_t>> per_slot(cols * kRows);
    std::unordered_map<NodeId, int32_t> index;  // profile node -> page node
    std::vector<NodeId> used;
    for (const Hit& h : hits) {
      const uint64_t slot = (h.time - t0) / kSlotNs;
      grid[slot] += h.weight;
      per_slot[slot][h.node] += h.weight;
      for (NodeId n = h.node; n != 0 && !index.count(n); n = p.nodes()[n].parent) {
        index.emplace(n, -1);
        used.push_back(n);
      }
    }
    std::sort(used.begin(), used.end());  // parents before children (smaller ids)
    for (size_t i = 0; i < used.size(); ++i) index[used[i]] = static_cast<int32_t>(i);
    std::string json = "{\"title\":";
    json += json_string(std::string(what_name(what)) + " heatmap" + (o_.input_name.empty() ? "" : " - " + o_.input_name));
    json += ",\"unit\":" + json_string(what_unit(what));
    json += ",\"rows\":" + std::to_string(kRows) + ",\"cols\":" + std::to_string(cols) + ",\"grid\":[";
    for (size_t i = 0; i < grid.size(); ++i) json += (i ? "," : "") + std::to_string(grid[i]);
    json += "],\"names\":[";
    std::unordered_map<std::string, uint32_t> name_ids;
    std::vector<uint32_t> node_name(used.size());
    for (size_t i = 0; i < used.size(); ++i) {
      const Node& n = p.nodes()[used[i]];
      const std::string name = n.frame == kNoFrame ? thread_label(p.threads()[n.thread]) : p.frames()[n.frame].name;
      auto [it, inserted] = name_ids.try_emplace(name, static_cast<uint32_t>(name_ids.size()));
      if (inserted) json += (it->second ? "," : "") + json_string(name);
      node_name[i] = it->second;
    }
    json += "],\"nodes\":[";
    for (size_t i = 0; i < used.size(); ++i) {
      const Node& n = p.nodes()[used[i]];
      const int32_t parent = n.parent == 0 ? -1 : index[n.parent];
      json += (i ? "," : "") + std::to_string(parent) + "," + std::to_string(node_name[i]) + ",\"" + kind_char(p, n) + "\"";
    }
    json += "],\"slots\":[";
    for (size_t s = 0; s < per_slot.size(); ++s) {
      json += s ? ",[" : "[";
      bool first = true;
      for (const auto& [node, w] : per_slot[s]) {
        json += (first ? "" : ",") + std::to_string(index[node]) + "," + std::to_string(w);
        first = false;
      }
      json += "]";
    }
    json += "]}";
    std::string_view fg_head, fg_tail;
    html_flamegraph_template(fg_head, fg_tail);
    const std::string fg = "{\"head\":" + json_string(fg_head) + ",\"tail\":" + json_string(fg_tail) + "}";
    std::string head = kHead;
    head.replace(head.find("@TITLE@"), 7, "mlpd heatmap");
    const std::string page = head + safe_json(json) + "</script>\n<script id=\"fg\" type=\"application/json\">" +
                             safe_json(fg) + kTail;
    if (std::fwrite(page.data(), 1, page.size(), out) != page.size() || std::ferror(out)) {
      error = "write error";
      return false;
    }
    return true;
  }

 private:
  struct Hit {
    uint64_t time;
    NodeId node;
    uint64_t weight;
  };
  ExportOptions o_;
  std::vector<Hit> cpu_, alloc_, alloc_bytes_;
};

}  // namespace

std::unique_ptr<Exporter> make_heatmap_exporter(const ExportOptions& o) { return std::make_unique<HeatmapExporter>(o); }

}  // namespace mlpd::views
