// CounterSampler with the profiler counters, without Mono: threads write events (and end) while the
// helper samples and flushes; the final sample's "Event: KIND" values, added up as mprof-report does,
// equal the number of KIND events in the decoded file, every sampled counter is described before, and
// a counter discovered later (as Mono's runtime counters are) is described and sampled after it.
#include "mlpd_catch.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "mlpd/agent/counter_sampler.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/agent/profiler_counters.h"
#include "mlpd/checks.h"
#include "mlpd/counter_set.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/input.h"
#include "mlpd/rt/events.h"

using namespace mlpd;

namespace {

struct Collector : Visitor {
  std::map<std::string, uint64_t> counts;      // per kind, as verify --json counts
  std::map<uint64_t, CounterDesc> descs;       // index -> descriptor
  std::map<uint64_t, uint64_t> totals;         // index -> value added up
  std::map<uint64_t, int> described;           // index -> times described
  std::vector<std::string> problems;
  ReferenceChecker checker;
  void on_event(const Event& e, const EventInfo&) override {
    ++counts[std::string(event_kind_name(e.kind))];
    if (std::string r = checker.check(e); !r.empty()) problems.push_back(r);
    if (e.kind == EventKind::counter_descriptors) {
      for (const CounterDesc& d : e.counter_descs) {
        descs[d.index] = d;
        ++described[d.index];
      }
    }
    if (e.kind == EventKind::counter_samples) {
      for (const CounterValue& v : e.counter_values) totals[v.index] = accumulate_counter(v.type, totals[v.index], v.bits);
    }
  }
  void on_problem(const Problem& p) override { problems.push_back(p.message); }
  uint64_t value(const std::string& name) const {
    for (const auto& [i, d] : descs) {
      if (d.name == name) {
        auto it = totals.find(i);
        return it == totals.end() ? ~uint64_t{0} : it->second;
      }
    }
    return ~uint64_t{0};
  }
};

struct Late {
  bool ready = false;   // "registered by the runtime" from the third sample on
  bool added = false;
  uint64_t value = 0;
};

void discover(agent::CounterSampler& s, void* ctx) {
  auto* late = static_cast<Late*>(ctx);
  if (!late->ready || late->added) return;
  agent::CounterSampler::Source src;
  src.desc.section = 0x100;  // JIT
  src.desc.name = "Late runtime counter";
  src.desc.type = format::COUNTER_INT;
  src.desc.variance = format::COUNTER_VARIANCE_MONOTONIC;
  src.read = [](const void* c, uint64_t, uint64_t& bits) {
    bits = static_cast<uint32_t>(static_cast<const Late*>(c)->value);
    return true;
  };
  src.ctx = late;
  REQUIRE(s.add(src));
  late->added = true;
}

}  // namespace

TEST_CASE("profiler counters describe the file they are written to", "[agent][counters]") {
  rt::BufferPool pool(4096, 4096);
  rt::FlushQueue queue;
  rt::WriterShared shared;
  shared.pool = &pool;
  shared.queue = &queue;
  rt::ThreadRegistry registry(shared);
  rt::MetaLog meta(1, rt::now_ns());
  agent::Flusher flusher(shared, registry, meta);
  agent::CounterSampler sampler(registry, meta);
  agent::register_profiler_counters(sampler, {&flusher.stats(), &pool, &shared});
  Late late;
  sampler.set_discover(discover, &late);

  std::vector<uint8_t> file;
  encode_file_header(FileHeader{}, file);
  // Method 0x5000 is described before any thread uses it.
  Event jit;
  jit.reset(EventKind::method_jit);
  jit.method = 0x5000;
  jit.name = "M";
  meta.add(jit, rt::now_ns);

  std::atomic<int> running{3};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      rt::ThreadLog* log = registry.get();
      for (int i = 0; i < 3000 * (t + 1); ++i) {
        rt::write_method(*log, format::TYPE_ENTER, rt::now_ns(), 0x5000);
        rt::write_method(*log, format::TYPE_LEAVE, rt::now_ns(), 0x5000);
        if (i % 100 == 0) rt::write_gc_resize(*log, rt::now_ns(), 4096 + i);
        if (t == 2 && i % 1000 == 0) rt::write_bare(*log, format::TYPE_GC | format::TYPE_GC_FINALIZE_START, rt::now_ns());
      }
      running.fetch_sub(1);
      // the thread ends here: its log is retired and freed, its counts kept by the registry
    });
  }
  int samples = 0;
  // Until a round has written some of the threads' buffers too: on a loaded machine the threads may
  // run start to end within one round, and the final sample below would then see 0 bytes written.
  while (running.load() > 0 || samples < 4 || flusher.stats().buffers_written == 0) {
    late.ready = samples >= 2;
    late.value += 7;
    sampler.sample();
    ++samples;
    flusher.round(file, true, rt::now_ns());
    std::this_thread::yield();
  }
  for (std::thread& th : threads) th.join();
  // Shutdown: one more event from this thread, the final sample, the final round.
  rt::write_sync_point(*registry.get(), rt::now_ns(), format::SYNC_POINT_PERIODIC);
  late.value = 1000;
  sampler.sample();
  registry.thread_exit();
  flusher.round(file, true, rt::now_ns());

  Collector c;
  auto input = Input::from_memory(file.data(), file.size());
  const DecodeSummary summary = decode(*input, c);
  REQUIRE(summary.header_ok);
  INFO(c.problems.size() << " problems, first: " << (c.problems.empty() ? "" : c.problems[0]));
  CHECK(c.problems.empty());
  CHECK(c.counts["counter_samples"] == static_cast<uint64_t>(samples) + 1);
  CHECK(c.counts["method_enter"] == 3000 + 6000 + 9000);
  for (size_t k = 0; k < kEventKindCount; ++k) {
    const std::string kind(kEventKindNames[k]);
    INFO(kind);
    CHECK(c.value("Event: " + kind) == c.counts[kind]);
  }
  for (const auto& [index, n] : c.described) CHECK(n == 1);
  CHECK(c.value("Late runtime counter") == 1000);
  CHECK(c.value("Events dropped") == 0);
  CHECK(c.value("Buffers allocated") == pool.allocated());
  CHECK(c.value("Bytes written") > 0);
  CHECK(c.value("Buffers written") > 0);
}
