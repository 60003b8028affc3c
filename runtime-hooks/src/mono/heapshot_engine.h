// The heapshot engine's entry points inside the runtime-hooks room (heapshot.cpp), called by the
// callbacks (gc_callbacks.cpp, metadata_callbacks.cpp) and install (hooks.cpp). The public side
// (requests, policy) is mlpd/hooks/heapshot.h.
#pragma once

#include <mono/metadata/profiler.h>

#include <cstdint>

#include "mlpd/rt/thread_log.h"

namespace mlpd::hooks::heapshot {

// At hooks::install, before the runtime starts (binds the Mono GC functions the engine calls).
void install();
// The finalizer thread ran its finalizers (gc_callbacks.cpp's gc_finalized callback, installed always: it is
// woken by every collection with finalizable objects, and by wake_finalizer()): if a heapshot request
// is pending, forces the major collection that serves it.
void finalized();
// Every GC event of an active agent, after the TYPE_GC event and the world-stop sync point were
// written and before the world-start sync point (`log` may be nullptr: nothing is written then).
void gc_event(rt::ThreadLog* log, MonoProfilerGCEvent event, uint32_t generation, bool serial);
// Runtime shutdown begins (heapshot-on-shutdown).
void shutdown_begin();
// A heapshot may be taken from now on: a heapshot mode or heapshot-on-shutdown is set, or one was
// requested (the LogProfiler API). Classes are described lazily only while this is false.
bool may_happen();

// Installs the GC roots callback (on_gc_roots, heapshot.cpp) for the collection in progress (a
// heapshot's: `in_heapshot`), or puts back what the event mask asks for (roots on every collection
// only with roots_every_gc). Lock-free (Mono swaps a callback pointer atomically), so it may be
// called from the GC thread with the world stopped.
void apply_roots_callback(bool in_heapshot);

}  // namespace mlpd::hooks::heapshot
