// The exporters' helpers (reader/views/export_common.h): JSON escaping of hostile names, the
// per-thread record spill, and the open-frame tracking that keeps evented output balanced.
#include "mlpd_catch.h"

#include <cstring>
#include <string>
#include <vector>

#include "export_common.h"

using mlpd::views::detail::append_us;
using mlpd::views::detail::json_escape;
using mlpd::views::detail::OpenFrames;
using mlpd::views::detail::RecordSpill;

TEST_CASE("json_escape: quotes, controls, invalid UTF-8 become valid JSON", "[exports]") {
  std::string out;
  json_escape(out, std::string("a\"b\\c\n\x01\x7f", 8));
  CHECK(out == "a\\\"b\\\\c\\n\\u0001\\u007f");
  out.clear();
  json_escape(out, "caf\xc3\xa9 \xe2\x82\xac");  // valid UTF-8 kept as is
  CHECK(out == "caf\xc3\xa9 \xe2\x82\xac");
  out.clear();
  json_escape(out, "x\xff y\xc3 \xed\xa0\x80");  // stray byte, truncated sequence, surrogate
  CHECK(out == "x\\ufffd y\\ufffd \\ufffd\\ufffd\\ufffd");
}

TEST_CASE("utf8_clean: invalid bytes become U+FFFD, valid text is kept", "[exports]") {
  using mlpd::views::detail::utf8_clean;
  CHECK(utf8_clean("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(utf8_clean("a\xff" "b") == "a\xef\xbf\xbd" "b");
  CHECK(utf8_clean("\xc3") == "\xef\xbf\xbd");
}

TEST_CASE("append_us: microseconds with ns decimals", "[exports]") {
  std::string out;
  append_us(out, 0);
  out += ' ';
  append_us(out, 1234567);
  out += ' ';
  append_us(out, 5000);
  out += ' ';
  append_us(out, 7);
  CHECK(out == "0 1234.567 5 0.007");
}

TEST_CASE("RecordSpill: records of each key come back in order across chunks", "[exports]") {
  RecordSpill spill(sizeof(uint64_t), 4);  // 4 records per chunk: most go through the file
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint64_t v = i;
    spill.add(static_cast<uint32_t>(i % 3), &v);
  }
  REQUIRE(spill.ok());
  for (uint32_t k = 0; k < 3; ++k) {
    std::vector<uint64_t> got;
    CHECK(spill.for_each(k, [&](const void* r) {
      uint64_t v;
      std::memcpy(&v, r, sizeof v);
      got.push_back(v);
    }));
    REQUIRE(got.size() == spill.count(k));
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == i * 3 + k);
  }
  size_t none = 0;
  CHECK(spill.for_each(7, [&](const void*) { ++none; }));
  CHECK(none == 0);
}

TEST_CASE("OpenFrames: leaves close what they must, unknown leaves are ignored", "[exports]") {
  OpenFrames open;
  std::vector<OpenFrames::Closed> closed;
  REQUIRE(open.open(0, 1, 10));
  REQUIRE(open.open(0, 2, 20));
  REQUIRE(open.open(0, 3, 30));
  open.close(0, 9, closed);  // never opened
  CHECK(closed.empty());
  open.close(0, 2, closed);  // closes 3 (left open by unwinding) then 2
  REQUIRE(closed.size() == 2);
  CHECK(closed[0].frame == 3);
  CHECK(closed[1].frame == 2);
  CHECK(closed[1].start == 20);
  closed.clear();
  open.close(1, 1, closed);  // another thread: nothing open there
  CHECK(closed.empty());
  open.close_all(0, closed);
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].frame == 1);
}

TEST_CASE("OpenFrames: bounded depth and search", "[exports]") {
  OpenFrames open;
  std::vector<OpenFrames::Closed> closed;
  for (size_t i = 0; i < OpenFrames::kMaxDepth; ++i) REQUIRE(open.open(0, static_cast<uint32_t>(i % 5), i));
  CHECK_FALSE(open.open(0, 42, 1));  // too deep: not kept
  open.close(0, 42, closed);         // its leave is dropped with it
  CHECK(closed.empty());
  open.close(0, 77, closed);  // not open: ignored, not searched through 65536 frames
  CHECK(closed.empty());
  open.close(0, static_cast<uint32_t>((OpenFrames::kMaxDepth - 1) % 5), closed);
  CHECK(closed.size() == 1);
}
