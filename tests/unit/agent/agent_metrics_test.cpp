// What `GET /metrics` answers (agent/src/agent_metrics.h), from a fake runtime behind the door
// (fake_runtime.h) and the agent's counters (agent/src/counters.h): the runtime's counters under .NET's
// metric names (CoreCLR's generations made "collected up to", Mono's minor and major collections,
// values the runtime cannot read or events not recorded left out, never 0), the pause histogram
// cumulative, the sampling and push figures; and /proc/self/stat's reading (parse_proc_self_stat):
// CPU ticks, threads, virtual size and resident pages from their fields (14, 15, 20, 23, 24) whatever
// the command name holds, a cut or garbled line refused, this process's own line.
#include "mlpd_catch.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "../../../agent/src/agent_metrics.h"
#include "../../../agent/src/counters.h"
#include "emulated.h"
#include "fake_runtime.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/format.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"

using namespace mlpd;

namespace {

runtime::Counter counter(uintptr_t handle, const char* name, uint64_t type = format::COUNTER_ULONG,
                         size_t size = 8) {
  runtime::Counter c;
  c.handle = reinterpret_cast<void*>(handle);
  c.desc.section = 0x80;
  c.desc.name = name;
  c.desc.type = type;
  c.size = size;
  return c;
}

// The agent's side of a scrape: its writer, counters and statistics around `rt`.
struct Agent {
  rt::BufferPool pool{4096, 16};
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::ThreadRegistry registry{shared};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::FlushStats flush;
  test::FakeRuntime& runtime;
  agent::AgentCounters counters;
  explicit Agent(test::FakeRuntime& r)
      : runtime(r), counters(r, registry, meta, agent::ProfilerCounterSources{&flush, &pool, &shared, nullptr}) {
    shared.pool = &pool;
    shared.queue = &queue;
  }
  std::string scrape(bool push = false, agent::PushStats ps = {}) {
    counters.sample();  // the counter sampler finds the runtime's counters as the helper's rounds do
    agent::MetricsInputs in;
    in.runtime = &runtime;
    in.counters = &counters;
    in.flush = &flush;
    in.pool = &pool;
    in.shared = &shared;
    in.registry = &registry;
    in.meta = &meta;
    in.rounds = 17;
    in.scrapes = 3;
    in.push = push;
    in.push_sender = ps;
    return agent::render_metrics(in);
  }
};

bool has_line(const std::string& text, const std::string& line) {
  return text.starts_with(line + "\n") || text.find("\n" + line + "\n") != std::string::npos;
}

std::string read_self_stat() {
  char buf[2048];
  FILE* f = std::fopen("/proc/self/stat", "r");  // no REQUIRE: also called on a thread of the test's
  if (!f) return {};
  const size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  return std::string(buf, n);
}

}  // namespace

TEST_CASE("metrics: /proc/self/stat's fields", "[agent][metrics]") {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15)
  // cutime cstime priority(18) nice(19) num_threads(20) itrealvalue starttime(22) vsize(23) rss(24) ...
  const std::string line =
      "77 (a (b) c) R 1 77 77 0 -1 4194560 10 0 0 0 321 45 0 0 -2 -20 9 0 5555 104857600 2560 "
      "18446744073709551615 1 1 0 0 0 0 0 4096 1260 0 0 0 17 1 0 0 0 0 0\n";
  agent::ProcStat s;
  REQUIRE(agent::parse_proc_self_stat(line, s));
  CHECK(s.utime == 321);
  CHECK(s.stime == 45);
  CHECK(s.threads == 9);
  CHECK(s.vsize == 104857600);
  CHECK(s.rss_pages == 2560);

  SECTION("cut after starttime: no vsize or rss") {
    const std::string cut = line.substr(0, line.find(" 104857600"));
    CHECK_FALSE(agent::parse_proc_self_stat(cut, s));
  }
  SECTION("no command name") { CHECK_FALSE(agent::parse_proc_self_stat("77 a R 1 2 3", s)); }
  SECTION("a letter in the thread count") {
    std::string bad = line;
    bad.replace(bad.find(" 9 0 5555"), 3, " 9x");
    CHECK_FALSE(agent::parse_proc_self_stat(bad, s));
  }
}

TEST_CASE("metrics: this process's own stat line", "[agent][metrics]") {
  if (test::running_emulated()) {
    WARN("under qemu-user /proc/self/stat's counts are emulated (threads, vsize, rss read 0): not tried");
    return;
  }
  agent::ProcStat before;
  REQUIRE(agent::parse_proc_self_stat(read_self_stat(), before));
  CHECK(before.threads >= 1);
  CHECK(before.vsize > 0);
  CHECK(before.rss_pages > 0);
  CHECK(before.rss_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) <= before.vsize);
  // This thread and one more while it lives (other tests' threads may come and go meanwhile).
  agent::ProcStat during;
  bool parsed = false;
  std::thread t([&] { parsed = agent::parse_proc_self_stat(read_self_stat(), during); });
  t.join();
  REQUIRE(parsed);
  CHECK(during.threads >= 2);
  CHECK(during.utime + during.stime >= before.utime + before.stime);  // CPU time does not go back
}

TEST_CASE("metrics: CoreCLR's counters under .NET's names, unreadable ones left out", "[agent][metrics]") {
  test::FakeRuntime rt;
  rt.runtime_name = "coreclr";
  rt.mask = format::MASK_GC;
  rt.fresh = {counter(1, "dotnet.gc.collections.gen0"), counter(2, "dotnet.gc.collections.gen1"),
              counter(3, "dotnet.gc.collections.gen2"), counter(4, "dotnet.thread.count"),
              counter(5, "dotnet.gc.heap.size"), counter(6, "dotnet.jit.compiled_methods")};
  rt.values = {{reinterpret_cast<void*>(1), 10}, {reinterpret_cast<void*>(2), 4}, {reinterpret_cast<void*>(3), 1},
               {reinterpret_cast<void*>(4), 7}, {reinterpret_cast<void*>(6), 321}};  // the heap size: unreadable
  Agent a(rt);
  const std::string m = a.scrape();
  INFO(m);
  CHECK(has_line(m, "mlpd_info{runtime=\"coreclr\"} 1"));
  // GC.CollectionCount(g) - GC.CollectionCount(g + 1): the collections whose oldest generation was g.
  CHECK(has_line(m, "dotnet_gc_collections_total{gc_heap_generation=\"gen0\"} 6"));
  CHECK(has_line(m, "dotnet_gc_collections_total{gc_heap_generation=\"gen1\"} 3"));
  CHECK(has_line(m, "dotnet_gc_collections_total{gc_heap_generation=\"gen2\"} 1"));
  CHECK(has_line(m, "# TYPE dotnet_gc_collections_total counter"));
  CHECK(has_line(m, "dotnet_threads 7"));
  CHECK(has_line(m, "dotnet_jit_compiled_methods_total 321"));
  CHECK(m.find("dotnet_gc_last_collection_heap_size_bytes") == std::string::npos);  // not 0: left out
  CHECK(m.find("dotnet_exceptions_total") == std::string::npos);  // exceptions not recorded
  CHECK(m.find("mlpd_gc_pause_seconds") == std::string::npos);    // the runtime measures no pauses
  CHECK(m.find("mlpd_samples_taken_total") == std::string::npos); // not sampling
  CHECK(m.find("mlpd_push_") == std::string::npos);
  CHECK(has_line(m, "mlpd_flush_rounds_total 17"));
  CHECK(has_line(m, "mlpd_metrics_scrapes_total 3"));
  CHECK(has_line(m, "mlpd_output_failed 0"));
  CHECK(m.find("\nprocess_threads ") != std::string::npos);

  SECTION("the GC's counts are the runtime's only while GC events are recorded") {
    rt.mask = 0;
    const std::string off = a.scrape();
    CHECK(off.find("dotnet_gc_collections_total") == std::string::npos);
    CHECK(has_line(off, "dotnet_threads 7"));  // needs no events
  }
}

TEST_CASE("metrics: Mono's collections, the recorded throws, pauses, sampling and push", "[agent][metrics]") {
  test::FakeRuntime rt;
  rt.runtime_name = "mono";
  rt.mask = format::MASK_EXCEPTION;
  rt.fresh = {counter(1, "Minor GC collections", format::COUNTER_INT, 4), counter(2, "Major GC collections", format::COUNTER_INT, 4),
              counter(3, "Minor GC time", format::COUNTER_LONG), counter(4, "Major GC time", format::COUNTER_LONG)};
  rt.values = {{reinterpret_cast<void*>(1), 12}, {reinterpret_cast<void*>(2), 3}, {reinterpret_cast<void*>(3), 20000000},
               {reinterpret_cast<void*>(4), 5000000}};
  rt.has_pauses = true;
  rt.pauses.buckets[0] = 2;                             // <= 100 us
  rt.pauses.buckets[3] = 1;                             // <= 1 ms
  rt.pauses.buckets[runtime::GcPauses::kBounds] = 1;    // above 1 s
  rt.pauses.sum_ns = 1500000000;
  rt.samples.freq = 100;
  rt.samples.taken = 50;
  rt.samples.written = 45;
  rt.samples.clock_ns = 1000000000;
  Agent a(rt);
  // Two throws recorded (the MetaLog's count stands in for the runtime's).
  Event e;
  e.reset(EventKind::exception_throw);
  a.meta.add_at(e);
  a.meta.add_at(e);
  agent::PushStats ps;
  ps.sent = 9;
  ps.last_status = 204;
  const std::string m = a.scrape(true, ps);
  INFO(m);
  CHECK(has_line(m, "dotnet_gc_collections_total{gc_heap_generation=\"gen0\"} 12"));
  CHECK(has_line(m, "dotnet_gc_collections_total{gc_heap_generation=\"gen1\"} 3"));
  CHECK(m.find("gc_heap_generation=\"gen2\"") == std::string::npos);
  CHECK(has_line(m, "dotnet_gc_pause_time_seconds_total 2.5"));  // (20000000 + 5000000) * 100 ns
  CHECK(has_line(m, "dotnet_exceptions_total 2"));
  // The histogram: cumulative buckets, +Inf and the count equal.
  CHECK(has_line(m, "mlpd_gc_pause_seconds_bucket{le=\"+Inf\"} 4"));
  CHECK(has_line(m, "mlpd_gc_pause_seconds_count 4"));
  CHECK(has_line(m, "mlpd_gc_pause_seconds_sum 1.5"));
  size_t buckets = 0, last = 0;
  bool cumulative = true;
  for (size_t at = m.find("mlpd_gc_pause_seconds_bucket{"); at != std::string::npos;
       at = m.find("mlpd_gc_pause_seconds_bucket{", at + 1)) {
    const size_t v = std::stoul(m.substr(m.find("} ", at) + 2));
    cumulative = cumulative && v >= last;
    last = v;
    ++buckets;
  }
  CHECK(buckets == runtime::GcPauses::kBounds + 1);
  CHECK(cumulative);
  CHECK(has_line(m, "mlpd_samples_taken_total 50"));
  CHECK(has_line(m, "mlpd_sample_rate_delivered_hertz 45"));
  CHECK(has_line(m, "mlpd_events_total{kind=\"exception_throw\"} 2"));
  CHECK(has_line(m, "mlpd_push_sent_total 9"));
  CHECK(has_line(m, "mlpd_push_last_status 204"));

  SECTION("a negative 4-byte count is not a count") {
    rt.values[reinterpret_cast<void*>(1)] = 0xFFFFFFF0u;
    const std::string neg = a.scrape();
    CHECK(neg.find("dotnet_gc_collections_total") == std::string::npos);
  }
}
