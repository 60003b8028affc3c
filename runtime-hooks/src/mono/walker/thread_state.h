// The stack walker's per-thread state: each thread's stack bounds, its IP -> code entry cache, the
// `this` vtables it copied, the MonoJitTlsData found for it and its counts not yet added to the
// global ones. Allocated at the thread's first backtrace, freed at its exit (a pthread key).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "walker/code_table.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker {

constexpr unsigned kIpCache = 4096;  // IP -> code entry, two ways per set (64 KiB per thread)

// A cached lookup: the entry's address, or for "not JIT code we know" (kNativeEntry) the code
// generation then, as (generation << 1) | 1.
struct IpSlot {
  uint64_t ip;
  uintptr_t value;
};

// `this` objects' vtables already read (see generic_context), with the collection count then.
constexpr unsigned kThisCache = 64;
struct ThisSlot {
  uint64_t obj, vtable, epoch;
};

// Why a walk went to Mono (slow[] by reason); kOk: it did not.
constexpr int kOk = 0, kNoBottom = 1, kNoManaged = 2, kNoTop = 3, kNoGeneric = 4;

struct ThreadWalk {
  uintptr_t native_tag = 1;  // an IpSlot value for kNativeEntry valid now: (g_generation << 1) | 1
  bool bounds_ok = false;
  uintptr_t lo = 0, hi = 0;  // this thread's stack
  uint32_t fast = 0, slow[5] = {};  // not yet added to the global counters (slow: by reason)
  uint32_t via_lmf = 0;             // of `fast`: started from the LMF
  uint64_t jit_tls = 0;      // Mono's MonoJitTlsData of this thread (see lmf_frame), once found
  uint8_t jit_tls_tries = 0;  // searches for it so far
  uint32_t lmf_misses = 0;    // walks that wanted it before it was found
  uint64_t aot_asked[16] = {};  // addresses lately asked about as possible AOT code (stack_walker.cpp)
  IpSlot ips[kIpCache];
  ThisSlot objs[kThisCache];
};

extern constinit thread_local ThreadWalk* tls_walk __attribute__((tls_model("initial-exec")));
extern std::atomic<uint64_t> g_fast_total, g_slow_total[5], g_lmf_total;

// Adds a thread's counts to the global ones.
void flush_counts(ThreadWalk& t);
// The calling thread's state, made at its first backtrace (nullptr: out of memory).
ThreadWalk* make_thread_walk();
inline ThreadWalk* thread_walk() {
  if (ThreadWalk* t = tls_walk) [[likely]] return t;
  return make_thread_walk();
}
// The pthread key whose destructor frees a thread's state (init()); false when none could be made.
bool make_thread_key();

// A cached lookup of `ip` in slot `s` that still holds, or nullptr: a cached entry holds until its
// range leaves the table (`gone`), a cached "not JIT code" until a range is added (native_tag).
inline const CodeEntry* cached(const ThreadWalk& t, const IpSlot& s, uint64_t ip) {
  if (s.ip != ip) return nullptr;
  const uintptr_t v = s.value;
  if (v & 1) return v == t.native_tag ? &kNativeEntry : nullptr;
  const auto* e = reinterpret_cast<const CodeEntry*>(v);
  return e && !e->gone.load(std::memory_order_acquire) ? e : nullptr;
}

// The code entry holding return address `ret` (the call instruction is before it, hence ret - 1),
// through the thread's cache: two ways per set, the most recent first. So freeing a method costs a
// walk nothing (before, every thread's cache was emptied: each of its next frames a lookup under
// the table's mutex), and the IPs of a compiler's deep stacks mostly stay cached (bench_dynamic:
// 1.49M lookups under the mutex with 512 direct-mapped slots, 0.23M with 4096).
inline const CodeEntry* lookup(ThreadWalk& t, uint64_t ret) {
  const uint64_t ip = ret - 1;
  IpSlot* set = &t.ips[((ip >> 2) % (kIpCache / 2)) * 2];
  if (const CodeEntry* e = cached(t, set[0], ip)) [[likely]] return e;
  if (const CodeEntry* e = cached(t, set[1], ip)) {
    std::swap(set[0], set[1]);
    return e;
  }
  const CodeEntry* e = lookup_slow(ip);
  set[1] = set[0];
  set[0] = IpSlot{ip, e == &kNativeEntry ? t.native_tag : reinterpret_cast<uintptr_t>(e)};
  return e;
}

inline uint64_t load(uintptr_t a) { return *reinterpret_cast<const uint64_t*>(a); }

// The part of the stack a walk may read: from the walk's own frame (the anchor: everything above
// it is the live, mapped stack of this thread) to the top of the thread's stack.
struct Bounds {
  uintptr_t lo, hi;
};

// True when the 8 bytes at base + off lie inside `b`. Computed without an end that could wrap
// around 2^64: `base` and `off` come from what the stack holds and may be anything.
inline bool readable(const Bounds& b, uintptr_t base, int64_t off) {
  if (base < b.lo || base > b.hi) return false;
  if (off >= 0) {
    const auto o = static_cast<uint64_t>(off);
    return o <= b.hi - base && b.hi - base - o >= 8;
  }
  const uint64_t o = 0 - static_cast<uint64_t>(off);
  return o <= base - b.lo && b.hi - (base - o) >= 8;
}

// Copies [addr, addr + n) of this process if it is mapped and readable (a fault is an error, not a
// crash): with process_vm_readv, or where that is missing or refused (ENOSYS: qemu-user; EPERM: a
// seccomp sandbox) through a pipe of our own (write from the address, read back), from the first
// refusal on. errno EFAULT: a fault.
bool read_memory(uint64_t addr, uint8_t* out, size_t n);
// The pipe's way alone (tests/unit: the way qemu-user's runs take, tested on every machine).
bool read_memory_by_pipe(uint64_t addr, uint8_t* out, size_t n);
// Our pid for read_memory, taken at init() and again in the child of a fork.
void take_pid();

}  // namespace mlpd::hooks::walker
#pragma GCC visibility pop
