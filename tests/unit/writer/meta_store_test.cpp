// MetaStore: what a rotated file or a ring dump starts with. Its replay must describe each thing before
// anything that names it, whatever order the descriptions came in again.
#include "mlpd_catch.h"

#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/buffer_decoder.h"
#include "mlpd/event.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"
#include "mlpd/rt/meta_store.h"

#include "event_makers.h"

using namespace mlpd;
using mlpd::test::class_load;
using mlpd::test::vtable_load;

namespace {

// The replayed events, in order.
std::vector<Event> replayed(const rt::MetaStore& store) {
  std::vector<uint8_t> out;
  store.replay(out);
  std::vector<Event> events;
  size_t pos = 0;
  while (out.size() - pos >= format::kBufferHeaderSize) {
    const uint8_t* h = out.data() + pos;
    BufferHeader bh;
    REQUIRE(decode_buffer_header(h, bh) == format::kBufferId);
    REQUIRE(bh.length <= out.size() - pos - format::kBufferHeaderSize);
    BufferDecoder dec(bh, h + format::kBufferHeaderSize, 0);
    Event e;
    std::string problem;
    uint64_t offset = 0;
    while (dec.next(e, problem, offset)) events.push_back(e);
    REQUIRE(problem.empty());
    pos += format::kBufferHeaderSize + bh.length;
  }
  REQUIRE(pos == out.size());
  return events;
}

}  // namespace

TEST_CASE("a class described again after its vtable stays before the vtable", "[writer][meta_store]") {
  rt::MetaStore store;
  store.add(class_load(0x1000, 0x10, "System.Reflection.ConstructorInfo[]", 100));
  store.add(vtable_load(0x2000, 0x1000, 110));
  store.add(class_load(0x1000, 0x10, "System.Reflection.ConstructorInfo[]", 130));  // Mono's class_loaded, late
  const std::vector<Event> ev = replayed(store);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].kind == EventKind::class_load);
  CHECK(ev[0].ptr == 0x1000);
  CHECK(ev[0].time == 100);
  CHECK(ev[1].kind == EventKind::vtable_load);
  CHECK(ev[1].ptr3 == 0x1000);
}

TEST_CASE("a description that changed replaces the old one at the end", "[writer][meta_store]") {
  rt::MetaStore store;
  store.add(class_load(0x1000, 0x10, "A", 100));
  store.add(class_load(0x3000, 0x10, "B", 105));
  store.add(class_load(0x1000, 0x10, "C", 120));  // the address is another class's now
  const std::vector<Event> ev = replayed(store);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].name == "B");
  CHECK(ev[1].name == "C");
  CHECK(ev[1].ptr == 0x1000);
}
