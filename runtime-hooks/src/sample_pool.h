// The sample records shared by the signal handler (sampler.cpp) and the helper (sample_drain.cpp).
//
// One mmap'd array of fixed-size records, sized at start. A record moves FREE -> WRITING -> READY ->
// FREE: the handler pops a FREE record from a tagged lock-free stack (the tag defeats ABA), fills it,
// and publishes it with one release store of READY; the helper scans for READY records (acquire),
// writes them out and pushes them back on the free stack. No lock, no allocation, no call into the
// dynamic linker on the handler's side.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "mlpd/hooks/sampling.h"

namespace mlpd::hooks::sampling_detail {

inline constexpr uint32_t kFree = 0;
inline constexpr uint32_t kWriting = 1;
inline constexpr uint32_t kReady = 2;

inline constexpr uint32_t kMaxFrames = 32;          // managed frames per record (format::kMaxFrames)
inline constexpr uint32_t kStackCopyBytes = 16384;  // stack top copied for the helper's unwinding
inline constexpr uint32_t kRegs = 17;               // libunwind's x86-64 numbering: RAX..R15, RIP
inline constexpr uint64_t kMaxSamplePool = 16384;   // maxsamples=0 ("no limit") means this many

struct ManagedFrame {
  uint64_t method;      // MonoMethod*, 0 when the walk could not name it (AOT code)
  uint64_t domain;
  uint64_t code_start;
};

struct Record {
  std::atomic<uint32_t> state;
  std::atomic<uint32_t> next;  // free stack link: index + 1, 0 = end
  uint64_t time;
  uint64_t tid;                // pthread_self(), as Mono
  uint64_t ip;
  uint64_t regs[kRegs];
  uint64_t stack_addr;         // where the copy starts (the interrupted rsp)
  uint32_t stack_len;          // bytes copied (0: copy failed)
  uint32_t nframes;
  int32_t leaf_offset;         // native offset of the innermost managed frame (-1: none)
  ManagedFrame frames[kMaxFrames];
  alignas(16) unsigned char stack[kStackCopyBytes];
};

struct Pool {
  Record* records = nullptr;
  uint32_t count = 0;
  uint32_t maxframes = kMaxFrames;
  std::atomic<uint64_t> free_head{0};  // (tag << 32) | (index + 1)

  Record* pop() noexcept {
    uint64_t head = free_head.load(std::memory_order_acquire);
    for (;;) {
      const uint32_t idx = static_cast<uint32_t>(head);
      if (idx == 0) return nullptr;
      Record* r = &records[idx - 1];
      const uint32_t next = r->next.load(std::memory_order_relaxed);
      const uint64_t want = ((head >> 32) + 1) << 32 | next;
      if (free_head.compare_exchange_weak(head, want, std::memory_order_acquire, std::memory_order_acquire)) return r;
    }
  }

  void push(Record* r) noexcept {
    const uint32_t idx = static_cast<uint32_t>(r - records) + 1;
    r->state.store(kFree, std::memory_order_relaxed);
    uint64_t head = free_head.load(std::memory_order_relaxed);
    for (;;) {
      r->next.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
      const uint64_t want = ((head >> 32) + 1) << 32 | idx;
      if (free_head.compare_exchange_weak(head, want, std::memory_order_release, std::memory_order_relaxed)) return;
    }
  }
};

struct Counters {
  std::atomic<uint64_t> taken{0}, written{0}, skipped_idle{0}, dropped_pool_full{0}, dropped_shutdown{0},
      dropped_unfinished{0}, stack_copy_failed{0}, unwind_failed{0}, frames_left_out{0},
      handler_ns{0}, drain_ns{0};
};

// Set up by start_sampling(); nullptr when sampling is off.
extern Pool* g_pool;
extern Counters g_counters;
extern rt::MetaLog* g_sample_meta;

}  // namespace mlpd::hooks::sampling_detail
