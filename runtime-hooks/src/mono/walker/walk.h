// The stack walker's fast walk: from the walker's own frame through a learned native chain (or the
// thread's last LMF) to the innermost managed frame, frame by frame through the code table's shapes,
// up to a learned native chain above the outermost managed frame (or the thread's first LMF). Reads
// only the calling thread's stack inside its bounds; no lock, no system call, no allocation but on a
// code-table miss (lookup_slow) or a `this` outside the nursery (one copy).
#pragma once

#include "mono/layouts.h"

#include <cstdint>

#include "walker/generic_instances.h"
#include "walker/native_chains.h"
#include "walker/thread_state.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker {

struct FastResult {
  uint32_t n = 0;
  Signature* bottom = nullptr;
  Signature* top = nullptr;
  uint64_t top_ip = 0, top_sp = 0, top_fp = 0;  // the native caller of the outermost managed frame
  GenericSlot* generic = nullptr;  // a learned generic pair this walk used whose cross-checks are due
  bool lmf = false;                // the innermost managed frame came from the thread's last LMF
  bool lmf_top = false;            // the walk ended as Mono's does at the thread's first LMF
  bool segments = false;           // the walk went on from an LMF above native frames, as Mono's does
};

// Walks the calling thread's managed frames from `anchor` (the walker's frame, the base of the learned
// bottom chains) into out[0..max): kOk with r.n frames, or why not (kNoBottom ...: thread_state.h).
// extra_bottom / extra_top: a chain being learned, tried after the published ones. misses: shared
// generic frames the learned pairs do not know are noted there (null: such a frame ends the walk with
// kNoGeneric). allow_lmf: an allocation's walk, which may start from the thread's last LMF.
// Picks the fast walk compiled for `row` (the selected row of layouts): false when the walker has none
// for it (our walker then stays off).
bool walk_for(const mono_layouts::MonoLayouts* row);

int fast_walk(uintptr_t anchor, ThreadWalk& t, MonoMethod** out, uint32_t max, Signature* extra_bottom,
              Signature* extra_top, FastResult& r, Misses* misses = nullptr, bool allow_lmf = false);

}  // namespace mlpd::hooks::walker
#pragma GCC visibility pop
