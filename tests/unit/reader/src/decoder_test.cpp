// The decoder rejects malformed input precisely: each hand-built case asserts the problem's message
// and the byte offset it reports (the offset of the offending field), the buffer index, and what was
// delivered before and after. Also ReferenceChecker (verify --strict).
#include "mlpd_catch.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "event_gen.h"
#include "recording_visitor.h"
#include "mlpd/checks.h"
#include "mlpd/decode_loop.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"

using namespace mlpd;
using namespace mlpd::test;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes header_bytes(const FileHeader& h = default_header()) {
  Bytes out;
  encode_file_header(h, out);
  return out;
}

// A buffer (header + data) whose header says exactly data.size() bytes unless `length` is given.
Bytes raw_buffer(const Bytes& data, uint64_t thread_id = 1, int64_t length = -1) {
  BufferHeader h;
  h.length = length < 0 ? static_cast<uint32_t>(data.size()) : static_cast<uint32_t>(length);
  h.time_base = 1000;
  h.thread_id = thread_id;
  Bytes out;
  append_buffer_header(out, h);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes file_of(const std::vector<Bytes>& buffers) {
  Bytes out = header_bytes();
  for (const Bytes& b : buffers) out.insert(out.end(), b.begin(), b.end());
  return out;
}

// File offset of the first buffer's event data.
uint64_t data_start() { return header_bytes().size() + format::kBufferHeaderSize; }

void set_le32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// Decodes `file` and requires exactly one problem, containing `message`, at `offset`.
DecodedFile expect_one_problem(const Bytes& file, const std::string& message, uint64_t offset, int64_t buffer,
                               const DecodeOptions& options = {}) {
  DecodedFile d = decode_bytes(file, options);
  INFO(d.problems_text());
  REQUIRE(d.problems.size() == 1);
  CHECK_THAT(d.problems[0].message, mlpd_test::contains(message));
  CHECK(d.problems[0].offset == offset);
  CHECK(d.problems[0].buffer == buffer);
  CHECK(d.summary.problems == 1);
  return d;
}

// One buffer holding `data`: one problem with `message` at data offset `rel`, and `events_before`
// events delivered before it.
void expect_event_problem(const Bytes& data, const std::string& message, uint64_t rel, size_t events_before = 0) {
  INFO("data: " << Catch::Detail::stringify(data));
  const DecodedFile d = expect_one_problem(file_of({raw_buffer(data)}), message, data_start() + rel, 0);
  CHECK(d.events.size() == events_before);
  REQUIRE(d.buffers.size() == 1);
}

std::string event_suffix(uint8_t event_byte, uint64_t rel) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "(event byte 0x%02x at offset %llu)", event_byte,
                static_cast<unsigned long long>(data_start() + rel));
  return buf;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// File header

TEST_CASE("file header problems", "[decoder][header]") {
  const Bytes good = header_bytes();
  const FileHeader h = default_header();
  const uint64_t args_at = format::kFileHeaderFixedSize;
  const uint64_t arch_at = args_at + 4 + h.args.size() + 1;
  const uint64_t os_at = arch_at + 4 + h.arch.size() + 1;
  REQUIRE(os_at + 4 + h.os.size() + 1 == good.size());

  SECTION("a good header decodes") {
    const DecodedFile d = decode_bytes(good);
    CHECK(d.problems.empty());
    CHECK(d.header_ok);
    CHECK(d.header == h);
  }
  SECTION("bad file id") {
    Bytes f = good;
    f[0] = 0x02;
    const DecodedFile d = expect_one_problem(f, "not an mlpd file: header id 0x4d505a02, expected 0x4d505a01", 0, -1);
    CHECK(!d.header_ok);
    CHECK(!d.summary.header_ok);
  }
  SECTION("an mlpd buffer instead of a file header") {
    expect_one_problem(raw_buffer(Bytes(10, 0)), "not an mlpd file: header id 0x4d504c01", 0, -1);
  }
  SECTION("unsupported major version") {
    for (uint8_t major : {0, 1, 2, 4, 255}) {
      Bytes f = good;
      f[4] = major;
      f[5] = 7;
      expect_one_problem(f, "unsupported format version " + std::to_string(major) + ".7", 4, -1);
    }
  }
  SECTION("a different minor version is accepted") {
    Bytes f = good;
    f[5] = 1;
    const DecodedFile d = decode_bytes(f);
    CHECK(d.problems.empty());
    CHECK(d.header.minor == 1);
  }
  SECTION("data version 16 and 18") {
    for (uint8_t v : {16, 18, 0, 13}) {
      Bytes f = good;
      f[6] = v;
      expect_one_problem(f, "unsupported data version " + std::to_string(v) + " (mlpd reads 17)", 6, -1);
    }
  }
  SECTION("pointer size") {
    Bytes f = good;
    f[7] = 5;
    expect_one_problem(f, "invalid pointer size 5", 7, -1);
  }
  SECTION("flags other than 0") {
    Bytes f = good;
    set_le32(f, 28, 1);
    expect_one_problem(f, "unsupported header flags 0x1", 28, -1);
    set_le32(f, 28, 0x80000000);
    expect_one_problem(f, "unsupported header flags 0x80000000", 28, -1);
  }
  SECTION("header string length 0") {
    Bytes f = good;
    set_le32(f, args_at, 0);
    expect_one_problem(f, "header args: invalid string length 0", args_at, -1);
  }
  SECTION("huge header string length") {
    Bytes f = good;
    set_le32(f, arch_at, 0x7fffffff);
    expect_one_problem(f, "header arch: invalid string length 2147483647", arch_at, -1);
    set_le32(f, arch_at, (1u << 20) + 1);
    expect_one_problem(f, "header arch: invalid string length 1048577", arch_at, -1);
  }
  SECTION("header string not NUL-terminated") {
    Bytes f = good;
    f.back() = 'x';  // the os string's NUL
    expect_one_problem(f, "header os: string not NUL-terminated", good.size() - 1, -1);
    Bytes g = good;
    g[arch_at + 4 + h.arch.size()] = '!';  // the arch string's NUL
    expect_one_problem(g, "header arch: string not NUL-terminated", arch_at + 4 + h.arch.size(), -1);
  }
  SECTION("truncated fixed part") {
    expect_one_problem(Bytes(), "truncated file header: needs 38 bytes, 0 present", 0, -1);
    expect_one_problem(Bytes(good.begin(), good.begin() + 20), "truncated file header: needs 38 bytes, 20 present",
                       20, -1);
    expect_one_problem(Bytes(good.begin(), good.begin() + 37), "truncated file header: needs 38 bytes, 37 present",
                       37, -1);
  }
  SECTION("truncated strings") {
    expect_one_problem(Bytes(good.begin(), good.begin() + 40), "truncated header args: needs 4 bytes, 2 present",
                       40, -1);
    expect_one_problem(Bytes(good.begin(), good.begin() + static_cast<ptrdiff_t>(args_at + 4 + 3)),
                       "truncated header args: needs " + std::to_string(h.args.size() + 1) + " bytes, 3 present",
                       args_at + 7, -1);
    expect_one_problem(Bytes(good.begin(), good.end() - 1),
                       "truncated header os: needs " + std::to_string(h.os.size() + 1) + " bytes", good.size() - 1,
                       -1);
  }
  SECTION("a string with a NUL inside keeps the part before it") {
    Bytes f = good;
    f[arch_at + 4 + 3] = 0;  // "x86\0-64\0"
    const DecodedFile d = decode_bytes(f);
    CHECK(d.problems.empty());
    CHECK(d.header.arch == "x86");
  }
}

// ------------------------------------------------------------------------------------------------
// Buffer framing

TEST_CASE("buffer framing problems", "[decoder][buffer]") {
  const Bytes good_data = {0x0A, 0x05, 0x00};  // sync point
  const Bytes good = raw_buffer(good_data);
  const uint64_t buf1 = header_bytes().size() + good.size();  // offset of the second buffer

  SECTION("a file with no buffers is fine") {
    const DecodedFile d = decode_bytes(header_bytes());
    CHECK(d.problems.empty());
    CHECK(d.buffers.empty());
  }
  SECTION("an empty buffer is fine") {
    const DecodedFile d = decode_bytes(file_of({raw_buffer({}), good}));
    CHECK(d.problems.empty());
    CHECK(d.buffers.size() == 2);
    CHECK(d.events.size() == 1);
  }
  SECTION("bad buffer id: reported at the buffer, decoding stops") {
    Bytes bad = good;
    bad[0] = 0x02;
    const DecodedFile d =
        expect_one_problem(file_of({good, bad, good}), "bad buffer id 0x4d504c02, expected 0x4d504c01", buf1, 1);
    CHECK(d.events.size() == 1);  // the first buffer's event
    CHECK(d.buffers.size() == 1);
  }
  SECTION("file header id in place of a buffer") {
    Bytes two = file_of({good});
    const Bytes again = header_bytes();
    two.insert(two.end(), again.begin(), again.end());
    expect_one_problem(two, "bad buffer id 0x4d505a01", buf1, 1);
  }
  SECTION("buffer length over the limit") {
    DecodeOptions opt;
    opt.max_buffer_length = 100;
    CHECK(decode_bytes(file_of({raw_buffer(Bytes(100, 0x06))}), opt).problems.empty());  // 50 heap starts
    const DecodedFile d = expect_one_problem(file_of({good, raw_buffer(Bytes(101, 0x06))}),
                                             "buffer length 101 exceeds the limit of 100 bytes", buf1 + 4, 1, opt);
    CHECK(d.events.size() == 1);
    // The default limit (64 MiB) refuses a length of 4 GiB - 1 without trying to read it.
    expect_one_problem(file_of({raw_buffer(Bytes(8, 0), 1, 0xffffffff)}),
                       "buffer length 4294967295 exceeds the limit of 67108864 bytes", header_bytes().size() + 4, 0);
  }
  SECTION("buffer data truncated") {
    const DecodedFile d = expect_one_problem(file_of({good, raw_buffer(Bytes(10, 0x06), 2, 50)}),
                                             "truncated buffer data: needs 50 bytes, 10 present",
                                             buf1 + 48 + 10, 1);
    CHECK(d.events.size() == 1);
    CHECK(d.buffers.size() == 1);  // the truncated buffer is not delivered
  }
  SECTION("buffer header truncated") {
    Bytes f = file_of({good});
    const Bytes partial = raw_buffer(good_data);
    f.insert(f.end(), partial.begin(), partial.begin() + 10);
    const DecodedFile d =
        expect_one_problem(f, "truncated buffer header: needs 48 bytes, 10 present", buf1 + 10, 1);
    CHECK(d.events.size() == 1);
  }
}

// ------------------------------------------------------------------------------------------------
// Event types and subtypes

TEST_CASE("unknown event types", "[decoder][event]") {
  for (uint8_t type : {9, 11, 12, 13, 14, 15}) {
    for (uint8_t ext : {0x00, 0x10, 0xF0}) {
      const uint8_t eb = static_cast<uint8_t>(type | ext);
      INFO("event byte " << int(eb));
      // After a good sync point, so the offset is not 0 within the buffer.
      expect_event_problem({0x0A, 0x00, 0x00, eb, 0x00, 0x00}, "unknown event type " + event_suffix(eb, 3), 3, 1);
    }
  }
}

TEST_CASE("unknown subtypes of every base type", "[decoder][event]") {
  // The valid extended-info values (high nibble) of each base type, from the format description.
  struct Valid {
    uint8_t type;
    std::vector<uint8_t> exts;
  };
  const Valid valid[] = {
      {format::TYPE_ALLOC, {0, 1}},
      {format::TYPE_GC, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
      {format::TYPE_METADATA, {0, 2, 4}},
      {format::TYPE_METHOD, {1, 2, 3, 4}},
      {format::TYPE_EXCEPTION, {0, 1, 8}},
      {format::TYPE_MONITOR, {0, 8}},
      {format::TYPE_HEAP, {0, 1, 2, 3, 4, 5}},
      {format::TYPE_SAMPLE, {0, 1, 3, 4}},
      {format::TYPE_RUNTIME, {1}},
      {format::TYPE_META, {0, 1}},
  };
  int unknown = 0;
  for (const Valid& v : valid) {
    for (uint8_t ext = 0; ext < 16; ++ext) {
      const uint8_t eb = static_cast<uint8_t>(v.type | (ext << 4));
      INFO("event byte " << int(eb));
      const bool ok = std::find(v.exts.begin(), v.exts.end(), ext) != v.exts.end();
      if (ok) {
        // A valid subtype gets past the subtype check: whatever the bytes after it mean, no problem
        // is reported at the event byte itself.
        const DecodedFile d = decode_bytes(file_of({raw_buffer({eb, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})}));
        for (const Problem& p : d.problems) CHECK(p.offset > data_start());
      } else {
        ++unknown;
        expect_event_problem({0x0A, 0x00, 0x00, eb, 0x00, 0x00}, "unknown event subtype " + event_suffix(eb, 3), 3,
                             1);
      }
    }
  }
  CHECK(unknown == 16 * 10 - (2 + 11 + 3 + 4 + 3 + 2 + 6 + 4 + 1 + 2));
}

TEST_CASE("metadata types and subtypes", "[decoder][event]") {
  SECTION("unknown metadata type, reported at the type byte") {
    for (uint8_t mtype : {0, 8, 9, 0x7f, 0xff}) {
      for (uint8_t eb : {0x02, 0x22, 0x42}) {
        expect_event_problem({eb, 0x00, mtype, 0x00, 0x00}, "unknown metadata type " + std::to_string(mtype), 2);
      }
    }
  }
  SECTION("class and vtable unload, and names of things that have none") {
    struct Case {
      uint8_t eb, mtype;
      const char* message;
    };
    const Case cases[] = {
        {0x42, format::TYPE_CLASS, "class metadata event with unsupported subtype 4"},
        {0x02, format::TYPE_CLASS, "class metadata event with unsupported subtype 0"},
        {0x42, format::TYPE_VTABLE, "vtable metadata event with unsupported subtype 4"},
        {0x02, format::TYPE_VTABLE, "vtable metadata event with unsupported subtype 0"},
        {0x02, format::TYPE_IMAGE, "image metadata event with unsupported subtype 0"},
        {0x02, format::TYPE_ASSEMBLY, "assembly metadata event with unsupported subtype 0"},
        {0x02, format::TYPE_CONTEXT, "context metadata event with unsupported subtype 0"},
    };
    for (const Case& c : cases) {
      expect_event_problem({0x0A, 0x00, 0x00, c.eb, 0x01, c.mtype, 0x00, 0x00, 'A', 0x00}, c.message, 5, 1);
    }
  }
  SECTION("the subtypes that do exist decode") {
    const Bytes data = {0x22, 0x00, 0x01, 0x00, 0x00, 'A', 0x00,  // class load
                        0x42, 0x00, 0x02, 0x00, 'i', 0x00,        // image unload
                        0x02, 0x00, 0x04, 0x00, 'd', 0x00,        // domain name
                        0x42, 0x00, 0x05, 0x00,                   // thread end
                        0x22, 0x00, 0x07, 0x00, 0x00, 0x00};      // vtable load
    const DecodedFile d = decode_bytes(file_of({raw_buffer(data)}));
    CHECK(d.problems.empty());
    REQUIRE(d.events.size() == 5);
    CHECK(d.events[0].event.kind == EventKind::class_load);
    CHECK(d.events[1].event.kind == EventKind::image_unload);
    CHECK(d.events[2].event.kind == EventKind::domain_name);
    CHECK(d.events[2].event.name == "d");
    CHECK(d.events[3].event.kind == EventKind::thread_end);
    CHECK(d.events[4].event.kind == EventKind::vtable_load);
  }
}

// ------------------------------------------------------------------------------------------------
// Field-level problems

TEST_CASE("LEB128 longer than 64 bits", "[decoder][event]") {
  // Time delta: 11 bytes.
  expect_event_problem({0x0A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00},
                       "LEB128 value longer than 64 bits", 1);
  // Time delta: 10 bytes carrying bit 64.
  expect_event_problem({0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0x00},
                       "LEB128 value longer than 64 bits", 1);
  // ...while 2^64-1 in 10 bytes is fine.
  CHECK(decode_bytes(file_of({raw_buffer({0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x00})}))
            .problems.empty());
  // sleb pointer of an alloc after a good event: 10th byte not a sign extension.
  expect_event_problem({0x0A, 0x00, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
                        0x00, 0x00},
                       "LEB128 value longer than 64 bits", 5, 1);
  // sleb object: 11 bytes.
  expect_event_problem({0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x00},
                       "LEB128 value longer than 64 bits", 3);
  // uleb inside a list: a heap reference offset.
  expect_event_problem({0x26, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                        0x80, 0x80, 0x00, 0x00},
                       "LEB128 value longer than 64 bits", 7);
}

TEST_CASE("reads past the buffer end inside an event", "[decoder][event]") {
  // Only the event byte.
  expect_event_problem({0x23}, "read past the end of the buffer (LEB128) " + event_suffix(0x23, 0), 1);
  // A uleb whose continuation bit runs into the end.
  expect_event_problem({0x23, 0x05, 0x80}, "read past the end of the buffer (LEB128)", 2);
  // Missing object of an alloc, after one good event.
  expect_event_problem({0x0A, 0x00, 0x00, 0x00, 0x00, 0x00}, "read past the end of the buffer (LEB128)", 6, 1);
  // gc event without its generation byte.
  expect_event_problem({0x11, 0x00, 0x00}, "read past the end of the buffer " + event_suffix(0x11, 0), 3);
  // metadata without its type byte.
  expect_event_problem({0x22, 0x00}, "read past the end of the buffer", 2);
  // A double counter value with 3 of its 8 bytes.
  expect_event_problem({0x47, 0x00, 0x01, 0x05, 0x00, 0x00, 0x00}, "read past the end of the buffer (double counter)",
                       4);
  // A counter sample list without its 0 terminator.
  expect_event_problem({0x47, 0x00, 0x01, 0x01, 0x05}, "read past the end of the buffer (LEB128)", 5);
  // A backtrace whose second frame runs into the end (count 2, one byte each would fit).
  expect_event_problem({0x84, 0x00, 0x00, 0x02, 0x80, 0x80}, "read past the end of the buffer (LEB128)", 4);
}

TEST_CASE("unterminated strings", "[decoder][event]") {
  expect_event_problem({0x1A, 0x00, 'a', 'b', 'c'}, "unterminated string " + event_suffix(0x1A, 0), 2);
  expect_event_problem({0x1A, 0x00}, "unterminated string", 2);
  // Image load: the name is fine, the mvid is not.
  expect_event_problem({0x22, 0x00, 0x02, 0x00, 'a', 0x00, 'm'}, "unterminated string", 6);
  // Perf counter descriptor: the section name runs to the end.
  expect_event_problem({0x37, 0x00, 0x01, 0x80, 0x80, 0x02, 'C', 'a', 't', 'x', 'x', 'x', 'x'}, "unterminated string",
                       6);
}

TEST_CASE("item counts larger than the buffer", "[decoder][event]") {
  const std::string msg = "item count larger than the buffer";
  // Backtrace of 5 frames with 2 bytes left.
  expect_event_problem({0x10, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00}, msg, 5);
  // GC move of 4 addresses with 2 bytes left.
  expect_event_problem({0x31, 0x00, 0x04, 0x00, 0x00}, msg, 2);
  // Heap roots: 2 roots need at least 4 bytes, 3 left.
  expect_event_problem({0x36, 0x00, 0x02, 0x00, 0x00, 0x00}, msg, 2);
  // Heap object references: 2 refs need 4 bytes, 3 left.
  expect_event_problem({0x26, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00}, msg, 6);
  // Sample hit IPs, then frames.
  expect_event_problem({0x07, 0x00, 0x00, 0x03, 0x00, 0x00}, msg, 3);
  expect_event_problem({0x07, 0x00, 0x00, 0x01, 0x00, 0x05, 0x00, 0x00}, msg, 5);
  // Counter descriptors: 2 descriptors need at least 12 bytes.
  expect_event_problem({0x37, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01}, msg, 2);
  // A huge count (2^63) is refused the same way, not allocated.
  expect_event_problem({0x31, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, msg, 2);
}

TEST_CASE("item counts above the reader's limit", "[decoder][event]") {
  // 2^20 + 1 refs fit in the buffer (2 bytes each) but exceed the per-event limit.
  const uint64_t n = (1u << 20) + 1;
  Bytes data = {0x36, 0x00};
  uint64_t v = n;
  while (v >= 0x80) {
    data.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  data.push_back(static_cast<uint8_t>(v));
  data.resize(data.size() + 2 * n, 0);
  expect_event_problem(data, "item count above the reader's limit of 1048576", 2);
}

TEST_CASE("odd number of addresses in a GC move", "[decoder][event]") {
  expect_event_problem({0x31, 0x00, 0x03, 0x00, 0x00, 0x00}, "odd number of addresses in GC move 3", 2);
  expect_event_problem({0x0A, 0x00, 0x00, 0x31, 0x05, 0x01, 0x00}, "odd number of addresses in GC move 1", 5, 1);
  CHECK(decode_bytes(file_of({raw_buffer({0x31, 0x00, 0x02, 0x00, 0x00})})).problems.empty());
}

TEST_CASE("invalid enum values are reported at the field holding them", "[decoder][event]") {
  SECTION("GC event") {
    for (uint8_t v : {1, 2, 3, 4, 12, 255})
      expect_event_problem({0x11, 0x00, v, 0x00}, "unknown GC event " + std::to_string(v) + " " + event_suffix(0x11, 0),
                           2);
    for (uint8_t v : {0, 5, 6, 7, 8, 9, 10, 11})
      CHECK(decode_bytes(file_of({raw_buffer({0x11, 0x00, v, 0x00})})).problems.empty());
  }
  SECTION("GC handle type") {
    expect_event_problem({0x41, 0x00, 0x04, 0x00, 0x00}, "unknown GC handle type 4", 2);
    expect_event_problem({0x51, 0x00, 0x80, 0x01, 0x00}, "unknown GC handle type 128", 2);  // 2-byte uleb
    expect_event_problem({0x0A, 0x00, 0x00, 0x71, 0x00, 0x05, 0x00, 0x00}, "unknown GC handle type 5", 5, 1);
    CHECK(decode_bytes(file_of({raw_buffer({0x41, 0x00, 0x03, 0x00, 0x00})})).problems.empty());
  }
  SECTION("clause type") {
    for (uint8_t v : {3, 5, 255})
      expect_event_problem({0x14, 0x00, v, 0x00, 0x00, 0x00}, "unknown clause type " + std::to_string(v), 2);
  }
  SECTION("monitor event") {
    for (uint8_t v : {0, 4, 255}) {
      expect_event_problem({0x05, 0x00, v, 0x00}, "unknown monitor event " + std::to_string(v), 2);
      expect_event_problem({0x85, 0x00, v, 0x00, 0x00}, "unknown monitor event " + std::to_string(v), 2);
    }
  }
  SECTION("sync point type") {
    expect_event_problem({0x0A, 0x00, 0x03}, "unknown sync point type 3", 2);
    expect_event_problem({0x0A, 0x00, 0x00, 0x0A, 0x00, 0xFF}, "unknown sync point type 255", 5, 1);
  }
  SECTION("JIT helper type") {
    expect_event_problem({0x18, 0x00, 0x0A, 0x00, 0x00}, "unknown code buffer type 10", 2);
    expect_event_problem({0x18, 0x00, 0xFF, 0x00, 0x00}, "unknown code buffer type 255", 2);
  }
  SECTION("GC root source") {
    expect_event_problem({0x46, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00}, "unknown GC root source 17", 4);
    CHECK(decode_bytes(file_of({raw_buffer({0x46, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00})})).problems.empty());
  }
  SECTION("counter type in a descriptor") {
    // count 1, section 0x100, name "n", type 8, unit, variance, index.
    expect_event_problem({0x37, 0x00, 0x01, 0x80, 0x02, 'n', 0x00, 0x08, 0x00, 0x00, 0x01}, "unknown counter type 8",
                         7);
  }
  SECTION("counter descriptor index 0") {
    expect_event_problem({0x37, 0x00, 0x01, 0x80, 0x02, 'n', 0x00, 0x01, 0x00, 0x00, 0x00},
                         "counter descriptor with index 0", 10);
  }
  SECTION("counter type in a sample") {
    expect_event_problem({0x47, 0x00, 0x01, 0x08, 0x00, 0x00}, "unknown counter type 8", 3);
    // After a good value (index 1, UINT 5).
    expect_event_problem({0x47, 0x00, 0x01, 0x01, 0x05, 0x02, 0x80, 0x01, 0x00, 0x00}, "unknown counter type 128", 6);
  }
  SECTION("string counter marker") {
    expect_event_problem({0x47, 0x00, 0x01, 0x06, 0x02, 0x00}, "invalid string counter marker 2", 4);
    CHECK(decode_bytes(file_of({raw_buffer({0x47, 0x00, 0x01, 0x06, 0x00, 0x00})})).problems.empty());
  }
}

// ------------------------------------------------------------------------------------------------
// Recovery

TEST_CASE("after a malformed buffer the decoder continues with the next one", "[decoder][recovery]") {
  EventGen gen(17);
  const std::vector<Event> first = gen.events(20);
  const std::vector<Event> third = gen.events(20);
  const Bytes b0 = encode_buffer({1, 100, first});
  // Second buffer: two good sync points, then an unknown event type, then a good one that must not
  // be delivered.
  const Bytes b1 = raw_buffer({0x0A, 0x01, 0x00, 0x0A, 0x01, 0x01, 0x0C, 0x00, 0x0A, 0x01, 0x02}, 2);
  const Bytes b2 = encode_buffer({3, 300, third});
  const Bytes file = file_of({b0, b1, b2});
  const uint64_t b1_data = header_bytes().size() + b0.size() + 48;

  SECTION("continue") {
    const DecodedFile d = expect_one_problem(file, "unknown event type", b1_data + 6, 1);
    REQUIRE(d.buffers.size() == 3);
    CHECK(d.events_of_buffer(0) == first);
    const std::vector<Event> mid = d.events_of_buffer(1);
    REQUIRE(mid.size() == 2);
    CHECK(mid[0].kind == EventKind::sync_point);
    CHECK(mid[0].time == 1001);
    CHECK(mid[1].code == 1);
    CHECK(d.events_of_buffer(2) == third);
    CHECK(d.summary.events == first.size() + 2 + third.size());
    CHECK(d.summary.buffers == 3);
  }
  SECTION("stop_at_first_problem") {
    DecodeOptions opt;
    opt.stop_at_first_problem = true;
    const DecodedFile d = expect_one_problem(file, "unknown event type", b1_data + 6, 1, opt);
    CHECK(d.buffers.size() == 2);
    CHECK(d.events.size() == first.size() + 2);
    CHECK(d.events_of_buffer(2).empty());
  }
  SECTION("every malformed buffer is reported, each once") {
    const Bytes bad = raw_buffer({0x11, 0x00, 0x03, 0x00}, 4);
    const DecodedFile d = decode_bytes(file_of({b0, bad, b1, bad, b2}));
    INFO(d.problems_text());
    REQUIRE(d.problems.size() == 3);
    CHECK(d.problems[0].buffer == 1);
    CHECK_THAT(d.problems[0].message, mlpd_test::contains("unknown GC event 3"));
    CHECK(d.problems[1].buffer == 2);
    CHECK(d.problems[2].buffer == 3);
    CHECK(d.events_of_buffer(4) == third);
  }
}

TEST_CASE("event offsets point at event bytes", "[decoder]") {
  const Bytes data = {0x0A, 0x00, 0x00, 0x23, 0x05, 0x00, 0x1A, 0x00, 'x', 0x00};
  const DecodedFile d = decode_bytes(file_of({raw_buffer(data), raw_buffer(data)}));
  REQUIRE(d.problems.empty());
  REQUIRE(d.events.size() == 6);
  const uint64_t s = data_start();
  const uint64_t expected[] = {s, s + 3, s + 6, s + 10 + 48, s + 13 + 48, s + 16 + 48};
  for (size_t i = 0; i < 6; ++i) CHECK(d.events[i].offset == expected[i]);
  CHECK(d.buffers[1].offset == s + 10);
}

// ------------------------------------------------------------------------------------------------
// ReferenceChecker

namespace {
Event ev(EventKind k) {
  Event e;
  e.reset(k);
  return e;
}
}  // namespace

TEST_CASE("ReferenceChecker: things used before they are described", "[checks]") {
  ReferenceChecker rc;
  SECTION("method") {
    Event enter = ev(EventKind::method_enter);
    enter.method = 0x5000;
    CHECK(rc.check(enter) == "method 0x5000 is used before it is described");
    CHECK(rc.check(enter).empty());  // reported once
    Event leave = ev(EventKind::method_leave);
    leave.method = 0x5008;
    CHECK(rc.check(leave) == "method 0x5008 is used before it is described");
    Event clause = ev(EventKind::exception_clause);
    clause.method = 0x5010;
    CHECK(rc.check(clause) == "method 0x5010 is used before it is described");
    Event exc = ev(EventKind::method_exc_leave);
    exc.method = 0x5018;
    CHECK(rc.check(exc) == "method 0x5018 is used before it is described");
  }
  SECTION("methods in backtraces and sample frames") {
    Event a = ev(EventKind::alloc);
    Event vt = ev(EventKind::vtable_load);
    Event cls = ev(EventKind::class_load);
    Event img = ev(EventKind::image_load);
    img.ptr = 0x10;
    cls.ptr = 0x20;
    cls.ptr2 = 0x10;
    vt.ptr = 0x30;
    vt.ptr3 = 0x20;
    a.ptr = 0x30;
    CHECK(rc.check(img).empty());
    CHECK(rc.check(cls).empty());
    CHECK(rc.check(vt).empty());
    a.has_backtrace = true;
    a.backtrace = {0x6000, 0x6008};
    CHECK(rc.check(a) == "method 0x6000 is used before it is described");
    CHECK(rc.check(a) == "method 0x6008 is used before it is described");
    CHECK(rc.check(a).empty());
    Event hit = ev(EventKind::sample_hit);
    hit.frames = {0x6000, 0x7000};
    CHECK(rc.check(hit) == "method 0x7000 is used before it is described");
    Event t = ev(EventKind::exception_throw);
    t.has_backtrace = true;
    t.backtrace = {0x7008};
    CHECK(rc.check(t) == "method 0x7008 is used before it is described");
  }
  SECTION("class") {
    Event vt = ev(EventKind::vtable_load);
    vt.ptr = 0x30;
    vt.ptr3 = 0x20;
    CHECK(rc.check(vt) == "class 0x20 is used before it is described");
    vt.ptr = 0x38;
    CHECK(rc.check(vt).empty());
  }
  SECTION("vtable") {
    Event a = ev(EventKind::alloc);
    a.ptr = 0x30;
    CHECK(rc.check(a) == "vtable 0x30 is used before it is described");
    CHECK(rc.check(a).empty());
    Event ho = ev(EventKind::heap_object);
    ho.ptr = 0x40;
    CHECK(rc.check(ho) == "vtable 0x40 is used before it is described");
  }
  SECTION("image") {
    Event cls = ev(EventKind::class_load);
    cls.ptr = 0x20;
    cls.ptr2 = 0x10;
    CHECK(rc.check(cls) == "image 0x10 is used before it is described");
    Event as = ev(EventKind::assembly_load);
    as.ptr2 = 0x11;
    CHECK(rc.check(as) == "image 0x11 is used before it is described");
    Event un = ev(EventKind::image_unload);
    un.ptr = 0x12;
    CHECK(rc.check(un) == "image 0x12 is used before it is described");
    CHECK(rc.check(un).empty());
  }
}

TEST_CASE("ReferenceChecker: nothing to report when everything is described first", "[checks]") {
  ReferenceChecker rc;
  Event img = ev(EventKind::image_load);
  img.ptr = 0x10;
  Event as = ev(EventKind::assembly_load);
  as.ptr = 0x15;
  as.ptr2 = 0x10;
  Event cls = ev(EventKind::class_load);
  cls.ptr = 0x20;
  cls.ptr2 = 0x10;
  Event vt = ev(EventKind::vtable_load);
  vt.ptr = 0x30;
  vt.ptr3 = 0x20;
  Event jit = ev(EventKind::method_jit);
  jit.method = 0x5000;
  Event jit2 = ev(EventKind::method_jit);
  jit2.method = 0x5008;
  Event a = ev(EventKind::alloc);
  a.ptr = 0x30;
  a.has_backtrace = true;
  a.backtrace = {0x5000, 0x5008};
  Event ho = ev(EventKind::heap_object);
  ho.ptr = 0x30;
  Event enter = ev(EventKind::method_enter);
  enter.method = 0x5000;
  Event clause = ev(EventKind::exception_clause);
  clause.method = 0x5008;
  Event hit = ev(EventKind::sample_hit);
  hit.frames = {0x5008, 0x5000};
  Event un = ev(EventKind::image_unload);
  un.ptr = 0x10;
  for (const Event& e : {img, as, cls, vt, jit, jit2, a, ho, enter, clause, hit, un}) {
    INFO(describe(e));
    CHECK(rc.check(e).empty());
  }
  // Events that reference nothing are never reported.
  EventGen gen(5);
  for (EventKind k : {EventKind::gc_event, EventKind::sync_point, EventKind::heap_root, EventKind::gc_move,
                      EventKind::thread_start}) {
    CHECK(rc.check(gen.make(k)).empty());
  }
}

TEST_CASE("ReferenceChecker: each unknown pointer is reported once over a random stream", "[checks]") {
  EventGen gen(23);
  ReferenceChecker rc;
  std::vector<std::string> reports;
  for (int i = 0; i < 3000; ++i) {
    Event e = gen.make(EventKind::method_enter);
    e.method = 0x1000 + 8 * gen.below(50);  // 50 distinct methods
    const std::string r = rc.check(e);
    if (!r.empty()) reports.push_back(r);
  }
  CHECK(reports.size() == 50);
  std::sort(reports.begin(), reports.end());
  CHECK(std::unique(reports.begin(), reports.end()) == reports.end());
}

TEST_CASE("ReferenceChecker: counter samples name described counters of the described type", "[checks]") {
  ReferenceChecker rc;
  Event desc = ev(EventKind::counter_descriptors);
  desc.counter_descs.push_back({format::COUNTER_SECTION_PROFILER, "", "a", format::COUNTER_ULONG, 0, 0, 1});
  desc.counter_descs.push_back({0x100, "", "b", format::COUNTER_INT, 0, 0, 2});
  Event sample = ev(EventKind::counter_samples);
  sample.counter_values.push_back({1, format::COUNTER_ULONG, 5, false, ""});
  SECTION("before its descriptor") {
    CHECK(rc.check(sample) == "counter 1 is sampled before it is described");
    CHECK(rc.check(sample).empty());  // reported once
  }
  SECTION("after it") {
    CHECK(rc.check(desc).empty());
    CHECK(rc.check(sample).empty());
    sample.counter_values.push_back({2, format::COUNTER_INT, 1, false, ""});
    CHECK(rc.check(sample).empty());
    sample.counter_values.push_back({3, format::COUNTER_INT, 1, false, ""});
    CHECK(rc.check(sample) == "counter 3 is sampled before it is described");
  }
  SECTION("with another type") {
    CHECK(rc.check(desc).empty());
    sample.counter_values[0].type = format::COUNTER_LONG;
    CHECK(rc.check(sample) == "counter 1 is sampled as type 3 but described as type 4");
  }
}

// decode_counting() (verify's parallel path) must tell exactly what decode() tells, but on_event: the
// same header, buffers, problems and warnings in the same order with the same offsets, the same summary,
// and event counts per kind equal to decode()'s events. Over valid random files and corrupted copies
// (bytes overwritten, the file cut), with 2 and 3 worker threads and a ring smaller than the file.
namespace {

void expect_same_as_decode(const Bytes& file, unsigned threads, const DecodeOptions& opt = {}) {
  RecordingVisitor seq, par;
  auto in1 = Input::from_memory(file.data(), file.size());
  const DecodeSummary s1 = decode(*in1, seq, opt);
  auto in2 = Input::from_memory(file.data(), file.size());
  EventCounts counts{};
  const DecodeSummary s2 = decode_counting(*in2, par, opt, counts, threads);
  CHECK(summary_text(s2) == summary_text(s1));
  CHECK(par.calls == seq.calls);
  CHECK(counts == seq.counts);
  CHECK(par.counts == EventCounts{});  // no on_event
}

}  // namespace

TEST_CASE("decode_counting: the same as decode() on valid and corrupted files", "[decoder][parallel]") {
  EventGen gen(77);
  std::vector<ThreadBuffer> bufs;
  for (int i = 0; i < 60; ++i) bufs.push_back({static_cast<uint64_t>(0x100 + i % 5), 1000u + i, gen.events(1 + gen.below(40))});
  const Bytes good = build_file(bufs);
  for (unsigned threads : {2u, 3u}) {
    INFO("threads " << threads);
    expect_same_as_decode(good, threads);
    DecodeOptions stop;
    stop.stop_at_first_problem = true;
    for (int round = 0; round < 150; ++round) {
      INFO("round " << round);
      Bytes bad = good;
      const int changes = 1 + static_cast<int>(gen.below(4));
      for (int c = 0; c < changes; ++c) bad[gen.below(bad.size())] = static_cast<uint8_t>(gen.below(256));
      if (gen.chance(20)) bad.resize(gen.below(bad.size()));
      expect_same_as_decode(bad, threads);
      expect_same_as_decode(bad, threads, stop);
    }
  }
}

TEST_CASE("decode_counting: big buffers (read-ahead bounded by bytes, slots released)", "[decoder][parallel]") {
  EventGen gen(78);
  std::vector<ThreadBuffer> bufs;
  for (int i = 0; i < 10; ++i)
    bufs.push_back({static_cast<uint64_t>(0x200 + i % 3), 5000u + i, gen.events(EventKind::method_enter, 120000)});
  Bytes file = build_file(bufs);
  REQUIRE(file.size() > 10u * (1u << 20));  // buffers above the 1 MiB a slot keeps, over the 8 MiB read-ahead
  expect_same_as_decode(file, 2);
  file[file.size() / 2] ^= 0x5A;  // and a problem in the middle
  expect_same_as_decode(file, 2);
}
