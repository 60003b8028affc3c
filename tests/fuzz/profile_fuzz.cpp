// libFuzzer target for the profile model (reader/profile) and its views: the input is a whole (plain
// or gzip) mlpd file, built into a Profile with a listener, then reported (text and JSON), collapsed
// for every --what and drawn as an HTML flame graph. Checks the model's promises on untrusted input:
// no crash, bounded work; every node's parent comes before it; each --what's weights sum to its
// total and the collapsed export sums to the same; the listener sees every enter closed by exactly
// one leave, per thread, in LIFO order. Any violation aborts (a crash for libFuzzer). The speedscope
// (evented), trace and pprof exporters get the events too and write to /dev/null. The heapshots go
// through the retention analysis (mlpd/retention.h): dominators, class retained sizes, the folded
// tree and paths, with its invariants checked. The model is built again without a listener by one
// thread and by the parallel build (BuildOptions::jobs, issue 25), and the two must be equal in every
// field (tests/support/profile_fingerprint.h).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "mlpd/heap/heap_graph.h"
#include "mlpd/input.h"
#include "mlpd/retention.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"
#include "profile_fingerprint.h"

namespace {

using namespace mlpd::profile;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "profile_fuzz: %s\n", what);
  std::abort();
}

class Balance final : public Listener {
 public:
  void on_event(const TimelineEvent& e) override {
    if (e.kind != TimelineKind::enter && e.kind != TimelineKind::leave) return;
    if (e.thread >= open.size()) open.resize(e.thread + 1);
    auto& s = open[e.thread];
    if (e.kind == TimelineKind::enter) {
      s.push_back(e.node);
    } else {
      if (s.empty() || s.back() != e.node) violated("a leave that does not close the innermost open enter");
      s.pop_back();
    }
  }
  std::vector<std::vector<NodeId>> open;
};

// Hands each event to every listener (the balance check and the exporters').
class Tee final : public Listener {
 public:
  void on_event(const TimelineEvent& e) override {
    for (Listener* l : to)
      if (l) l->on_event(e);
  }
  std::vector<Listener*> to;
};

// Every heapshot of the input, analysed: no class retains more than is reached, the folded tree's
// parents come first and its top-level subtrees add up to at most what is reached, paths end at
// their class.
void check_retention(const uint8_t* data, size_t size) {
  std::vector<mlpd::HeapGraph> graphs;
  mlpd::HeapGraphCollector::Options o;
  o.offsets = true;
  o.done = [&graphs](mlpd::HeapGraph&& g) {
    if (graphs.size() < 4) graphs.push_back(std::move(g));
  };
  mlpd::HeapGraphCollector c(std::move(o));
  std::unique_ptr<mlpd::Input> input = mlpd::Input::from_memory(data, size);
  mlpd::decode(*input, c);
  c.finish();
  for (mlpd::HeapGraph& g : graphs) {
    c.label(g);
    mlpd::views::RetentionAnalysis a(std::move(g), c.names(), {});
    const mlpd::views::Retention& r = a.result();
    if (!r.error.empty()) continue;
    const uint64_t reached = r.bytes - r.unreached_bytes;
    if (r.unreached_bytes > r.bytes || r.unreached_objects > r.objects) violated("more unreached than listed");
    for (const auto& k : r.classes)
      if (k.retained > reached) violated("a class retains more than is reached");
    uint64_t tops = 0;
    for (size_t i = 0; i < r.folded.size(); ++i) {
      const auto& f = r.folded[i];
      if (f.parent == UINT32_MAX) {
        tops += f.retained;
        if (f.root >= r.roots.size()) violated("a folded subtree without its root");
      } else if (f.parent >= i || r.folded[f.parent].retained < f.retained) {
        violated("a folded node before its parent, or retaining more than it");
      }
    }
    if (tops > reached) violated("the top-level subtrees retain more than is reached");
    if (!r.classes.empty()) {
      uint64_t instances = 0;
      for (const auto& path : a.paths(r.classes[0].name, 3, instances))
        if (path.steps.empty() || path.steps.back().klass != r.classes[0].name) violated("a path not ending at its class");
    }
  }
}

// The parallel build equals the one-thread build, with the same small bounds.
void check_parallel(const uint8_t* data, size_t size) {
  BuildOptions o;
  o.max_depth = 64;
  o.max_nodes = 4096;
  Profile one, many;
  std::unique_ptr<mlpd::Input> a = mlpd::Input::from_memory(data, size);
  build_profile(*a, one, o);
  o.jobs = 3;
  o.reopen = [data, size](size_t) { return mlpd::Input::from_memory(data, size); };
  std::unique_ptr<mlpd::Input> b = mlpd::Input::from_memory(data, size);
  build_profile(*b, many, o);
  if (mlpd::test::profile_fingerprint(one) != mlpd::test::profile_fingerprint(many))
    violated("the parallel build differs from the one-thread build");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_retention(data, size);
  check_parallel(data, size);
  std::unique_ptr<mlpd::Input> input = mlpd::Input::from_memory(data, size);
  Profile p;
  Balance balance;
  mlpd::views::ExportOptions calls_options;
  calls_options.what = What::calls;
  calls_options.what_given = true;
  auto speedscope = mlpd::views::make_speedscope_exporter(calls_options);
  auto trace = mlpd::views::make_trace_exporter(calls_options);
  Tee tee;
  tee.to = {&balance, speedscope->listener(), trace->listener()};
  BuildOptions o;
  o.listener = &tee;
  o.max_depth = 64;     // small bounds, so that the fuzzer reaches them
  o.max_nodes = 4096;
  build_profile(*input, p, o);
  for (const auto& s : balance.open)
    if (!s.empty()) violated("an enter never closed");
  for (size_t n = 1; n < p.nodes().size(); ++n) {
    const Node& nd = p.nodes()[n];
    if (nd.parent >= n) violated("a node's parent does not come before it");
    if (nd.frame != kNoFrame && nd.frame >= p.frames().size()) violated("a node's frame is out of range");
    if (nd.thread >= p.threads().size()) violated("a node's thread is out of range");
  }
  if (p.nodes().size() > 4096 + 2 * p.threads().size() + 1) violated("max_nodes not respected");
  for (size_t w = 0; w < kWhatCount; ++w) {
    const What what = static_cast<What>(w);
    uint64_t sum = 0;
    for (size_t n = 0; n < p.nodes().size(); ++n) sum += p.weight(what, static_cast<NodeId>(n));
    if (sum != p.total(what)) violated("weights do not sum to the total");
    uint64_t collapsed = 0;
    for (const auto& s : mlpd::views::collapse(p, what, w % 2 == 1)) collapsed += s.weight;
    if (collapsed != sum) violated("the collapsed stacks do not sum to the total");
  }
  for (const Frame& f : p.frames())
    if (f.name.empty()) violated("a frame without a name");
  std::FILE* null = std::fopen("/dev/null", "wb");
  if (!null) return 0;
  std::string error;
  mlpd::views::ReportOptions ro;
  mlpd::views::write_report(p, ro, null, error);
  ro.json = true;
  ro.top = 3;
  mlpd::views::write_report(p, ro, null, error);
  if (!p.threads().empty()) {
    ro.has_thread = true;
    ro.thread = std::to_string(p.threads()[0].id);
    mlpd::views::write_report(p, ro, null, error);
  }
  mlpd::views::ExportOptions eo;
  eo.what = What::alloc;
  eo.what_given = true;
  mlpd::views::make_html_exporter(eo)->write(p, null, error);
  speedscope->write(p, null, error);
  trace->write(p, null, error);
  for (size_t w = 0; w < kWhatCount; ++w) {
    eo.what = static_cast<What>(w);
    mlpd::views::make_pprof_exporter(eo)->write(p, null, error);
  }
  std::fclose(null);
  return 0;
}
