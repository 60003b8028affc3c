// BufferDecoder::mark() and resume(): an event decoded again from its mark equals the event decoded in
// order, for every kind (the reader's parallel profile build replays events that way).
#include "mlpd_catch.h"

#include <vector>

#include "event_gen.h"
#include "mlpd/buffer_decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"

using namespace mlpd;
using namespace mlpd::test;

TEST_CASE("BufferDecoder: an event decoded again from its mark is the same event", "[codec][resume]") {
  EventGen gen(25);
  for (int round = 0; round < 20; ++round) {
    ThreadBuffer tb{0x1234, 1000, gen.events(300)};
    const std::vector<uint8_t> bytes = encode_buffer(tb);
    BufferHeader h;
    REQUIRE(decode_buffer_header(bytes.data(), h) == format::kBufferId);
    const uint8_t* data = bytes.data() + format::kBufferHeaderSize;
    BufferDecoder in_order(h, data, 0);
    std::vector<Event> events;
    std::vector<BufferDecoder::Mark> marks;
    Event e;
    std::string problem;
    uint64_t offset = 0;
    for (BufferDecoder::Mark m = in_order.mark(); in_order.next(e, problem, offset); m = in_order.mark()) {
      events.push_back(e);
      marks.push_back(m);
    }
    REQUIRE(problem.empty());
    REQUIRE(events.size() == tb.events.size());
    BufferDecoder again(h, data, 0);
    Event r;
    // Backwards, so that every event follows a different one than in order.
    for (size_t i = events.size(); i-- > 0;) {
      again.resume(marks[i]);
      REQUIRE(again.next(r, problem, offset));
      INFO(describe(events[i]));
      CHECK(r == events[i]);
    }
  }
}
