// BufferDecoder::method_run(): the runs of enter/leave that the profile model decodes without an Event
// are the events next() decodes, in order, with the same times and methods; whatever stops a run (an
// exception leave, another event, a delta longer than the fast path takes, the buffer's last bytes, a
// run's limit) is left to next(), and a damaged buffer gives the same problem at the same offset.
#include "mlpd_catch.h"

#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/buffer_decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"

using namespace mlpd;
using namespace mlpd::test;

namespace {

struct Seen {
  EventKind kind;
  uint64_t time, method, offset;
  bool operator==(const Seen&) const = default;
};

// Every event of the buffer by next() alone; the problem (and its offset) that ended it.
std::vector<Seen> by_next(const BufferHeader& h, const uint8_t* data, std::string& problem, uint64_t& at) {
  BufferDecoder d(h, data, 100);
  std::vector<Seen> out;
  Event e;
  uint64_t offset = 0;
  while (d.next(e, problem, offset)) out.push_back({e.kind, e.time, e.method, offset});
  at = d.problem_offset();
  return out;
}

// The same with runs of at most 1..max_run events between next() calls.
std::vector<Seen> by_runs(const BufferHeader& h, const uint8_t* data, EventGen& gen, std::string& problem,
                          uint64_t& at, size_t& in_runs) {
  BufferDecoder d(h, data, 100);
  std::vector<Seen> out;
  Event e;
  uint64_t offset = 0;
  for (;;) {
    const size_t max = 1 + gen.below(gen.chance(50) ? 3 : 5000);
    std::vector<Seen> run;
    uint64_t last = 0, first_time = 0;
    const size_t k = d.method_run(
        max,
        [&](bool enter, uint64_t t, uint64_t m) {
          run.push_back({enter ? EventKind::method_enter : EventKind::method_leave, t, m, 0});
        },
        last, first_time);
    REQUIRE(k == run.size());
    if (k) {
      CHECK(first_time == run.front().time);
      CHECK(d.last_time() == run.back().time);
    }
    REQUIRE(k <= max);
    in_runs += k;
    for (size_t i = 0; i < k; ++i) out.push_back(run[i]);
    if (k) out.back().offset = last;  // the run gives the offset of its last event only
    if (k == max) continue;
    if (!d.next(e, problem, offset)) break;
    out.push_back({e.kind, e.time, e.method, offset});
  }
  at = d.problem_offset();
  return out;
}

}  // namespace

TEST_CASE("BufferDecoder: method runs decode what next() decodes", "[codec][method_run]") {
  EventGen gen(2525);
  const uint64_t methods[] = {0x1000, 0x1040, 0x7f0000001000, 0x10, 0x7f0000801000};
  size_t in_runs = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<Event> events;
    uint64_t clock = 1000;
    const size_t n = gen.below(400);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = gen.below(100);
      Event e;
      if (r < 88) {  // enter/leave, times 1..4-byte and longer deltas apart, methods near and far
        e.kind = r < 44 ? EventKind::method_enter : EventKind::method_leave;
        // deltas of 1, 2, 3-4 bytes, longer ones and (2%) any time at all (backwards, wrapping)
        clock += gen.chance(80) ? gen.below(100) : gen.chance(80) ? gen.below(1u << 20) : gen.u64() >> 8;
        e.time = gen.chance(2) ? gen.next_time() : clock;
        e.method = gen.chance(95) ? methods[gen.below(5)] : gen.method();
      } else if (r < 92) {
        e = gen.make(EventKind::method_exc_leave);
      } else {
        e = gen.make_any();
      }
      events.push_back(e);
    }
    ThreadBuffer tb{0x1234, 1000, events};
    std::vector<uint8_t> bytes = encode_buffer(tb);
    BufferHeader h;
    REQUIRE(decode_buffer_header(bytes.data(), h) == format::kBufferId);
    if (round % 3 == 2 && bytes.size() > format::kBufferHeaderSize + 4) {  // damaged: a byte changed
      const size_t i = format::kBufferHeaderSize + gen.below(bytes.size() - format::kBufferHeaderSize);
      bytes[i] = static_cast<uint8_t>(gen.u64());
    }
    const uint8_t* data = bytes.data() + format::kBufferHeaderSize;
    std::string p1, p2;
    uint64_t at1 = 0, at2 = 0;
    std::vector<Seen> a = by_next(h, data, p1, at1);
    std::vector<Seen> b = by_runs(h, data, gen, p2, at2, in_runs);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("round " << round << " event " << i);
      CHECK(a[i].kind == b[i].kind);
      CHECK(a[i].time == b[i].time);
      CHECK(a[i].method == b[i].method);
      if (b[i].offset) CHECK(a[i].offset == b[i].offset);
    }
    CHECK(p1 == p2);
    CHECK(at1 == at2);
  }
  CHECK(in_runs > 15000);  // most enter/leave went through runs
}

// Backtraces (BufferDecoder::backtrace decodes deltas of up to 4 bytes without a branch on their
// length, the rest and the buffer's last bytes through the general reader): frames whose deltas take
// 1 to 10 bytes, either sign, decode to what was encoded; a buffer cut inside its last event decodes
// the events before it and ends with a problem within the buffer.
TEST_CASE("BufferDecoder: backtraces with deltas of every length", "[codec][backtrace]") {
  EventGen gen(77);
  // Deltas from the previous frame: 1 byte (|d| < 64), 2 (< 8192), 3 (< 2^20), 4 (< 2^27), longer.
  const int64_t reach[] = {60, 8000, 1000000, 130000000, int64_t{1} << 40, int64_t{1} << 62};
  for (int round = 0; round < 200; ++round) {
    std::vector<Event> events;
    uint64_t clock = 1000, m = 0x7f0000000000;
    const size_t n = 1 + gen.below(60);
    for (size_t i = 0; i < n; ++i) {
      Event e = gen.make(EventKind::alloc);
      e.time = clock += 1 + gen.below(1000);
      e.has_backtrace = true;
      e.backtrace.clear();
      const size_t depth = gen.below(80);
      for (size_t f = 0; f < depth; ++f) {
        const int64_t r = reach[gen.below(round % 2 ? 4 : 6)];
        const int64_t d = static_cast<int64_t>(gen.below(static_cast<uint64_t>(r))) * (gen.chance(50) ? 1 : -1);
        m += static_cast<uint64_t>(d);
        e.backtrace.push_back(m);
      }
      events.push_back(e);
    }
    ThreadBuffer tb{0x1234, 1000, events};
    std::vector<uint8_t> bytes = encode_buffer(tb);
    BufferHeader h;
    REQUIRE(decode_buffer_header(bytes.data(), h) == format::kBufferId);
    size_t last_start = 0;  // the last event's place in the buffer's data
    {
      BufferDecoder d(h, bytes.data() + format::kBufferHeaderSize, 100);
      Event e;
      std::string problem;
      uint64_t offset = 0;
      size_t i = 0;
      while (d.next(e, problem, offset)) {
        REQUIRE(i < events.size());
        INFO("round " << round << " event " << i);
        CHECK(e.backtrace == events[i].backtrace);
        last_start = offset - 100;
        ++i;
      }
      CHECK(problem.empty());
      CHECK(i == events.size());
    }
    // Cut inside the last event (at least one byte of it kept, one gone).
    const size_t data = bytes.size() - format::kBufferHeaderSize;
    const size_t last_len = data - last_start;
    if (last_len < 2) continue;
    const size_t keep = format::kBufferHeaderSize + last_start + 1 + gen.below(last_len - 1);
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(keep));
    BufferHeader hc = h;
    hc.length = static_cast<uint32_t>(keep - format::kBufferHeaderSize);
    BufferDecoder d(hc, cut.data() + format::kBufferHeaderSize, 100);
    Event e;
    std::string problem;
    uint64_t offset = 0;
    size_t i = 0;
    while (d.next(e, problem, offset)) {
      REQUIRE(i < events.size());
      CHECK(e.backtrace == events[i].backtrace);
      ++i;
    }
    CHECK(i == events.size() - 1);  // the cut event is not decoded
    CHECK_FALSE(problem.empty());    // and says so
    CHECK(d.problem_offset() >= 100);
    CHECK(d.problem_offset() <= 100 + hc.length);
  }
}
