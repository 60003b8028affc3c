// Micro-benchmarks of the agent's per-event path: the clock and writing one event through a ThreadLog
// (what a method enter costs us, apart from Mono's own instrumentation). Run: build/tests/bench/agent_bench
#include <benchmark/benchmark.h>

#include <ctime>

#include "mlpd/arch/cycles.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"

namespace {

void BM_ClockGettimeMonotonic(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(mlpd::rt::now_ns());
}
BENCHMARK(BM_ClockGettimeMonotonic);

void BM_NowNsTsc(benchmark::State& state) {
  mlpd::rt::init_clock(true);
  for (auto _ : state) benchmark::DoNotOptimize(mlpd::rt::now_ns());
  mlpd::rt::init_clock(false);
}
BENCHMARK(BM_NowNsTsc);

void BM_ReadCycles(benchmark::State& state) {  // arch/'s cycle counter (x86-64: rdtsc)
  for (auto _ : state) benchmark::DoNotOptimize(mlpd::arch::read_cycles());
}
BENCHMARK(BM_ReadCycles);

struct Writer {
  mlpd::rt::BufferPool pool{64 * 1024, 64};
  mlpd::rt::FlushQueue queue;
  mlpd::rt::WriterShared shared;
  Writer() {
    shared.pool = &pool;
    shared.queue = &queue;
  }
  // Stands in for the helper: recycles what the writer published.
  void drain() {
    while (auto* b = queue.pop()) pool.give(b);
  }
};

void BM_WriteEnterEvent(benchmark::State& state) {
  Writer w;
  mlpd::rt::ThreadLog log(w.shared, 1, mlpd::rt::now_ns());
  uint64_t t = mlpd::rt::now_ns();
  uint64_t i = 0;
  for (auto _ : state) {
    mlpd::rt::write_method(log, mlpd::format::TYPE_ENTER, t += 37, 0x7f0000001000 + 0x100 * (++i & 7));
    if ((i & 0xFFFF) == 0) w.drain();
  }
  log.retire();
  w.drain();
}
BENCHMARK(BM_WriteEnterEvent);

void BM_WriteEnterEventWithClock(benchmark::State& state) {
  Writer w;
  mlpd::rt::ThreadLog log(w.shared, 1, mlpd::rt::now_ns());
  uint64_t i = 0;
  for (auto _ : state) {
    mlpd::rt::write_method(log, mlpd::format::TYPE_ENTER, mlpd::rt::now_ns(), 0x7f0000001000 + 0x100 * (++i & 7));
    if ((i & 0xFFFF) == 0) w.drain();
  }
  log.retire();
  w.drain();
}
BENCHMARK(BM_WriteEnterEventWithClock);

}  // namespace

BENCHMARK_MAIN();
