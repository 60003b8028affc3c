// decode_as<V>(): decode() (mlpd/decoder.h) for a visitor whose type is known, so that its per-buffer
// and per-event calls are direct (and inlined when V is final and its members are visible): the
// profile model's Builder uses it on the hot path of `mlpd report` and `mlpd export`. decode() itself
// is decode_as<Visitor>. Everything but the per-event loop (the file header, buffer headers and data,
// problems and warnings, the memory budget) is the non-template DecodeDriver in decode.cpp; the rare
// calls (on_header, on_problem, on_warning) stay virtual.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/format.h"

namespace mlpd {

namespace detail {

class DecodeDriver {
 public:
  DecodeDriver(Input& in, Visitor& v, const DecodeOptions& opt) : in_(in), v_(v), opt_(opt) {}
  // Reads the file header and calls on_header; false (the problem reported) when there is none.
  bool start();
  // Reads the next buffer's header and data: true with info() and data() set, false at the end of the
  // input, on a problem that ends decoding (reported), or when the memory budget is exceeded.
  // The data is where the input can lend it without a copy (Input::borrow), else in a buffer of the driver.
  bool next_buffer() { return next_buffer_into(data_, data_capacity_, true); }
  // The same into a buffer of the caller's (grown as needed): decode_counting() reads ahead. With
  // `lend`, data() is where a mapped input lends the bytes (Input::lend: valid while it lives) if it can.
  bool next_buffer_into(std::unique_ptr<uint8_t[]>& data, size_t& capacity, bool borrow = false, bool lend = false);
  const BufferInfo& info() const { return info_; }
  const uint8_t* data() const { return data_ptr_; }
  // True (and one problem reported) when the memory budget is exceeded.
  bool over_budget(uint64_t offset) {
    return opt_.budget && over_budget_slow(offset);
  }
  // For a caller that reads ahead (the parallel profile build): a problem of buffer `index` reported
  // as it would have been right after that buffer was read, when the input's truncation_warning()
  // was `cut` (a gzip input cut by a killed writer makes it a warning) -- the memory budget exceeded
  // at `offset` (seen by a worker; the problem names the limit, as over_budget() reports it), or the
  // problem that ended the buffer's events.
  void budget_problem(uint64_t offset, uint64_t index, const std::string& cut);
  void buffer_problem(uint64_t offset, uint64_t index, const std::string& message, const std::string& cut);
  // The problem that ended the current buffer's events.
  void buffer_problem(uint64_t offset, const std::string& message) { buffer_problem(offset, info_.index, message); }
  void buffer_problem(uint64_t offset, uint64_t index, const std::string& message);
  // While deferring, problems and warnings are kept instead of reported (decode_counting() reports
  // them after the buffers read before them); report_deferred() reports them in order.
  void set_deferring(bool on) { deferring_ = on; }
  bool has_deferred() const { return !deferred_.empty(); }
  void report_deferred();
  void add_events(uint64_t n) { s_.events += n; }
  // decode_counting() stopped delivering at a problem (stop_at_first_problem): the buffers read ahead
  // count as never read, and reading ended at `end`.
  void unread_buffers(uint64_t n, uint64_t end) {
    s_.buffers -= n;
    end_ = end;
  }
  DecodeSummary finish() {
    s_.bytes = end_ != UINT64_MAX ? end_ : in_.offset();
    return s_;
  }

 private:
  bool over_budget_slow(uint64_t offset);
  void report(const Problem& p);
  void report_cut(const Problem& p, std::string cut);
  void deliver(bool warning, const Problem& p);

  Input& in_;
  Visitor& v_;
  const DecodeOptions& opt_;
  DecodeSummary s_;
  BufferInfo info_;
  // Grown, never shrunk, never zero-filled: every byte is overwritten by the read before use.
  std::unique_ptr<uint8_t[]> data_;
  size_t data_capacity_ = 0;
  const uint8_t* data_ptr_ = nullptr;  // the current buffer's data (borrowed or data_)
  bool deferring_ = false;
  uint64_t end_ = UINT64_MAX;
  std::vector<std::pair<bool, Problem>> deferred_;  // (is a warning, what)
};

}  // namespace detail

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

// One buffer of decode_parallel(), read ahead: its bytes, then how its decoding on a worker ended.
struct ParallelBuffer {
  std::unique_ptr<uint8_t[]> data;  // the bytes when read into the job
  size_t capacity = 0;
  BufferInfo info;
  const uint8_t* bytes = nullptr;  // the buffer's info.header.length bytes: in `data`, or lent (below)
  size_t slot = 0;  // its place in the ring, 0 .. parallel_slots(threads) - 1: where the caller keeps what
                    // its work found in the buffer (the slot is not reused before use() has seen it)
  // Set by work(): the events decoded, and the problem that ended them (empty if none) with its offset.
  uint64_t events = 0;
  std::string message;
  uint64_t problem_offset = 0;
  bool done = false;
};
inline size_t parallel_slots(unsigned threads) { return 4 * static_cast<size_t>(threads); }

// The frame of decode_counting() for any per-buffer work: the buffers are read in order on the calling
// thread (at most parallel_slots(threads) of them and 8 MiB ahead), `work(b)` decodes each on one of
// `threads` (>= 2) worker threads, and `use(b)` takes what it found on the calling thread, in file
// order, between the visitor's on_buffer and the buffer's problem (if any) and on_buffer_end. Problems
// and warnings come at the point of the file where decode() reports them; the memory budget is checked
// at every buffer read. The visitor gets no on_event. With `lend`, a plain regular file is read through
// a memory mapping (Input::map) and the buffers' bytes are where they lie (the pages of buffers used
// are given back every 4 MiB).
DecodeSummary decode_parallel(Input& in, Visitor& v, const DecodeOptions& opt, unsigned threads,
                              const std::function<void(ParallelBuffer&)>& work,
                              const std::function<void(const ParallelBuffer&)>& use, bool lend = false);

// A visitor that takes runs of enter/leave without an Event (BufferDecoder::method_run) while
// takes_method_runs(): on_method(enter, time, method) does what on_event would do for each, and
// method_run_done(n, first time, last time) what it would do per event that needs no more than those.
template <class V>
inline constexpr bool kMethodRuns = requires(V& v) {
  v.takes_method_runs();
  v.on_method(true, uint64_t{0}, uint64_t{0});
  v.method_run_done(uint64_t{0}, uint64_t{0}, uint64_t{0});
};

// The buffers after the current one of a driver that has started (decode_as; the parallel profile
// build when it goes on by one thread), to the end; the summary.
template <class V>
DecodeSummary decode_rest(detail::DecodeDriver& d, V& v, const DecodeOptions& opt) {
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
  detail::DecodeDriver d(in, v, opt);
  if (!d.start()) return d.finish();
  return decode_rest(d, v, opt);
}

}  // namespace mlpd
