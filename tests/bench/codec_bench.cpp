// Micro-benchmarks of the format code: encoding and decoding the events that dominate real files
// (enter/leave pairs, allocations). Run: build/tests/bench/codec_bench
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"

namespace {

using mlpd::Event;
using mlpd::EventKind;

// A buffer shaped like a call-heavy trace: enter/leave of a few methods, small time deltas.
std::vector<Event> call_events(size_t pairs) {
  std::vector<Event> events;
  uint64_t t = 1'000'000;
  const uint64_t methods[] = {0x7f0010001000, 0x7f0010001200, 0x7f0010004400, 0x7f0010009000};
  for (size_t i = 0; i < pairs; ++i) {
    Event e;
    e.kind = EventKind::method_enter;
    e.time = t += 40;
    e.method = methods[i % 4];
    events.push_back(e);
    e.kind = EventKind::method_leave;
    e.time = t += 25;
    events.push_back(e);
  }
  return events;
}

std::vector<Event> alloc_events(size_t n, size_t frames) {
  std::vector<Event> events;
  uint64_t t = 1'000'000, obj = 0x7f5000000000;
  for (size_t i = 0; i < n; ++i) {
    Event e;
    e.kind = EventKind::alloc;
    e.time = t += 90;
    e.ptr = 0x55d000100000 + 0x100 * (i % 7);
    e.obj = obj += 32;
    e.size = 32;
    e.has_backtrace = frames > 0;
    for (size_t f = 0; f < frames; ++f) e.backtrace.push_back(0x7f0010001000 + 0x200 * f);
    events.push_back(e);
  }
  return events;
}

std::vector<uint8_t> encode_buffer(const std::vector<Event>& events, size_t* data_bytes) {
  mlpd::BufferEncoder enc(1, 1'000'000);
  for (const Event& e : events) enc.add(e);
  *data_bytes = enc.data_size();
  std::vector<uint8_t> out;
  enc.finish_into(out);
  return out;
}

void decode_buffer(benchmark::State& state, const std::vector<Event>& events) {
  size_t data_bytes = 0;
  const std::vector<uint8_t> buf = encode_buffer(events, &data_bytes);
  mlpd::BufferEncoder enc(1, 1'000'000);
  for (const Event& e : events) enc.add(e);
  const mlpd::BufferHeader h = enc.header();
  Event ev;
  std::string problem;
  uint64_t offset = 0;
  for (auto _ : state) {
    mlpd::BufferDecoder dec(h, buf.data() + mlpd::format::kBufferHeaderSize, 0);
    size_t n = 0;
    while (dec.next(ev, problem, offset)) ++n;
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data_bytes));
}

void encode(benchmark::State& state, const std::vector<Event>& events) {
  mlpd::BufferEncoder enc(1, 1'000'000);
  for (auto _ : state) {
    enc.reset(1, 1'000'000);
    for (const Event& e : events) enc.add(e);
    benchmark::DoNotOptimize(enc.data_size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
}

void BM_DecodeEnterLeave(benchmark::State& s) { decode_buffer(s, call_events(8000)); }
void BM_DecodeAlloc(benchmark::State& s) { decode_buffer(s, alloc_events(8000, 0)); }
void BM_DecodeAllocBacktrace8(benchmark::State& s) { decode_buffer(s, alloc_events(4000, 8)); }
void BM_EncodeEnterLeave(benchmark::State& s) { encode(s, call_events(8000)); }
void BM_EncodeAlloc(benchmark::State& s) { encode(s, alloc_events(8000, 0)); }

BENCHMARK(BM_DecodeEnterLeave);
BENCHMARK(BM_DecodeAlloc);
BENCHMARK(BM_DecodeAllocBacktrace8);
BENCHMARK(BM_EncodeEnterLeave);
BENCHMARK(BM_EncodeAlloc);

}  // namespace

BENCHMARK_MAIN();
