// mlpd heapshots --diff A B --retained and --suspects: what grew between heapshots, by retained bytes
// (docs/reports.md "What grew"): the heapshots read, the growth and suspects computed (views/retention.cpp)
// and rendered (mlpd/heap_views.h).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "heapshots_retained.h"
#include "mlpd/heap_views.h"
#include "out_buffer.h"

namespace mlpd::cli {

using namespace heapshots_detail;
using views::Growth;
using views::Retention;

namespace {

constexpr char kCmd[] = "heapshots";

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
  std::string text;
  q.json ? views::growth_json(text, a, b, classes, subtrees, q.top) : views::growth_text(text, a, b, classes, subtrees, q.top);
  out.write(text);
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
  std::string text;
  q.json ? views::suspects_json(text, f.results.size(), suspects, q.top)
         : views::suspects_text(text, f.results.size(), suspects, q.top);
  out.write(text);
  return finish_output(out, status);
}

}  // namespace

int run_growth(const RetainedRequest& q) {
  return q.view == RetainedRequest::View::diff ? run_diff(q) : run_suspects(q);
}

}  // namespace mlpd::cli
