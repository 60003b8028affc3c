// BufferDecoder: decodes and validates the events of one buffer held in memory (`data`,
// header.length bytes). `data_offset` is the file offset of data[0], used in problems. The reader's
// decode() (mlpd/decoder.h) runs one per buffer of a file; the agent's flusher runs one over the
// live slices it writes, to resume their delta chains. Validation is part of decoding: event types
// and subtypes, enum values, LEB128 lengths, strings, item counts (never more than the bytes left,
// at most 2^20 per list), reads past the buffer; a problem ends the buffer (later values need
// earlier ones).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/event.h"
#include "mlpd/format.h"
#include "mlpd/leb128.h"

namespace mlpd {

class BufferDecoder {
 public:
  BufferDecoder(const BufferHeader& header, const uint8_t* data, uint64_t data_offset);
  // Decodes the next event into `event`. Returns false at the end of the buffer (problem empty) or
  // on malformed data (problem set; the buffer's remaining bytes cannot be trusted).
  bool next(Event& event, std::string& problem, uint64_t& event_offset);  // inline, below
  // Offset of the first byte not yet decoded, and of the field where the last problem was found.
  uint64_t position() const { return data_offset_ + static_cast<uint64_t>(p_ - data_); }
  uint64_t problem_offset() const { return problem_offset_; }
  // The delta chains after the last decoded event (what the next event's deltas start from).
  uint64_t last_time() const { return last_time_; }
  int64_t last_method() const { return last_method_; }
  // Where the next event starts, with the delta chains there: a reader that decoded the buffer once
  // decodes one of its events again with resume(mark) and next(), without the events before it (the
  // reader's parallel profile build keeps marks instead of copies of events).
  struct Mark {
    uint32_t pos = 0;
    uint64_t last_time = 0;
    int64_t last_method = 0;
  };
  Mark mark() const { return {static_cast<uint32_t>(p_ - data_), last_time_, last_method_}; }
  void resume(const Mark& m) {
    p_ = data_ + m.pos;
    last_time_ = m.last_time;
    last_method_ = m.last_method;
    lists_used_ = true;  // the general path then resets every field of the Event
  }
  // With false, heap_object events are decoded and validated as ever but their references are not
  // stored (Event::refs stays empty): a reader that only counts objects (mlpd heapshots) saves filling
  // and clearing the list at every object. The same bytes give the same problems either way.
  void keep_heap_refs(bool on) { keep_heap_refs_ = on; }
  // A run of method enter/leave events decoded without an Event (the profile model's hot loop): from
  // here, while the next event is an enter or a leave that fast_method() would take, at most `max` of
  // them, on(enter, time, method) for each, in order. Returns how many; `last_start` is then the file
  // offset of the last one, `first_time` the first one's time (last_time() the last one's). Every other event (exc_leave, a delta of more than 4 bytes, the buffer's
  // last 8 bytes) stops the run and is left to next(), which decodes and validates it as ever: the same
  // bytes give the same events whichever path decodes them.
  template <class F>
  [[gnu::always_inline]] size_t method_run(size_t max, F&& on, uint64_t& last_start, uint64_t& first_time);

 private:
  bool fast_method(Event& event);  // inline, below
  bool failed_event(uint8_t event_byte, uint64_t event_offset, std::string& problem);
  bool fail(const char* what);
  bool leb_failed(LebStatus status);
  bool byte(uint8_t& out);
  bool uleb(uint64_t& out);
  bool sleb(int64_t& out);
  bool time(uint64_t& out);
  bool ptr(uint64_t& out);
  bool obj(uint64_t& out);
  bool method(uint64_t& out);
  bool string(std::string& out);
  bool count(uint64_t& out, size_t min_item_size);
  bool backtrace(std::vector<uint64_t>& out);
  bool event_body(uint8_t event_byte, Event& event);
  void start_event(Event& event, EventKind kind);

  const uint8_t* data_;
  const uint8_t* p_;
  const uint8_t* end_;
  uint64_t data_offset_;
  uint64_t last_time_;
  int64_t ptr_base_;
  int64_t obj_base_;
  int64_t last_method_;
  bool lists_used_ = true;  // the previous event may have filled a string or list of the Event
  bool keep_heap_refs_ = true;
  uint64_t problem_offset_ = 0;
  const char* problem_ = nullptr;
  std::string detail_;
};

// The fast path for method enter/leave/exc_leave (most events of a `calls` file): the type byte and
// two LEB128 deltas of at most 4 bytes each, at least 9 bytes from the buffer's end (so no bounds
// checks), after an event that filled no string or list. It leaves the Event exactly as the general
// path (event_body) would, and changes nothing when it declines (returns false): the general path then
// decodes (and validates) the event.
inline bool BufferDecoder::fast_method(Event& e) {
  const uint8_t* q = p_;
  const uint8_t eb = q[0];
  const uint8_t ext = format::event_ext(eb);
  if (format::event_type(eb) != format::TYPE_METHOD || ext < format::TYPE_LEAVE ||
      ext > format::TYPE_EXC_LEAVE || lists_used_ || end_ - q < 9)
    return false;
  ++q;
  uint64_t dt = q[0];
  if (dt < 0x80) [[likely]] {
    ++q;
  } else if (q[1] < 0x80) {  // time deltas of a calls file mostly take one or two bytes
    dt = (dt & 0x7F) | static_cast<uint64_t>(q[1]) << 7;
    q += 2;
  } else {
    dt = 0;
    for (unsigned shift = 0;; shift += 7) {
      const uint8_t b = *q++;
      dt |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (b < 0x80) break;
      if (shift == 21) return false;
    }
  }
  int64_t dms;
  if (q[0] < 0x80) [[likely]] {
    dms = static_cast<int64_t>(q[0] ^ 0x40) - 0x40;  // sign-extend 7 bits
    ++q;
  } else {
    uint64_t dm = 0;
    unsigned bits = 0;
    for (;;) {
      const uint8_t b = *q++;
      dm |= static_cast<uint64_t>(b & 0x7F) << bits;
      bits += 7;
      if (b < 0x80) break;
      if (bits == 28) return false;
    }
    dms = static_cast<int64_t>(dm << (64 - bits)) >> (64 - bits);  // sign-extend
  }
  static constexpr EventKind kinds[4] = {EventKind::method_leave, EventKind::method_leave,
                                         EventKind::method_enter, EventKind::method_exc_leave};
  const EventKind k = kinds[(ext >> 4) & 3];  // ext is TYPE_LEAVE (1 << 4) .. TYPE_EXC_LEAVE (3 << 4)
  // After an enter/leave/exc_leave every scalar but time and method is already zero: only the kind
  // changes (the three kinds are consecutive in EventKind).
  static_assert(static_cast<int>(EventKind::method_leave) == static_cast<int>(EventKind::method_enter) + 1 &&
                static_cast<int>(EventKind::method_exc_leave) == static_cast<int>(EventKind::method_enter) + 2);
  if (static_cast<uint8_t>(static_cast<uint8_t>(e.kind) - static_cast<uint8_t>(EventKind::method_enter)) <= 2)
    e.kind = k;
  else
    e.reset_scalars(k);
  last_time_ += dt;
  e.time = last_time_;
  last_method_ = static_cast<int64_t>(static_cast<uint64_t>(last_method_) + static_cast<uint64_t>(dms));
  e.method = static_cast<uint64_t>(last_method_);
  p_ = q;
  return true;
}

template <class F>
[[gnu::always_inline]] inline size_t BufferDecoder::method_run(size_t max, F&& on, uint64_t& last_start, uint64_t& first_time) {
  // Locals only (on() may store anywhere, so members would be loaded again at every event).
  const uint8_t* q = p_;
  if (end_ - q < 9) return 0;  // fast_method's bound: no bounds checks within
  const uint8_t* const last = end_ - 9;  // the last place an event may start in a run
  uint64_t time = last_time_;
  uint64_t method = static_cast<uint64_t>(last_method_);
  // One event: false (nothing consumed) when it is not one the run takes.
  const auto step = [&]() __attribute__((always_inline)) -> bool {
    if (q > last) return false;
    const uint8_t eb = q[0];
    // TYPE_METHOD with TYPE_LEAVE (0x13) or TYPE_ENTER (0x23); exc_leave and the rest stop the run.
    if (eb != (format::TYPE_METHOD | format::TYPE_LEAVE) && eb != (format::TYPE_METHOD | format::TYPE_ENTER)) return false;
    const uint8_t* r = q + 1;
    uint64_t dt = r[0];
    if (dt < 0x80) [[likely]] {
      ++r;
    } else if (r[1] < 0x80) {
      dt = (dt & 0x7F) | static_cast<uint64_t>(r[1]) << 7;
      r += 2;
    } else {
      dt = 0;
      bool ok = false;
      for (unsigned shift = 0; shift <= 21; shift += 7) {
        const uint8_t b = *r++;
        dt |= static_cast<uint64_t>(b & 0x7F) << shift;
        if (b < 0x80) {
          ok = true;
          break;
        }
      }
      if (!ok) return false;
    }
    int64_t dms;
    if (r[0] < 0x80) [[likely]] {
      dms = static_cast<int64_t>(r[0] ^ 0x40) - 0x40;
      ++r;
    } else if (r[1] < 0x80) {  // a method of another class or assembly: mostly two bytes
      const uint64_t dm = (r[0] & 0x7Fu) | static_cast<uint64_t>(r[1]) << 7;
      dms = static_cast<int64_t>(dm << 50) >> 50;  // sign-extend 14 bits
      r += 2;
    } else {
      uint64_t dm = 0;
      unsigned bits = 0;
      bool ok = false;
      while (bits < 28) {
        const uint8_t b = *r++;
        dm |= static_cast<uint64_t>(b & 0x7F) << bits;
        bits += 7;
        if (b < 0x80) {
          ok = true;
          break;
        }
      }
      if (!ok) return false;
      dms = static_cast<int64_t>(dm << (64 - bits)) >> (64 - bits);
    }
    time += dt;
    method += static_cast<uint64_t>(dms);
    q = r;
    on(eb == (format::TYPE_METHOD | format::TYPE_ENTER), time, method);
    return true;
  };
  // The first event apart: its time is the run's first (no test of the count in the loop).
  if (max == 0 || !step()) return 0;
  first_time = time;
  size_t left = max - 1;
  while (left != 0 && step()) --left;
  // The last event's start, found back from its end: its method delta's last byte (high bit clear),
  // that delta's other bytes (high bit set), the time delta's last byte, its other bytes, then the
  // event byte (0x13 or 0x23: high bit clear). Not kept at every event: a register fewer in the loop.
  const uint8_t* start = q - 2;
  while (*start & 0x80) --start;
  --start;
  while (*start & 0x80) --start;
  last_start = data_offset_ + static_cast<uint64_t>(start - data_);
  p_ = q;
  last_time_ = time;
  last_method_ = static_cast<int64_t>(method);
  return max - left;
}

// Inline so that decode()'s per-event loop needs no call beyond the event body's.
inline bool BufferDecoder::next(Event& e, std::string& problem, uint64_t& event_offset) {
  if (!problem.empty()) problem.clear();
  if (p_ >= end_) return false;
  event_offset = position();
  if (fast_method(e)) [[likely]] return true;
  const uint8_t event_byte = *p_++;
  problem_ = nullptr;
  if (!detail_.empty()) detail_.clear();
  if (event_body(event_byte, e)) [[likely]] return true;
  return failed_event(event_byte, event_offset, problem);
}

}  // namespace mlpd
