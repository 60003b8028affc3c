// The runtime's own events that mlpd takes from an in-process EventPipe session
// (ICorProfilerInfo12::EventPipeStartSession, delivered to ICorProfilerCallback10::EventPipeEventDelivered):
// the provider, keywords, event ids, and the payload layouts of the events used, read by our own
// bounded decoder. The facts (ids, versions, field order and types) are those of the runtime's event
// manifest (dotnet/runtime, src/coreclr/vm/ClrEtwAll.man) and of the metadata the runtime delivers with
// each event; the payload is little-endian, packed, pointers 8 bytes on 64-bit, strings UTF-16 with a
// terminating 0. A payload shorter than its version's layout is refused (never read past its end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mlpd::coreclr::event_pipe {

inline constexpr char16_t kRuntimeProvider[] = u"Microsoft-Windows-DotNETRuntime";

// Keywords (the manifest's ContentionKeyword and AllocationSamplingKeyword) and levels.
inline constexpr uint64_t kContentionKeyword = 0x4000;
inline constexpr uint64_t kAllocationSamplingKeyword = 0x80000000000ull;
inline constexpr uint32_t kLevelInformational = 4;

// Event ids.
inline constexpr uint32_t kContentionStart = 81;
inline constexpr uint32_t kContentionStop = 91;
inline constexpr uint32_t kAllocationSampled = 303;

// AllocationSampled's fixed mean distance between samples (.NET 10: each byte allocated is a
// Bernoulli trial of probability 1/102400; a sampled object of `size` bytes was sampled with
// probability 1 - (1 - 1/102400)^size, what the reader's 1 - exp(-size/102400) is to 1e-5).
inline constexpr uint64_t kAllocationSamplingMean = 102400;

// ContentionFlags: 0 a managed lock (Monitor, System.Threading.Lock), 1 a native one.
inline constexpr uint8_t kContentionManaged = 0;

// A bounded little-endian reader over one payload.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(data ? size : 0) {}
  bool ok() const { return ok_; }
  size_t offset() const { return off_; }
  template <class T>
  T get() {
    T v{};
    if (!ok_ || n_ - off_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, p_ + off_, sizeof(T));
    off_ += sizeof(T);
    return v;
  }
  uint64_t pointer() { return get<uint64_t>(); }  // 64-bit processes only (the agent's targets)
  // A UTF-16 string up to and with its terminating 0 (skipped: its characters are not needed).
  void skip_utf16z() {
    while (ok_) {
      if (get<uint16_t>() == 0) return;
    }
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
  bool ok_ = true;
};

// ContentionStart: V1 ContentionFlags (u8), ClrInstanceID (u16); V2 (.NET 8+) then LockID (pointer),
// AssociatedObjectID (pointer), LockOwnerThreadID (u64).
struct ContentionStart {
  uint8_t flags = 0;
  uint64_t lock_id = 0;
  uint64_t object = 0;  // the object locked (Monitor), 0 when the payload has none
  uint64_t owner_thread = 0;
};
inline bool parse_contention_start(const uint8_t* data, size_t size, uint32_t version, ContentionStart& out) {
  Reader r(data, size);
  out = ContentionStart{};
  if (version == 0) return true;  // V0 carries nothing
  out.flags = r.get<uint8_t>();
  (void)r.get<uint16_t>();
  if (version >= 2) {
    out.lock_id = r.pointer();
    out.object = r.pointer();
    out.owner_thread = r.get<uint64_t>();
  }
  return r.ok();
}

// ContentionStop: V0 ContentionFlags (u8), ClrInstanceID (u16); V1 then DurationNs (double).
struct ContentionStop {
  uint8_t flags = 0;
  double duration_ns = 0;
};
inline bool parse_contention_stop(const uint8_t* data, size_t size, uint32_t version, ContentionStop& out) {
  Reader r(data, size);
  out = ContentionStop{};
  out.flags = r.get<uint8_t>();
  (void)r.get<uint16_t>();
  if (version >= 1) out.duration_ns = r.get<double>();
  return r.ok();
}

// AllocationSampled (V0, .NET 10): AllocationKind (u32), ClrInstanceID (u16), TypeID (pointer: the
// MethodTable, which is the profiling API's ClassID), TypeName (UTF-16, 0-terminated), Address
// (pointer), ObjectSize (u64), SampledByteOffset (u64). (Checked against .NET 10.0.12's payloads: 24
// bytes after the name, no heap index.)
struct AllocationSampled {
  uint32_t kind = 0;
  uint64_t type_id = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t sampled_offset = 0;
};
inline bool parse_allocation_sampled(const uint8_t* data, size_t size, AllocationSampled& out) {
  Reader r(data, size);
  out = AllocationSampled{};
  out.kind = r.get<uint32_t>();
  (void)r.get<uint16_t>();
  out.type_id = r.pointer();
  r.skip_utf16z();
  out.address = r.pointer();
  out.size = r.get<uint64_t>();
  out.sampled_offset = r.get<uint64_t>();
  return r.ok();
}

}  // namespace mlpd::coreclr::event_pipe
