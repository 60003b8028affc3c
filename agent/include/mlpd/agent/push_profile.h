// push= (docs/fleet.md): the CPU profile of each push interval, built on the helper thread from the
// bytes it writes. Every round's pieces (the file's buffers: metadata and events, in file order) go
// through absorb(), which decodes them with the codec's BufferDecoder and keeps
//   * the names: method_jit (a method's name and code range), sample_usym (native symbols); kept for
//     the process's life, as the agent's own metadata is (a method is described once);
//   * the interval's samples: one count per distinct stack (raw addresses, leaf first), at most
//     kMaxStacks distinct stacks (the samples beyond count under "[more stacks than push keeps]");
//   * the interval's allocations: objects and bytes per distinct backtrace, bounded the same way.
// take_pprof() then encodes the interval as pprof's profile.proto (a small encoder of its own: the
// agent does not link the reader or protobuf), gzipped, and starts the next interval. Frames are named
// as the reader names them: an IP in JIT'd code is its method, else the native symbol around it, else
// "[native code, unnamed]"; then the sample's managed frames.
// Buffers compressed by the program's threads (zip's members) are inflated first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlpd/event.h"

namespace mlpd::agent {

class PushProfile {
 public:
  static constexpr size_t kMaxStacks = 20000;
  static constexpr size_t kMaxDepth = 256;

  // A stream of whole mlpd buffers (48-byte header, then the events), as the flusher writes them; a
  // buffer may be split across calls (pieces). Malformed data stops this absorb (counted).
  void absorb(const uint8_t* data, size_t size);
  // A piece of a gzip member (zip: a full buffer its thread compressed), inflated into absorb().
  void absorb_member(const uint8_t* data, size_t size);
  PushProfile() = default;
  ~PushProfile();
  PushProfile(const PushProfile&) = delete;
  PushProfile& operator=(const PushProfile&) = delete;

  // The interval's samples as a gzipped pprof (samples/count; time_nanos = start_unix_ns,
  // duration_nanos = duration_ns); "" when there were none. Starts the next interval of samples.
  std::string take_pprof(int64_t start_unix_ns, int64_t duration_ns, uint64_t& samples);
  // The interval's allocations (alloc_objects/count, alloc_space/bytes; by backtrace, "[no
  // backtrace]" without one), weighed as the reader weighs them; "" when there were none.
  std::string take_alloc_pprof(int64_t start_unix_ns, int64_t duration_ns, uint64_t& objects);
  // alloc-sample=BYTES (0: every allocation is recorded).
  void set_alloc_sample_interval(uint64_t bytes) { alloc_interval_ = bytes; }

  uint64_t samples_total() const { return samples_total_; }
  uint64_t problems() const { return problems_; }
  uint64_t interval_samples() const { return interval_samples_; }

 private:
  struct Values {
    uint64_t v[2];
  };
  struct Column {
    const char* type;
    const char* unit;
  };
  void event(const Event& e);
  void alloc(const Event& e);
  void buffer(const uint8_t* whole, size_t size);
  std::string encode(const std::unordered_map<std::string, Values>& stacks, size_t n_values, bool overflow,
                     const uint64_t* overflow_values, const Column* cols, size_t n_cols, int64_t start_unix_ns,
                     int64_t duration_ns);

  // Names (the process's life).
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> code_;  // code start -> (end, method)
  std::unordered_map<uint64_t, std::string> methods_;     // method -> name
  std::map<uint64_t, std::pair<uint64_t, std::string>> symbols_;  // start -> (end, name)
  // The interval: stack (tagged frames, leaf first, as bytes) -> samples.
  std::unordered_map<std::string, Values> stacks_;
  uint64_t interval_samples_ = 0;
  uint64_t overflow_ = 0;
  // The interval's allocations: backtrace (methods, leaf first) -> objects, bytes.
  std::unordered_map<std::string, Values> alloc_stacks_;
  uint64_t interval_allocs_ = 0, interval_alloc_objects_ = 0;
  uint64_t alloc_overflow_[2] = {0, 0};
  uint64_t alloc_interval_ = 0;
  // A buffer split across pieces.
  std::vector<uint8_t> partial_;
  Event e_;
  std::vector<uint64_t> scratch_;
  void* inflate_ = nullptr;  // z_stream of the member being read
  uint64_t samples_total_ = 0, problems_ = 0;
};

}  // namespace mlpd::agent
