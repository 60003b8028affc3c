// Allocation, exception and monitor callbacks: the object events that carry a backtrace
// (collect_backtrace, callbacks.h). on_allocation is the `gcalloc` hot path: what it uses per
// allocation is inline (the thread's log, the described cache, the backtrace check, the writer).
#include "capture/alloc_sampler.h"
#include "callbacks.h"
#include "described.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/rt/clock.h"

namespace mlpd::hooks::cb {

using namespace mlpd::format;
using namespace state;
using rt::now_ns;

namespace {

void monitor_event(uint8_t event, MonoObject* obj) {
  if (!active() || !enabled(MASK_MONITOR)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_monitor(*l, now_ns(), event, u(obj), b);
}

}  // namespace

void on_allocation(MonoProfiler*, MonoObject* obj) {
  if (!active() || !enabled(MASK_GC_ALLOC)) return;
  const uint64_t size = (static_cast<uint64_t>(mono.mono_object_get_size(obj)) + 7) & ~uint64_t{7};
  if (!alloc_sampler::take(size)) return;  // alloc-sample: not this one (alloc_sampler.h)
  rt::ThreadLog* l = log();
  if (!l) return;
  MonoVTable* vt = mono.mono_object_get_vtable(obj);
  described::ensure_vtable_cached(vt);
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt, true);
  rt::write_alloc(*l, now_ns(), u(vt), u(obj), size, b);
}

void on_exception_throw(MonoProfiler*, MonoObject* exc) {
  if (!active() || !enabled(MASK_EXCEPTION)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_throw(*l, now_ns(), u(exc), b);
}

void on_exception_clause(MonoProfiler*, MonoMethod* m, uint32_t index, MonoExceptionEnum type, MonoObject* exc) {
  if (!active() || !enabled(MASK_EXCEPTION)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  described::ensure_method_cached(m);  // per-thread cache: no lock for a method seen before
  rt::write_clause(*l, now_ns(), static_cast<uint8_t>(type), index, u(m), u(exc));
}

void on_monitor_contention(MonoProfiler*, MonoObject* o) { monitor_event(MONITOR_CONTENTION, o); }
void on_monitor_acquired(MonoProfiler*, MonoObject* o) { monitor_event(MONITOR_DONE, o); }
void on_monitor_failed(MonoProfiler*, MonoObject* o) { monitor_event(MONITOR_FAIL, o); }

}  // namespace mlpd::hooks::cb
