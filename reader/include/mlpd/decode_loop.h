// decode_as<V>(): decode() (mlpd/decoder.h) for a visitor whose type is known, so that its per-buffer
// and per-event calls are direct (and inlined when V is final and its members are visible): the
// profile model's Builder uses it on the hot path of `mlpd report` and `mlpd export`. decode() itself
// is decode_as<Visitor>. Everything but the per-event loop (the file header, buffer headers and data,
// problems and warnings, the memory budget) is BufferPipeline's one-thread reading (buffer_pipeline.h);
// the rare calls (on_header, on_problem, on_warning) stay virtual.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/buffer_pipeline.h"
#include "mlpd/decoder.h"
#include "mlpd/format.h"

namespace mlpd {

// decode() for a caller that needs, of the events, only how many there are of each kind (`mlpd verify`):
// the buffers are read in order on the calling thread and their events decoded and validated on
// `threads` worker threads (0: one per core). The visitor gets on_header, then per buffer, in file
// order, on_buffer, its problem if any and on_buffer_end, and every problem and warning at the point
// of the file where sequential decoding reports it -- the same calls as decode() but on_event. The
// memory budget is checked at every buffer (the workers allocate nothing per event). A gzip input, or
// one thread, decodes sequentially (the same results).
using EventCounts = std::array<uint64_t, kEventKindCount>;
DecodeSummary decode_counting(Input& in, Visitor& v, const DecodeOptions& opt, EventCounts& counts,
                              unsigned threads = 0);

// The buffers decode_counting() and decode_heapshots() read ahead of their `threads` workers (a ring of
// BufferPipeline slots).
inline size_t parallel_slots(unsigned threads) { return 4 * static_cast<size_t>(threads); }

// A visitor that takes runs of enter/leave without an Event (BufferDecoder::method_run) while
// takes_method_runs(): on_method(enter, time, method) does what on_event would do for each, and
// method_run_done(n, first time, last time) what it would do per event that needs no more than those.
template <class V>
inline constexpr bool kMethodRuns = requires(V& v) {
  v.takes_method_runs();
  v.on_method(true, uint64_t{0}, uint64_t{0});
  v.method_run_done(uint64_t{0}, uint64_t{0}, uint64_t{0});
};

// The buffers after the current one of a pipeline that has started (decode_as; the parallel profile
// build when it goes on by one thread), to the end; the summary.
template <class V>
DecodeSummary decode_rest(BufferPipeline& d, V& v, const DecodeOptions& opt) {
  Event event;
  std::string message;
  EventInfo ei;
  while (d.next_buffer()) {
    const BufferInfo& info = d.info();
    ei.buffer = &info;
    v.on_buffer(info);
    BufferDecoder dec(info.header, d.data(), info.offset + format::kBufferHeaderSize);
    if constexpr (requires { V::kKeepsHeapRefs; }) dec.keep_heap_refs(V::kKeepsHeapRefs);
    // The budget is checked at every buffer (next_buffer) and every 4096 events of a buffer; the event
    // count is kept here, added to the summary once per buffer.
    uint64_t n = 0;
    bool stopped = false;
    bool runs = false;
    if constexpr (kMethodRuns<V>) runs = v.takes_method_runs();
    for (;;) {
      if constexpr (kMethodRuns<V>) {
        if (runs) {
          // Enter/leave runs without an Event, up to the next budget check (the same events, in order).
          const size_t max = 4096 - (n & 4095);
          uint64_t last = 0, first_time = 0;
          const size_t k = dec.method_run(
              max, [&v](bool enter, uint64_t t, uint64_t m) { v.on_method(enter, t, m); }, last, first_time);
          if (k) {
            v.method_run_done(k, first_time, dec.last_time());
            n += k;
            if ((n & 4095) == 0 && d.over_budget(last)) [[unlikely]] {
              stopped = true;
              break;
            }
            if (k == max) continue;
          }
        }
      }
      if (!dec.next(event, message, ei.offset)) break;
      v.on_event(event, ei);
      if ((++n & 4095) == 0 && d.over_budget(ei.offset)) [[unlikely]] {
        stopped = true;
        break;
      }
    }
    d.add_events(n);
    if (stopped) {
      v.on_buffer_end(info);
      break;
    }
    const bool failed = !message.empty();
    if (failed) [[unlikely]]
      d.buffer_problem(dec.problem_offset(), message);
    v.on_buffer_end(info);
    if (failed && opt.stop_at_first_problem) break;
  }
  return d.finish();
}

template <class V>
DecodeSummary decode_as(Input& in, V& v, const DecodeOptions& opt = {}) {
  BufferPipeline d(in, v, opt);
  if (!d.start()) return d.finish();
  return decode_rest(d, v, opt);
}

}  // namespace mlpd
