// The header decoders (mlpd/header_decoder.h) take apart exactly what the encoders (mlpd/encoder.h)
// write: random and boundary values, byte for byte, and both of the encoder's buffer-header forms.
#include "mlpd_catch.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"

using namespace mlpd;

namespace {

uint64_t pick(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0: return 0;
    case 1: return std::numeric_limits<uint64_t>::max();
    case 2: return uint64_t{1} << 63;
    case 3: return rng() & 0xFF;
    default: return rng();
  }
}

}  // namespace

TEST_CASE("decode_buffer_header gives back what encode_buffer_header wrote", "[codec][header]") {
  std::mt19937_64 rng(26);
  for (int i = 0; i < 5000; ++i) {
    BufferHeader h;
    h.length = static_cast<uint32_t>(pick(rng));
    h.time_base = pick(rng);
    h.ptr_base = static_cast<int64_t>(pick(rng));
    h.obj_base = static_cast<int64_t>(pick(rng));
    h.thread_id = pick(rng);
    h.method_base = static_cast<int64_t>(pick(rng));
    std::vector<uint8_t> bytes;
    encode_buffer_header(h, bytes);
    REQUIRE(bytes.size() == format::kBufferHeaderSize);
    uint8_t raw[format::kBufferHeaderSize];
    REQUIRE(encode_buffer_header(h, raw) == raw + sizeof raw);
    REQUIRE(std::vector<uint8_t>(raw, raw + sizeof raw) == bytes);  // the two encoders agree

    BufferHeader d;
    CHECK(decode_buffer_header(bytes.data(), d) == format::kBufferId);
    CHECK(d == h);
    CHECK(buffer_header_id(bytes.data()) == format::kBufferId);
    CHECK(buffer_header_length(bytes.data()) == h.length);
    // Byte for byte: encoding the decoded header writes the same 48 bytes.
    std::vector<uint8_t> again;
    encode_buffer_header(d, again);
    CHECK(again == bytes);
  }
}

TEST_CASE("a buffer header's fields sit where the format says (hand-written bytes)", "[codec][header]") {
  uint8_t raw[format::kBufferHeaderSize] = {0x01, 0x4C, 0x50, 0x4D,  // BUF_ID, little-endian
                                            0x10, 0x00, 0x00, 0x00};  // length 16
  for (int i = 0; i < 8; ++i) {
    raw[8 + i] = static_cast<uint8_t>(0x10 + i);   // time base
    raw[16 + i] = static_cast<uint8_t>(0x20 + i);  // pointer base
    raw[24 + i] = static_cast<uint8_t>(0x30 + i);  // object base
    raw[32 + i] = static_cast<uint8_t>(0x40 + i);  // thread id
    raw[40 + i] = static_cast<uint8_t>(0x50 + i);  // method base
  }
  BufferHeader h;
  CHECK(decode_buffer_header(raw, h) == format::kBufferId);
  CHECK(h.length == 16);
  CHECK(h.time_base == 0x1716151413121110ull);
  CHECK(h.ptr_base == 0x2726252423222120ll);
  CHECK(h.obj_base == 0x3736353433323130ll);
  CHECK(h.thread_id == 0x4746454443424140ull);
  CHECK(h.method_base == 0x5756555453525150ll);
  raw[0] = 0;
  CHECK(decode_buffer_header(raw, h) != format::kBufferId);
}

TEST_CASE("decode_file_header_fixed gives back what encode_file_header wrote", "[codec][header]") {
  std::mt19937_64 rng(17);
  for (int i = 0; i < 5000; ++i) {
    FileHeader h;
    h.major = static_cast<uint8_t>(pick(rng));
    h.minor = static_cast<uint8_t>(pick(rng));
    h.data_version = static_cast<uint8_t>(pick(rng));
    h.ptr_size = static_cast<uint8_t>(pick(rng));
    h.startup_ms = pick(rng);
    h.startup_ns = pick(rng);
    h.timer_overhead = static_cast<int32_t>(pick(rng));
    h.flags = static_cast<int32_t>(pick(rng));
    h.pid = static_cast<int32_t>(pick(rng));
    h.port = static_cast<uint16_t>(pick(rng));
    h.args = std::string(rng() % 5, 'a');
    h.arch = "x86-64";
    h.os = "linux";
    std::vector<uint8_t> bytes;
    encode_file_header(h, bytes);
    REQUIRE(bytes.size() >= format::kFileHeaderFixedSize);

    FileHeader d;
    CHECK(decode_file_header_fixed(bytes.data(), d) == format::kFileId);
    // The strings follow, each a 4-byte length (with its NUL) and the bytes.
    size_t at = format::kFileHeaderFixedSize;
    for (std::string* s : {&d.args, &d.arch, &d.os}) {
      REQUIRE(at + 4 <= bytes.size());
      const uint32_t len = header_string_length(bytes.data() + at);
      REQUIRE(len >= 1);
      REQUIRE(at + 4 + len <= bytes.size());
      s->assign(reinterpret_cast<const char*>(bytes.data() + at + 4), len - 1);
      at += 4 + len;
    }
    CHECK(at == bytes.size());
    CHECK(d == h);
    std::vector<uint8_t> again;
    encode_file_header(d, again);
    CHECK(again == bytes);  // byte for byte
  }
}
