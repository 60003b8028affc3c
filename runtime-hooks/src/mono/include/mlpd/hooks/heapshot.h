// Heapshots: a walk of the whole managed heap at the end of a major collection (world stopped, after
// marking), written as Mono's log profiler writes it (docs/design.md "Heapshots", docs/format.md):
// HEAP_START, the collection's GC roots, one HEAP_OBJECT per object (and per further chunk of 128
// references), HEAP_END, all in the collecting thread's buffers.
//
// When: Mono's modes (format::HEAPSHOT_*): every major collection, every NUM major collections,
// at most every NUM ms, on demand only; plus requests, which are served in every mode. A heapshot
// can only be taken in a major, serial (non-concurrent) collection; when the mode asks for one in any
// other collection, or a request is made between collections, the runtime's finalizer thread is woken
// and forces a major collection (Mono's approach: no thread of ours is attached to the runtime).
#pragma once

#include <cstdint>

namespace mlpd::hooks {

// The heapshot mode (format::HEAPSHOT_*) and its frequencies. Any thread, any time; read by the next
// collection. every_gc 0 and an unknown mode mean "no periodic heapshot"; every_ms 0 means every
// collection. The Mono.Profiler.Log.LogProfiler setters (icalls.cpp) forward here.
void set_heapshot_policy(uint8_t mode, uint32_t every_gc, uint32_t every_ms);

// `heapshot-on-shutdown`: one heapshot when the runtime begins to shut down.
void set_heapshot_on_shutdown(bool on);

// Asks for a heapshot from any thread, attached to the runtime or not (the command server), without
// blocking: returns a ticket, the sequence number (1, 2, ...) of the heapshot that will satisfy the
// request — the first one to begin after this call. Requests made before that heapshot begins share
// its ticket. The heapshot is taken at the next major serial collection; the finalizer thread is
// woken to force one now. Nothing is ever waited for, so a request pending at exit cannot hang it.
// Returns 0 when profiling has stopped (output failure, shutdown): no heapshot would be taken.
uint64_t request_heapshot();

// How many heapshots have been completely written into the buffers so far (monotonic; heapshot N is
// complete when heapshots_done() >= N). The helper writes them to the output at its next round. A
// caller waits for heapshots_done() >= ticket, with a timeout of its own: a request can stay pending
// (profiling stopped, the runtime shutting down, a finalizer that never returns).
uint64_t heapshots_done();

// Takes a heapshot now, on the calling thread, which must be attached to the runtime (managed code:
// LogProfiler.TriggerHeapshot()): a request, then a forced major collection, which serves it.
// Returns the ticket; heapshots_done() >= ticket on return unless profiling is off.
uint64_t heapshot_now();

}  // namespace mlpd::hooks
