// Test support: random valid mlpd events, whole files built from them, and in-memory decoding.
//
//   EventGen gen(seed);
//   std::vector<mlpd::test::ThreadBuffer> bufs = {{0x1234, 1000, gen.events(50)}};
//   std::vector<uint8_t> file = mlpd::test::build_file(bufs);            // or Compression::gzip
//   mlpd::test::DecodedFile d = mlpd::test::decode_bytes(file);
//   // d.problems empty, d.event_list() == bufs[0].events
//
// Every Event EventGen makes is valid for the v17 decoder (enum fields in range, counter indices
// non-zero, strings NUL-free, object addresses multiples of 8, heap reference offsets increasing) and
// sets only the fields its kind uses (event.h), so a decoded copy compares equal with ==. Its fields
// are generated from the layout table (mlpd/event_layout.h), as the encoder and the decoder are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/event.h"
#include "mlpd/input.h"

namespace mlpd::test {

// Every EventKind, in declaration order (loop over this so a new kind is never skipped).
std::vector<EventKind> all_event_kinds();

// True for the kinds that have a _BT variant (alloc, gc_handle_created/destroyed, exception_throw,
// monitor): those the layout table gives a _BT event byte.
bool kind_has_backtrace_variant(EventKind kind);

// Generator of valid random events. Values mix uniformly random ones with boundary values (0, 1,
// UINT64_MAX, INT64_MIN/MAX, LEB128 length edges); pointers, objects and methods are NULL often
// enough that NULL regularly comes first in a buffer. Deterministic for a given seed.
class EventGen {
 public:
  explicit EventGen(uint64_t seed = 1);

  // One random valid event of `kind`. Its time continues the generator's clock (see next_time()).
  Event make(EventKind kind);
  // One random valid event of a random kind.
  Event make_any();
  // `n` events of `kind`, or of random kinds.
  std::vector<Event> events(EventKind kind, size_t n);
  std::vector<Event> events(size_t n);

  // ---- value pickers (public so tests can build their own events) ----
  std::mt19937_64& rng() { return rng_; }
  uint64_t below(uint64_t n);      // uniform in [0, n), n > 0
  bool chance(unsigned percent);   // true with the given probability
  uint64_t u64();                  // random or boundary 64-bit value
  int64_t i64() { return static_cast<int64_t>(u64()); }
  uint64_t pointer();              // any 64-bit value, NULL often
  uint64_t object();               // a multiple of 8 (the format stores addr >> 3), NULL often
  uint64_t method();               // any 64-bit value, NULL often
  std::string text();              // NUL-free UTF-8: empty, ASCII, multi-byte, sometimes long (>4 KiB)
  std::vector<uint64_t> backtrace();  // 0..32 frames, sometimes longer (up to 300)
  // Next event time: small steps forward mostly, but also huge steps, steps backwards (negative
  // deltas, written as 10-byte uleb), and jumps to 0 / UINT64_MAX / random values.
  uint64_t next_time();
  void set_time(uint64_t t) { time_ = t; }

  CounterDesc counter_desc();      // any section (0x8000 with a section name), type 0..7, index != 0
  CounterValue counter_value();    // any type 0..7 incl. DOUBLE and STRING (null and non-null)

 private:
  std::mt19937_64 rng_;
  uint64_t time_ = 0;
};

// ---- building files ----

// The events of one buffer, written by one thread. The encoder takes the buffer's pointer, object and
// method bases from the events themselves.
struct ThreadBuffer {
  uint64_t thread_id = 0;
  uint64_t time_base = 0;
  std::vector<Event> events;
};

enum class Compression { none, gzip };

// A plausible v17 header (x86-64, linux, non-empty args, non-zero port and pid).
FileHeader default_header();

// Writes a buffer header exactly as given (length included, even when it does not match any data).
void append_buffer_header(std::vector<uint8_t>& out, const BufferHeader& header);
// Encodes one buffer (48-byte header + data) with BufferEncoder. An empty event list gives a
// buffer of length 0 (Mono never writes one, but the format allows it).
std::vector<uint8_t> encode_buffer(const ThreadBuffer& buffer);
// File header + every buffer in order, optionally as one gzip member.
std::vector<uint8_t> build_file(const FileHeader& header, const std::vector<ThreadBuffer>& buffers,
                                Compression compression = Compression::none);
std::vector<uint8_t> build_file(const std::vector<ThreadBuffer>& buffers,
                                Compression compression = Compression::none);
// One gzip member (RFC 1952) holding `data`; concatenate results for a multi-member stream.
std::vector<uint8_t> gzip(const std::vector<uint8_t>& data, int level = 6);

// ---- diagnostics ----

// One line naming the kind and every non-empty field, for test failure messages.
std::string describe(const Event& event);

// ---- decoding ----

struct DecodedEvent {
  Event event;
  uint64_t offset = 0;        // file offset of the event byte
  uint64_t buffer_index = 0;  // BufferInfo::index of the buffer holding it
};

struct DecodedFile {
  DecodeSummary summary;
  bool header_ok = false;
  FileHeader header;
  std::vector<BufferInfo> buffers;  // in file order (only buffers whose data could be read)
  std::vector<DecodedEvent> events;
  std::vector<Problem> problems;
  std::vector<Problem> warnings;  // Visitor::on_warning: a gzip input cut inside its last member

  // The events without their positions, in file order.
  std::vector<Event> event_list() const;
  // The events of buffer `index` (BufferInfo::index), in order.
  std::vector<Event> events_of_buffer(uint64_t index) const;
  // All events of the buffers of `thread_id`, in file order.
  std::vector<Event> events_of_thread(uint64_t thread_id) const;
  // The problems as "offset N (buffer K): message" lines, for failure messages.
  std::string problems_text() const;
};

// Decodes `input` to the end, collecting everything the decoder reports.
DecodedFile decode_input(Input& input, const DecodeOptions& options = {});
// Decodes a file held in memory (plain or gzip), via Input::from_memory.
DecodedFile decode_bytes(const std::vector<uint8_t>& file, const DecodeOptions& options = {});

}  // namespace mlpd::test
