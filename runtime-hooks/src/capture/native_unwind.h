// The native part of a sample's stack: the loaded modules' snapshot and the unwinding of the copied
// stacks into chains of native return addresses (sample_drain.cpp drains, native_names.cpp names).
//
// Native frames are unwound on the helper thread (the sample drain), not in the signal handler, with
// libunwind's remote interface on the copy the handler made (registers + stack top): memory reads
// come from that copy, or from the loaded modules' mapped segments (unwind tables, .eh_frame). A
// batch is unwound in chunks of at most kChunk records, each inside one dl_iterate_phdr() callback:
// the loader holds its dl_load_write_lock for the duration, so no module can be unloaded (dlclose
// takes that lock to unlink and unmap) while we read its tables, and every address we read is first checked against
// the module list of that moment. This thread is not a Mono thread (the GC never suspends it) and
// holds only g_fork_mutex while waiting for the loader's lock (below), so waiting cannot deadlock;
// the host's dlopen/dlclose wait at most for one chunk. The locked part does not allocate (malloc's
// lock may be held by a thread the GC stopped).
//
// fork(): glibc's fork does not reset dl_load_write_lock in the child, so a fork while a chunk holds
// it would leave a child that does not exec hanging at its first dlopen or dl_iterate_phdr. Each
// chunk therefore also holds g_fork_mutex, which a pthread_atfork prepare handler takes (and the
// parent and child handlers release): fork waits for the chunk in progress to end. Lock order is
// always g_fork_mutex, then the loader's lock; the prepare handler runs before glibc takes any lock
// of its own, this thread never forks, and the signal handler never touches g_fork_mutex.
//
// A machine without native unwinding (arch/generic: MLPD_ARCH_NATIVE_UNWIND 0) keeps the leaf IP of
// each sample only, named the same way; libunwind is then neither included nor opened.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sample_pool.h"

namespace mlpd::hooks::sampling_detail {

struct Segment {
  uint64_t start, end;
};

// Fixed-size (no allocation while the loader lock is held: a thread stopped by the GC may hold
// malloc's lock, and we must not make the loader lock wait for the world to restart).
inline constexpr size_t kMaxModules = 1024;
inline constexpr size_t kMaxSegments = 8;

struct Module {
  char name[512];  // dlpi_name ("" for the main program), truncated
  uint64_t bias = 0;
  uint64_t lo = 0, hi = 0;            // extent of the PT_LOAD segments
  uint64_t text_lo = 0, text_hi = 0;  // executable segments
  uint64_t eh_frame_hdr = 0;          // PT_GNU_EH_FRAME, 0 if none
  uint32_t nreadable = 0;
  Segment readable[kMaxSegments];
};

struct Snapshot {
  std::vector<Module> modules;  // sorted by lo; capacity kMaxModules, reserved outside the lock
  unsigned long long adds = 0, subs = 0;

  const Module* find(uint64_t addr) const {
    auto it = std::upper_bound(modules.begin(), modules.end(), addr,
                               [](uint64_t a, const Module& m) { return a < m.lo; });
    if (it == modules.begin()) return nullptr;
    --it;
    return addr < it->hi ? &*it : nullptr;
  }
  bool readable(uint64_t addr, uint64_t len) const {
    const Module* m = find(addr);
    if (!m) return false;
    for (uint32_t i = 0; i < m->nreadable; ++i) {
      const Segment& g = m->readable[i];
      if (g.end >= g.start && within(addr, len, g.start, g.end - g.start)) return true;
    }
    return false;
  }
};

// A completed record being drained, and its native chain.
struct Pending {
  Record* record;
  std::vector<uint64_t> ips;  // native instruction pointers, leaf first
  bool truncated = false;     // the native chain is deeper than the frames kept
  bool past_copy = false;     // the native unwinding stopped at the end of the stack copy: it goes on
};

// Opens the unwinder (libunwind's remote interface) once, on the helper thread; false when there is
// none (libunwind not installed, or a machine without native unwinding): leaf IPs only then.
bool native_unwind_open();

// Fills every record's native chain (`ips`, leaf first; `truncated`, `past_copy`), and `snapshot` with the modules
// loaded at the last chunk (for naming the chain's addresses). With the unwinder, in chunks under the
// loader's lock and g_fork_mutex; without, the leaf IP only. Allocates only before taking the locks.
void native_chains(std::vector<Pending>& batch, Snapshot& snapshot, uint32_t max_native);

}  // namespace mlpd::hooks::sampling_detail
