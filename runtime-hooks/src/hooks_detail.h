// What hooks.cpp lends the heapshot engine (heapshot.cpp), inside the runtime-hooks room only.
#pragma once

#include <mono/metadata/profiler.h>

#include <cstdint>

#include "mlpd/rt/thread_log.h"

namespace mlpd::hooks::detail {

// The calling thread's log (created on its first event); nullptr while logging is off.
rt::ThreadLog* thread_log();
bool active();
bool runtime_ready();  // the runtime is initialised (its finalizer thread exists)

// Installs the GC roots callback for the collection in progress (a heapshot's), or puts back what
// the event mask asks for (`on` false). Lock-free (Mono swaps a callback pointer atomically), so it
// may be called from the GC thread with the world stopped.
void heapshot_roots(bool on);

// The described-metadata sets, for the heap walk (world stopped): try_lock_known() takes their lock
// only if it is free (a suspended thread may hold it; waiting could deadlock). While it is held,
// *_known() says whether a pointer is already described in the MetaLog.
bool try_lock_known();
void unlock_known();
bool vtable_known(uint64_t vtable);
bool class_known(uint64_t klass);

}  // namespace mlpd::hooks::detail

namespace mlpd::hooks::heapshot {

// Engine entry points, called by hooks.cpp.
// install(): at hooks::install, before the runtime starts (binds the finalizer callback).
void install();
// Every GC event of an active agent, after the TYPE_GC event and the world-stop sync point were
// written and before the world-start sync point (`log` may be nullptr: nothing is written then).
void gc_event(rt::ThreadLog* log, MonoProfilerGCEvent event, uint32_t generation, bool serial);
// Runtime shutdown begins (heapshot-on-shutdown).
void shutdown_begin();

}  // namespace mlpd::hooks::heapshot
