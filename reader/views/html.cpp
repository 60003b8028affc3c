// The HTML flame graph: one self-contained page (our own CSS and JavaScript, the profile as JSON
// inside it; nothing is fetched at view time). Zoom on click, search with highlight, reset,
// flame/icicle toggle, tooltips with counts and percentages, colours by frame kind; for a diff,
// colours by growth (red) and shrinkage (blue).
#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "mlpd/json.h"
#include "mlpd/views.h"

namespace mlpd::views {

using namespace mlpd::profile;

namespace {

const char kPageHead[] = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
html,body{height:100%}
body{display:flex;flex-direction:column;margin:0;font:12px/1.3 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;background:#fafafa;color:#222}
header{padding:8px 12px;background:#fff;border-bottom:1px solid #ddd;display:flex;flex-wrap:wrap;gap:8px;align-items:center}
header h1{font-size:15px;margin:0 12px 0 0;font-weight:600}
header button,header input{font:inherit;padding:3px 8px;border:1px solid #bbb;border-radius:3px;background:#fff}
header button:hover{background:#eee}
#search{width:220px}
#info{color:#555;margin-left:auto}
.legend span{display:inline-block;padding:1px 6px;margin-right:4px;border-radius:2px;color:#222}
#wrap{flex:1;overflow:auto}
#chart{position:relative;margin:6px 12px;overflow:hidden}
.f{position:absolute;height:17px;box-sizing:border-box;border:1px solid rgba(255,255,255,.75);border-radius:2px;
 overflow:hidden;white-space:nowrap;text-overflow:ellipsis;padding:0 3px;line-height:15px;cursor:pointer;font-size:11px}
.f:hover{border-color:#000}
.f.match{background:#e040fb!important;color:#fff}
.f.dim{opacity:.55}
#tip{position:fixed;pointer-events:none;background:#fff;border:1px solid #888;padding:5px 8px;border-radius:3px;
 box-shadow:0 2px 6px rgba(0,0,0,.2);max-width:640px;display:none;z-index:10;word-break:break-all}
#matched{color:#8e24aa;font-weight:600}
</style></head><body>
<header><h1 id="title"></h1>
<button id="reset" title="show the whole profile">Reset zoom</button>
<button id="flip" title="switch between flame graph (root at the bottom) and icicle (root at the top)">Icicle</button>
<input id="search" type="search" placeholder="Search (regexp)" aria-label="search frames">
<button id="clear">Clear</button>
<span id="matched"></span>
<span class="legend" id="legend"></span>
<span id="info"></span>
</header>
<div id="wrap"><div id="chart"></div></div><div id="tip"></div>
<script id="profile" type="application/json">)HTML";

const char kPageTail[] = R"HTML(</script>
<script>
"use strict";
(function () {
  var D = JSON.parse(document.getElementById("profile").textContent);
  var names = D.names, raw = D.nodes, diff = !!D.diff, unit = D.unit;
  var STRIDE = diff ? 5 : 4;
  // Nodes in pre-order: [name, kind, depth, self, (base self)].
  var N = raw.length / STRIDE, kind = [], depth = [], selfB = [], selfA = [], parent = [], kids = [];
  var stack = [];
  for (var i = 0; i < N; i++) {
    kind.push(raw[i * STRIDE + 1]); depth.push(raw[i * STRIDE + 2]);
    selfB.push(raw[i * STRIDE + 3]); selfA.push(diff ? raw[i * STRIDE + 4] : 0);
    kids.push([]);
    while (stack.length && depth[stack[stack.length - 1]] >= depth[i]) stack.pop();
    var par = stack.length ? stack[stack.length - 1] : -1;
    parent.push(par);
    if (par >= 0) kids[par].push(i);
    stack.push(i);
  }
  var totA = 0, totB = 0;
  for (i = 0; i < N; i++) { totA += selfA[i]; totB += selfB[i]; }
  var scale = diff && totA > 0 ? totB / totA : 1;
  // Totals per node (B and A), and the width used for drawing.
  var valB = selfB.slice(), valA = selfA.slice(), wid = [];
  for (i = 0; i < N; i++) wid.push(diff ? Math.max(selfB[i], selfA[i] * scale) : selfB[i]);
  for (i = N - 1; i >= 0; i--) if (parent[i] >= 0) {
    valB[parent[i]] += valB[i]; valA[parent[i]] += valA[i]; wid[parent[i]] += wid[i];
  }
  var roots = []; for (i = 0; i < N; i++) if (parent[i] < 0) roots.push(i);
  var rootW = 0; roots.forEach(function (r) { rootW += wid[r]; });
  // x offsets (in width units) from the left edge of the whole profile.
  var x = new Array(N), acc = 0;
  roots.forEach(function (r) { x[r] = acc; acc += wid[r]; });
  for (i = 0; i < N; i++) { var c = x[i]; kids[i].forEach(function (k) { x[k] = c; c += wid[k]; }); }
  var KINDS = { m: ["managed", 110], n: ["native", 28], r: ["runtime", 215], s: ["special", 0], t: ["thread", 260] };
  function hash(s) { var h = 0; for (var j = 0; j < s.length; j++) h = (h * 31 + s.charCodeAt(j)) | 0; return Math.abs(h); }
  function colour(i) {
    if (diff) {
      var d = valB[i] - valA[i] * scale, m = Math.max(valB[i], valA[i] * scale, 1), r = Math.min(1, Math.abs(d) / m);
      var l = Math.round(95 - 45 * r);
      if (Math.abs(d) < 1e-9) return "hsl(0,0%,88%)";
      return d > 0 ? "hsl(0,85%," + l + "%)" : "hsl(220,85%," + l + "%)";
    }
    var k = KINDS[kind[i]] || KINDS.s, h = hash(names[raw[i * STRIDE]]);
    if (kind[i] === "s") return "hsl(0,0%," + (78 + h % 10) + "%)";
    return "hsl(" + (k[1] + h % 24) + "," + (55 + h % 25) + "%," + (62 + h % 14) + "%)";
  }
  var chart = document.getElementById("chart"), tip = document.getElementById("tip");
  var icicle = false, zoom = -1, re = null, H = 18;
  document.getElementById("title").textContent = D.title;
  document.title = D.title;
  var leg = document.getElementById("legend");
  if (diff) leg.innerHTML = '<span style="background:hsl(0,85%,60%)">grew</span><span style="background:hsl(220,85%,60%)">shrank</span>';
  else ["m", "n", "r"].forEach(function (k) {
    var s = document.createElement("span"); s.textContent = KINDS[k][0];
    s.style.background = "hsl(" + (KINDS[k][1] + 12) + ",65%,68%)"; leg.appendChild(s); });
  function fmt(v) { return unit === "nanoseconds" ? (v >= 1e9 ? (v / 1e9).toFixed(3) + " s" : v >= 1e6 ? (v / 1e6).toFixed(3) + " ms" : v >= 1e3 ? (v / 1e3).toFixed(1) + " us" : v + " ns") : Math.round(v).toLocaleString("en") + " " + unit; }
  function pct(a, b) { return b > 0 ? (100 * a / b).toFixed(2) + "%" : "-"; }
  function isAncestor(a, b) { for (var p = b; p >= 0; p = parent[p]) if (p === a) return true; return false; }
  function render() {
    chart.textContent = "";
    var W = chart.clientWidth || 1200, x0 = 0, span = rootW;
    if (zoom >= 0) { x0 = x[zoom]; span = wid[zoom]; }
    var minW = span / W * 0.8, vis = [], vmax = 0;
    for (var i = 0; i < N; i++) {
      var left, width, anc = zoom >= 0 && i !== zoom && isAncestor(i, zoom);
      if (anc) { left = 0; width = W; }
      else if (zoom >= 0 && !isAncestor(zoom, i)) continue;
      else {
        if (wid[i] < minW) continue;
        left = (x[i] - x0) / span * W; width = wid[i] / span * W;
      }
      vis.push([i, left, width, anc]);
      vmax = Math.max(vmax, depth[i]);
    }
    chart.style.height = ((vmax + 1) * H + 4) + "px";
    var frag = document.createDocumentFragment();
    vis.forEach(function (v) {
      var i = v[0], e = document.createElement("div");
      e.className = "f" + (re && re.test(names[raw[i * STRIDE]]) ? " match" : "") + (v[3] ? " dim" : "");
      e.style.left = v[1] + "px"; e.style.width = Math.max(v[2], 1) + "px";
      e.style.top = (icicle ? depth[i] * H : (vmax - depth[i]) * H) + "px";
      e.style.background = colour(i);
      if (v[2] > 28) e.textContent = names[raw[i * STRIDE]];
      e.setAttribute("data-i", i);
      frag.appendChild(e);
    });
    chart.appendChild(frag);
    document.getElementById("info").textContent = "total " + fmt(diff ? valB.reduce(function (s, v, j) { return parent[j] < 0 ? s + v : s; }, 0) : rootW) +
      (diff ? " (after), " + fmt(totA) + " (before)" : "") + (zoom >= 0 ? " - zoomed: " + names[raw[zoom * STRIDE]] : "");
    updateMatched();
  }
  function updateMatched() {
    var m = document.getElementById("matched");
    if (!re) { m.textContent = ""; return; }
    var sum = 0;
    for (var i = 0; i < N; i++) {
      if (!re.test(names[raw[i * STRIDE]])) continue;
      var covered = false;
      for (var p = parent[i]; p >= 0; p = parent[p]) if (re.test(names[raw[p * STRIDE]])) { covered = true; break; }
      if (!covered) sum += valB[i];
    }
    m.textContent = "matched: " + fmt(sum) + " (" + pct(sum, totB) + ")";
  }
  function search(q) {
    document.getElementById("search").value = q;
    if (!q) re = null;
    else { try { re = new RegExp(q, "i"); } catch (err) { re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i"); } }
    render();
  }
  chart.addEventListener("click", function (ev) {
    var t = ev.target.closest(".f"); if (!t) return;
    var i = +t.getAttribute("data-i"); zoom = (i === zoom) ? parent[i] : i; render();
  });
  chart.addEventListener("mousemove", function (ev) {
    var t = ev.target.closest(".f"); if (!t) { tip.style.display = "none"; return; }
    var i = +t.getAttribute("data-i"), k = KINDS[kind[i]] || KINDS.s, s = names[raw[i * STRIDE]] + "\n" + k[0] + "\n";
    if (diff) s += "before " + fmt(valA[i]) + ", after " + fmt(valB[i]) + " (" + (valB[i] - valA[i] * scale >= 0 ? "+" : "") + fmt(valB[i] - valA[i] * scale) + " normalised)";
    else s += fmt(valB[i]) + " (" + pct(valB[i], totB) + " of all" + (zoom >= 0 ? ", " + pct(valB[i], valB[zoom]) + " of zoom" : "") + "), self " + fmt(selfB[i]);
    tip.textContent = s; tip.style.whiteSpace = "pre-wrap"; tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 300) + "px"; tip.style.top = (ev.clientY + 14) + "px";
  });
  chart.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  document.getElementById("reset").onclick = function () { zoom = -1; render(); };
  document.getElementById("flip").onclick = function () { icicle = !icicle; this.textContent = icicle ? "Flame" : "Icicle"; render();
    wrap.scrollTop = icicle ? 0 : wrap.scrollHeight; };
  document.getElementById("search").addEventListener("input", function () { search(this.value); });
  document.getElementById("clear").onclick = function () { search(""); };
  window.addEventListener("resize", render);
  var h = decodeURIComponent(location.hash.slice(1));
  if (h.indexOf("search=") === 0) search(h.slice(7)); else render();
  var wrap = document.getElementById("wrap");
  if (!icicle) wrap.scrollTop = wrap.scrollHeight;  // a flame graph's root is at the bottom
})();
</script></body></html>
)HTML";

struct TreeNode {
  uint32_t name;
  char kind;
  uint64_t self = 0, base = 0;
  std::vector<uint32_t> kids;
};

void append_u64(std::string& s, uint64_t v) {
  char buf[24];
  s.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// The page's title may only contain escaped text.
std::string html_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

class HtmlExporter final : public Exporter {
 public:
  explicit HtmlExporter(const ExportOptions& o) : o_(o) {}
  bool write(const Profile& p, std::FILE* out, std::string& error) override;
  // The page, the names once, and one tree node for every stack node on a weighted path.
  uint64_t estimate(const Profile& p) override {
    const What what = effective_what(p, o_);
    const auto& nodes = p.nodes();
    std::vector<bool> on_path(nodes.size(), false);
    uint64_t tree = 0;
    for (profile::NodeId n = static_cast<profile::NodeId>(nodes.size()); n-- > 1;) {
      if (p.weight(what, n) == 0 && !on_path[n]) continue;
      if (!on_path[n]) on_path[n] = true;
      ++tree;
      on_path[nodes[n].parent] = true;
    }
    return sizeof kPageHead + sizeof kPageTail + estimate_names(p) + tree * 40;
  }

 private:
  ExportOptions o_;
};


// The tree of frames (children merged by name) that the page draws, built one stack at a time.
class FlameTree {
 public:
  FlameTree() {
    t_.push_back(TreeNode{0, 's', 0, 0, {}});  // a synthetic root: "all"
    names_.push_back("all");
    name_ids_.emplace("all", 0);
  }
  void add(const std::string& stack, const std::string& kinds, uint64_t weight, uint64_t base) {
    uint32_t cur = 0;
    size_t start = 0, k = 0;
    while (start <= stack.size()) {
      size_t end = stack.find(';', start);
      if (end == std::string::npos) end = stack.size();
      frame_.assign(stack, start, end - start);
      const char kind = k < kinds.size() ? kinds[k] : 's';
      auto [nit, ninserted] = name_ids_.try_emplace(frame_, static_cast<uint32_t>(names_.size()));
      if (ninserted) names_.push_back(frame_);
      const uint64_t key = (static_cast<uint64_t>(cur) << 32) | nit->second;
      auto [cit, cinserted] = child_.try_emplace(key, static_cast<uint32_t>(t_.size()));
      if (cinserted) {
        t_.push_back(TreeNode{nit->second, kind, 0, 0, {}});
        t_[cur].kids.push_back(cit->second);
      }
      cur = cit->second;
      ++k;
      start = end + 1;
    }
    t_[cur].self += weight;
    t_[cur].base += base;
  }
  std::string html(const std::string& title, const std::string& unit, bool diff) const;

 private:
  std::vector<TreeNode> t_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::unordered_map<uint64_t, uint32_t> child_;  // (parent << 32 | name) -> node
  std::string frame_;
};

}  // namespace

std::string flame_graph_html(const FlameGraphInput& in) {
  FlameTree tree;
  for (size_t s = 0; s < in.stacks.size(); ++s)
    tree.add(in.stacks[s].stack, in.stacks[s].kinds, in.stacks[s].weight,
             in.diff && s < in.base.size() ? in.base[s] : 0);
  return tree.html(in.title, in.unit, in.diff);
}

namespace {

std::string FlameTree::html(const std::string& title, const std::string& unit, bool diff) const {
  const std::vector<TreeNode>& t = t_;
  const std::vector<std::string>& names = names_;
  std::string json = "{\"title\":";
  json_escape_into(json, title);
  json += ",\"unit\":";
  json_escape_into(json, unit);
  json += ",\"diff\":";
  json += diff ? "true" : "false";
  json += ",\"names\":[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) json += ',';
    json_escape_into(json, names[i]);
  }
  json += "],\"nodes\":[";
  // Pre-order, children heaviest first... in name order, like flamegraph.pl (stable, diffable).
  std::vector<std::pair<uint32_t, uint32_t>> todo{{0, 0}};  // node, depth
  bool first = true;
  while (!todo.empty()) {
    const auto [n, d] = todo.back();
    todo.pop_back();
    if (!first) json += ',';
    first = false;
    append_u64(json, t[n].name);
    json += ",\"";
    json += t[n].kind;
    json += "\",";
    append_u64(json, d);
    json += ',';
    append_u64(json, t[n].self);
    if (diff) {
      json += ',';
      append_u64(json, t[n].base);
    }
    std::vector<uint32_t> kids = t[n].kids;
    std::sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) { return names[t[a].name] > names[t[b].name]; });
    for (uint32_t c : kids) todo.push_back({c, d + 1});
  }
  json += "]}";
  // Inside <script>, "</" must not appear literally.
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else if (json[i] == '<' && json.compare(i, 4, "<!--") == 0) {
      safe += "\\u003c";
    } else {
      safe += json[i];
    }
  }
  std::string head = kPageHead;
  const size_t at = head.find("@TITLE@");
  head.replace(at, 7, html_escape(title));
  return head + safe + kPageTail;
}

bool HtmlExporter::write(const Profile& p, std::FILE* out, std::string& error) {
  const What what = effective_what(p, o_);
  FlameTree tree;
  for_each_collapsed(p, what, o_.threads, [&](const std::string& stack, const std::string& kinds, uint64_t weight) {
    tree.add(stack, kinds, weight, 0);
  });
  const std::string page =
      tree.html(std::string(what_name(what)) + " flame graph" + (o_.input_name.empty() ? "" : " - " + o_.input_name),
                std::string(what_unit(what)), false);
  if (std::fwrite(page.data(), 1, page.size(), out) != page.size() || std::ferror(out)) {
    error = "write error";
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Exporter> make_html_exporter(const ExportOptions& o) { return std::make_unique<HtmlExporter>(o); }

void html_flamegraph_template(std::string_view& head, std::string_view& tail) {
  head = kPageHead;
  tail = kPageTail;
}

}  // namespace mlpd::views
