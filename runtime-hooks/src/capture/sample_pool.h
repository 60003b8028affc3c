// The sample records shared by the signal handler (sampler.cpp) and the helper (sample_drain.cpp).
//
// One mmap'd array of fixed-size records, sized at start. A record moves FREE -> WRITING -> READY ->
// FREE: the handler pops a FREE record from a tagged lock-free stack (the tag defeats ABA), fills it,
// and publishes it with one release store of READY; the helper scans for READY records (acquire),
// writes them out and pushes them back on the free stack. No lock, no allocation, no call into the
// dynamic linker on the handler's side.
//
// Each record's state and free-stack link live in a separate compact array (Slot, 8 bytes a record),
// not in the record: building the free stack at start and the helper's scans then touch only that
// array, and a record's own pages (~17 KiB) are faulted in only when a handler first fills it.
//
// At the final drain the free stack is closed (its head exchanged with kClosed): a handler that
// passed the on-check before stop then fails to pop and counts the sample as dropped_shutdown, and
// the drain knows exactly which records are not on the stack.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "mlpd/arch/signal_regs.h"
#include "mlpd/capture/sampling.h"

namespace mlpd::hooks::sampling_detail {

inline constexpr uint32_t kFree = 0;
inline constexpr uint32_t kWriting = 1;
inline constexpr uint32_t kReady = 2;

// Frames a sample keeps: 256 managed (the async walk's) and 256 native (the helper's unwinding),
// where Mono's profiler keeps 32 (format::kMaxFrames, which allocation backtraces keep). A deeper
// stack is cut at its root and marked (Record::truncated; sample_drain.cpp writes the marker).
inline constexpr uint32_t kMaxSampleFrames = 256;
inline constexpr uint32_t kStackCopyBytes = 16384;  // stack top copied for the helper's unwinding
inline constexpr uint32_t kRegs = arch::kSignalRegs;  // the machine's registers, libunwind's order (arch/)
inline constexpr uint64_t kMaxSamplePool = 16384;   // maxsamples=0 ("no limit") means this many

// The free stack's head index (low 32 bits of Pool::free_head) once the stack is closed.
inline constexpr uint32_t kClosed = UINT32_MAX;

// True when [addr, addr + len) lies inside [base, base + size), without computing an end that could
// wrap around 2^64 (an address read from a sampled stack or register may be anything).
inline bool within(uint64_t addr, uint64_t len, uint64_t base, uint64_t size) noexcept {
  return addr >= base && len <= size && addr - base <= size - len;
}

struct Slot {
  std::atomic<uint32_t> state;
  std::atomic<uint32_t> next;  // free stack link: index + 1, 0 = end
};

struct Record {
  uint64_t time;
  uint64_t tid;                // pthread_self(), as Mono
  uint64_t ip;
  uint64_t regs[kRegs];
  uint64_t stack_addr;         // where the copy starts (the interrupted stack pointer)
  uint32_t stack_len;          // bytes copied (0: copy failed)
  uint32_t nframes;
  int32_t leaf_offset;         // native offset of the innermost managed frame (-1: none)
  uint32_t truncated;          // 1: the managed walk had more frames than Pool::maxframes
  int32_t os_tid;              // gettid(): names a thread the runtime named before an attach
  uint32_t unused;
  uint64_t leaf_code_start;    // code start of the innermost managed frame
  // MonoMethod* innermost first, 0 where the walk could not name one (AOT code). 8 bytes a frame:
  // 256 frames make a record 1.3 KiB larger than 32 frames of (method, domain, code start) did.
  uint64_t methods[kMaxSampleFrames];
  // Each frame's code start (the walk's base address): names a frame whose method the walk could not
  // (AOT code read in an async context) or that was never described (AOT code has no jit_done).
  uint64_t code[kMaxSampleFrames];
  alignas(16) unsigned char stack[kStackCopyBytes];
};

struct Pool {
  Record* records = nullptr;
  Slot* slots = nullptr;  // one per record, separate from the records (see the top of this file)
  uint32_t count = 0;
  uint32_t maxframes = kMaxSampleFrames;
  std::atomic<uint64_t> free_head{0};  // (tag << 32) | (index + 1); index part kClosed: closed

  uint32_t index(const Record* r) const noexcept { return static_cast<uint32_t>(r - records); }
  std::atomic<uint32_t>& state(const Record* r) noexcept { return slots[index(r)].state; }

  // nullptr when no record is free or the stack is closed (closed() tells which).
  Record* pop() noexcept {
    uint64_t head = free_head.load(std::memory_order_acquire);
    for (;;) {
      const uint32_t idx = static_cast<uint32_t>(head);
      if (idx == 0 || idx == kClosed) return nullptr;
      const uint32_t next = slots[idx - 1].next.load(std::memory_order_relaxed);
      const uint64_t want = ((head >> 32) + 1) << 32 | next;
      if (free_head.compare_exchange_weak(head, want, std::memory_order_acquire, std::memory_order_acquire)) {
        return &records[idx - 1];
      }
    }
  }

  // Once the stack is closed a pushed record is only marked FREE (it is not handed out again).
  void push(Record* r) noexcept {
    const uint32_t idx = index(r) + 1;
    Slot& s = slots[idx - 1];
    s.state.store(kFree, std::memory_order_relaxed);
    uint64_t head = free_head.load(std::memory_order_relaxed);
    for (;;) {
      if (static_cast<uint32_t>(head) == kClosed) return;
      s.next.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
      const uint64_t want = ((head >> 32) + 1) << 32 | idx;
      if (free_head.compare_exchange_weak(head, want, std::memory_order_release, std::memory_order_relaxed)) return;
    }
  }

  bool closed() const noexcept {
    return static_cast<uint32_t>(free_head.load(std::memory_order_acquire)) == kClosed;
  }

  // Closes the stack and returns how many records were on it. Those records then belong to the
  // caller: no pop can take them any more (a pop racing with this fails its CAS, sees kClosed).
  uint32_t close() noexcept {
    const uint64_t head = free_head.exchange(kClosed, std::memory_order_acq_rel);
    uint32_t n = 0;
    for (uint32_t idx = static_cast<uint32_t>(head); idx != 0 && idx != kClosed && n < count; ++n) {
      idx = slots[idx - 1].next.load(std::memory_order_relaxed);
    }
    return n;
  }
};

struct Counters {
  std::atomic<uint64_t> taken{0}, written{0}, skipped_idle{0}, dropped_pool_full{0}, dropped_shutdown{0},
      dropped_unfinished{0}, stack_copy_failed{0}, unwind_failed{0}, frames_left_out{0},
      handler_ns{0}, drain_ns{0}, truncated{0}, cut_unnamed{0}, cut_copy{0}, clock_ns{0};
};

// sample_drain.cpp: registers (once) the pthread_atfork handlers that make fork() wait for the
// helper's unwinding chunk in progress (it holds the loader's lock, which fork does not reset).
void install_fork_guard();

// Set up by start_sampling(); nullptr when sampling is off.
extern Pool* g_pool;
extern Counters g_counters;
extern rt::MetaLog* g_sample_meta;

}  // namespace mlpd::hooks::sampling_detail
