// mlpd heapshots --diff A B --retained and --suspects: what grew between heapshots, by retained bytes
// (docs/reports.md "What grew"): the heapshots read, and the growth and suspects (views/retention.cpp) as text and JSON.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "heapshots_retained.h"
#include "out_buffer.h"

namespace mlpd::cli {

using namespace heapshots_detail;
using views::Growth;
using views::Retention;

namespace {

constexpr char kCmd[] = "heapshots";

std::string signed_str(int64_t v) {
  std::string s = v >= 0 ? "+" : "";
  s += std::to_string(v);
  return s;
}

void growth_json(OutBuffer& out, const std::vector<Growth>& v, uint64_t top, bool objects) {
  size_t shown = 0;
  for (const Growth& g : v) {
    if (shown == top) break;
    if (shown++) out.put(',');
    out.put(objects ? "{\"name\":" : "{\"path\":").json(g.name).put(",\"retained\":").sdec(g.retained);
    if (objects) out.put(",\"objects\":").sdec(g.objects);
    out.put(",\"from\":").dec(g.from).put(",\"to\":").dec(g.to).put('}');
  }
}

void growth_text(OutBuffer& out, const std::vector<Growth>& v, uint64_t top, bool objects) {
  size_t shown = 0;
  for (const Growth& g : v) {
    if (shown == top) break;
    ++shown;
    out.put("  ");
    padded(out, signed_str(g.retained), 12);
    if (objects) {
      out.put(' ');
      padded(out, signed_str(g.objects), 10);
    }
    out.put("  ").text(g.name, false).put('\n');
  }
  if (shown < v.size()) out.put("  (").dec(v.size() - shown).put(" more)\n");
}

int run_diff(const RetainedRequest& q) {
  const uint32_t fold_depth = static_cast<uint32_t>(std::min<uint64_t>(q.depth, 64));
  OutBuffer out(stdout);
  int status = 0;
  const bool two = q.files.size() == 2;
  FileResult fa, fb;
  if (two) {
    fa = read_heapshots(kCmd, q.files[0], false, false, 0, [&q](size_t i) { return i == q.diff_from; }, false, fold_depth);
    fb = read_heapshots(kCmd, q.files[1], false, false, 0, [&q](size_t i) { return i == q.diff_to; }, false, fold_depth);
  } else {
    fa = read_heapshots(kCmd, q.files[0], false, false, 0,
                        [&q](size_t i) { return i == q.diff_from || i == q.diff_to; }, false, fold_depth);
  }
  if (!fa.opened || (two && !fb.opened)) return 1;
  if (fa.problems || fb.problems) status = 1;
  if (!index_ok(fa, q.diff_from, q.files[0]) || !index_ok(two ? fb : fa, q.diff_to, q.files[two ? 1 : 0]))
    return 2;
  auto find = [](const FileResult& f, uint64_t i) -> const Retention* {
    for (const Retention& r : f.results)
      if (r.index == i) return &r;
    return nullptr;
  };
  const Retention* pa = find(fa, q.diff_from);
  const Retention* pb = find(two ? fb : fa, q.diff_to);
  if (!pa || !pb) {  // not expected: every heapshot asked for is handed over, analysed or with an error
    std::fprintf(stderr, "mlpd %s: heapshot %llu or %llu could not be read\n", kCmd,
                 static_cast<unsigned long long>(q.diff_from), static_cast<unsigned long long>(q.diff_to));
    return 1;
  }
  const Retention& a = *pa;
  const Retention& b = *pb;
  if (report_error(a) || report_error(b)) return 1;
  const std::vector<Growth> classes = views::class_growth(a, b);
  const std::vector<Growth> subtrees = views::subtree_growth(a, b, fold_depth);
  if (q.json) {
    out.put("{\"from\":").dec(a.index).put(",\"to\":").dec(b.index).put(",\"retained\":");
    out.sdec(static_cast<int64_t>((b.bytes - b.unreached_bytes) - (a.bytes - a.unreached_bytes)));
    out.put(",\"classes\":[");
    growth_json(out, classes, q.top, true);
    out.put("],\"subtrees\":[");
    growth_json(out, subtrees, q.top, false);
    out.put("]}\n");
  } else {
    out.put("heapshot ").dec(a.index).put(" -> ").dec(b.index).put(" (");
    seconds(out, a.time_ns, "%.3f");
    out.put(" s -> ");
    seconds(out, b.time_ns, "%.3f");
    out.put(" s), growth of retained bytes\n  by class:\n      retained    objects  class\n");
    growth_text(out, classes, q.top, true);
    out.put("  by dominator subtree (held by > class path):\n      retained  subtree\n");
    growth_text(out, subtrees, q.top, false);
  }
  return finish_output(out, status);
}

int run_suspects(const RetainedRequest& q) {
  const uint32_t fold_depth = static_cast<uint32_t>(std::min<uint64_t>(q.depth, 64));
  OutBuffer out(stdout);
  int status = 0;
  FileResult f = read_heapshots(kCmd, q.files[0], false, false, 0, nullptr, false, fold_depth);
  if (!f.opened) return 1;
  if (f.problems) status = 1;
  for (const Retention& r : f.results)
    if (report_error(r)) return 1;
  if (f.results.size() < 3) {
    std::fprintf(stderr, "mlpd %s: --suspects needs 3 heapshots or more; '%s' has %zu\n", kCmd,
                 q.files[0].c_str(), f.results.size());
    return 2;
  }
  const std::vector<views::Suspect> suspects = views::leak_suspects(f.results, fold_depth);
  size_t shown = 0;
  if (q.json) {
    out.put("{\"heapshots\":").dec(f.results.size()).put(",\"suspects\":[");
    for (const auto& [path, v] : suspects) {
      if (shown == q.top) break;
      if (shown++) out.put(',');
      out.put("{\"path\":").json(path).put(",\"growth\":").dec(v.back() - v.front()).put(",\"retained\":[");
      for (size_t i = 0; i < v.size(); ++i) (i ? out.put(',') : out).dec(v[i]);
      out.put("]}");
    }
    out.put("]}\n");
  } else {
    out.put("subtrees whose retained bytes grew over the ").dec(f.results.size());
    out.put(" heapshots (never shrank, grew at most steps):\n");
    out.put("        growth  first -> last  subtree\n");
    for (const auto& [path, v] : suspects) {
      if (shown == q.top) break;
      ++shown;
      out.put("  ");
      padded(out, "+" + std::to_string(v.back() - v.front()), 12);
      out.put("  ").dec(v.front()).put(" -> ").dec(v.back()).put("  ").text(path, false).put('\n');
    }
    if (suspects.empty()) out.put("  (none)\n");
  }
  return finish_output(out, status);
}

}  // namespace

int run_growth(const RetainedRequest& q) {
  return q.view == RetainedRequest::View::diff ? run_diff(q) : run_suspects(q);
}

}  // namespace mlpd::cli
