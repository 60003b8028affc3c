// mlpd_totals FILE: prints the totals our reader computes (mlpd::Totals), one `total.NAME VALUE` line
// each, for comparison with mprof-report in the integration tests. Exit 1 if the file has problems.
#include <cstdio>
#include <string>

#include "mlpd/decoder.h"
#include "mlpd/totals.h"

namespace {
class TotalsVisitor final : public mlpd::Visitor {
 public:
  void on_event(const mlpd::Event& e, const mlpd::EventInfo& info) override { totals.add(e, *info.buffer); }
  void on_problem(const mlpd::Problem& p) override {
    std::fprintf(stderr, "offset %llu (buffer %lld): %s\n", static_cast<unsigned long long>(p.offset),
                 static_cast<long long>(p.buffer), p.message.c_str());
    ok = false;
  }
  mlpd::Totals totals;
  bool ok = true;
};

void line(const std::string& name, unsigned long long v) { std::printf("total.%s %llu\n", name.c_str(), v); }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mlpd_totals FILE\n");
    return 2;
  }
  std::string error;
  auto input = mlpd::Input::open(argv[1], error);
  if (!input) {
    std::fprintf(stderr, "mlpd_totals: %s: %s\n", argv[1], error.c_str());
    return 1;
  }
  TotalsVisitor v;
  mlpd::decode(*input, v);
  const mlpd::Totals& t = v.totals;
  line("calls", t.calls);
  line("alloc_objects", t.alloc_objects);
  line("alloc_bytes", t.alloc_bytes);
  line("throws", t.throws);
  const char* clause_names[] = {"catch", "filter", "finally", "", "fault"};
  for (size_t i = 0; i < t.clauses.size(); ++i)
    if (*clause_names[i]) line(std::string("clauses.") + clause_names[i], t.clauses[i]);
  line("gc_resizes", t.gc_resizes);
  line("gc_moved_objects", t.gc_moved_objects);
  for (size_t g = 0; g < t.gc_collections.size(); ++g) line("gc_collections.gen" + std::to_string(g), t.gc_collections[g]);
  const char* handle_names[] = {"weak", "weaktrack", "normal", "pinned"};
  for (size_t i = 0; i < 4; ++i) {
    line(std::string("gc_handles_created.") + handle_names[i], t.handles_created[i]);
    line(std::string("gc_handles_destroyed.") + handle_names[i], t.handles_destroyed[i]);
  }
  line("monitor.contention", t.monitor[1]);
  line("monitor.done", t.monitor[2]);
  line("monitor.fail", t.monitor[3]);
  line("jit_methods", t.jit_methods);
  line("jit_helpers", t.jit_helpers);
  line("sample_hits", t.sample_hits);
  line("heapshots", t.heapshots.size());
  for (size_t i = 0; i < t.heapshots.size(); ++i) {
    line("heapshot." + std::to_string(i) + ".objects", t.heapshots[i].objects);
    line("heapshot." + std::to_string(i) + ".bytes", t.heapshots[i].bytes);
  }
  return v.ok ? 0 : 1;
}
