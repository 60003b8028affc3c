// The profiler object's callbacks that carry events (profiler.cpp fills the rest of the table):
// each forwards to the installed ClrRuntime and returns S_OK; before install, or after the runtime
// was stopped, each returns at once. None calls into managed code, allocates on the managed heap or
// blocks.
#include "coreclr/clr_callbacks.h"

#include "coreclr/clr_calls.h"
#include "coreclr/clr_runtime.h"
#include "mlpd/format.h"

namespace mlpd::coreclr {

namespace {

ClrRuntime* rt() { return ClrRuntime::instance(); }

HRESULT module_load_finished(ProfilerCallback*, ModuleID module, HRESULT status) {
  if (ClrRuntime* r = rt(); r && succeeded(status)) r->module_loaded(module);
  return kS_OK;
}
HRESULT assembly_load_finished(ProfilerCallback*, AssemblyID assembly, HRESULT status) {
  if (ClrRuntime* r = rt(); r && succeeded(status)) r->assembly_loaded(assembly);
  return kS_OK;
}
HRESULT jit_finished(ProfilerCallback*, FunctionID function, HRESULT status, BOOL) {
  if (ClrRuntime* r = rt(); r && succeeded(status)) r->function_compiled(function, false);
  return kS_OK;
}
HRESULT rejit_finished(ProfilerCallback*, FunctionID function, ReJITID, HRESULT status, BOOL) {
  if (ClrRuntime* r = rt(); r && succeeded(status)) r->function_compiled(function, false);
  return kS_OK;
}
HRESULT dynamic_jit_started(ProfilerCallback*, FunctionID function, BOOL, LPCBYTE, ULONG) {
  calls::dynamic_compile(function);
  return kS_OK;
}
HRESULT dynamic_jit_finished(ProfilerCallback*, FunctionID function, HRESULT status, BOOL) {
  calls::dynamic_compile(0);
  if (ClrRuntime* r = rt(); r && succeeded(status)) r->function_compiled(function, true);
  return kS_OK;
}
// ReadyToRun code: found in the image instead of compiled.
HRESULT cached_search_finished(ProfilerCallback*, FunctionID function, JitCacheResult result) {
  if (ClrRuntime* r = rt(); r && result == JitCacheResult::kFound) r->function_compiled(function, false);
  return kS_OK;
}
HRESULT thread_created(ProfilerCallback*, ThreadID thread) {
  if (ClrRuntime* r = rt()) r->thread_created(thread);
  return kS_OK;
}
HRESULT thread_destroyed(ProfilerCallback*, ThreadID thread) {
  if (ClrRuntime* r = rt()) r->thread_destroyed(thread);
  return kS_OK;
}
HRESULT thread_assigned(ProfilerCallback*, ThreadID thread, DWORD os_thread) {
  if (ClrRuntime* r = rt()) r->thread_assigned(thread, os_thread);
  return kS_OK;
}
HRESULT thread_name_changed(ProfilerCallback*, ThreadID thread, ULONG length, WCHAR* name) {
  if (ClrRuntime* r = rt()) r->thread_named(thread, name, length);
  return kS_OK;
}
HRESULT suspend_started(ProfilerCallback*, SuspendReason reason) {
  if (ClrRuntime* r = rt()) r->suspend_started(reason);
  return kS_OK;
}
HRESULT suspend_finished(ProfilerCallback*) {
  if (ClrRuntime* r = rt()) r->suspend_finished();
  return kS_OK;
}
HRESULT resume_started(ProfilerCallback*) {
  if (ClrRuntime* r = rt()) r->resume_started();
  return kS_OK;
}
HRESULT resume_finished(ProfilerCallback*) {
  if (ClrRuntime* r = rt()) r->resume_finished();
  return kS_OK;
}
HRESULT gc_started(ProfilerCallback*, int generations, BOOL* collected, GcReason) {
  if (ClrRuntime* r = rt()) r->gc_started(generations, collected);
  return kS_OK;
}
HRESULT gc_finished(ProfilerCallback*) {
  if (ClrRuntime* r = rt()) r->gc_finished();
  return kS_OK;
}
HRESULT exception_thrown(ProfilerCallback*, ObjectID object) {
  if (ClrRuntime* r = rt()) r->exception_thrown(object);
  return kS_OK;
}
HRESULT search_function_enter(ProfilerCallback*, FunctionID function) {
  if (ClrRuntime* r = rt()) r->search_function_enter(function);
  return kS_OK;
}
HRESULT search_catcher_found(ProfilerCallback*, FunctionID) {
  if (ClrRuntime* r = rt()) r->search_catcher_found();
  return kS_OK;
}
HRESULT catcher_enter(ProfilerCallback*, FunctionID function, ObjectID) {
  calls::catcher_enter();  // the frame that catches goes on (calls)
  if (ClrRuntime* r = rt()) r->exception_clause(format::CLAUSE_CATCH, function);
  return kS_OK;
}
// `calls`: a frame the exception's second pass unwinds, closed with an exceptional leave.
HRESULT unwind_function_enter(ProfilerCallback*, FunctionID function) {
  calls::unwind_function_enter(function);
  return kS_OK;
}
HRESULT unwind_function_leave(ProfilerCallback*) {
  calls::unwind_function_leave();
  return kS_OK;
}
HRESULT finally_enter(ProfilerCallback*, FunctionID function) {
  if (ClrRuntime* r = rt()) r->exception_clause(format::CLAUSE_FINALLY, function);
  return kS_OK;
}
HRESULT filter_enter(ProfilerCallback*, FunctionID function) {
  if (ClrRuntime* r = rt()) r->exception_clause(format::CLAUSE_FILTER, function);
  return kS_OK;
}

HRESULT object_allocated(ProfilerCallback*, ObjectID object, ClassID klass) {
  if (ClrRuntime* r = rt()) r->object_allocated(object, klass);
  return kS_OK;
}

// The runtime's events of our EventPipe session, delivered synchronously on the thread that raised
// them (seen on .NET 10: the contending thread, the allocating thread; `thread` and the stack are not
// filled in for a profiler's session).
HRESULT event_pipe_delivered(ProfilerCallback*, EVENTPIPE_PROVIDER provider, DWORD id, DWORD version, ULONG,
                             LPCBYTE, ULONG data_size, LPCBYTE data, const Guid*, const Guid*, ThreadID thread,
                             ULONG frame_count, UINT_PTR* frames) {
  if (ClrRuntime* r = rt()) r->event_pipe_event(provider, id, version, data, data_size, thread, frame_count, frames);
  return kS_OK;
}

}  // namespace

void fill_event_callbacks(CallbackTable11& t) {
  t.ModuleLoadFinished = &module_load_finished;
  t.AssemblyLoadFinished = &assembly_load_finished;
  t.JITCompilationFinished = &jit_finished;
  t.ReJITCompilationFinished = &rejit_finished;
  t.DynamicMethodJITCompilationStarted = &dynamic_jit_started;
  t.DynamicMethodJITCompilationFinished = &dynamic_jit_finished;
  t.JITCachedFunctionSearchFinished = &cached_search_finished;
  t.ThreadCreated = &thread_created;
  t.ThreadDestroyed = &thread_destroyed;
  t.ThreadAssignedToOSThread = &thread_assigned;
  t.ThreadNameChanged = &thread_name_changed;
  t.RuntimeSuspendStarted = &suspend_started;
  t.RuntimeSuspendFinished = &suspend_finished;
  t.RuntimeResumeStarted = &resume_started;
  t.RuntimeResumeFinished = &resume_finished;
  t.GarbageCollectionStarted = &gc_started;
  t.GarbageCollectionFinished = &gc_finished;
  t.ExceptionThrown = &exception_thrown;
  t.ExceptionCatcherEnter = &catcher_enter;
  t.ExceptionSearchFunctionEnter = &search_function_enter;
  t.ExceptionSearchCatcherFound = &search_catcher_found;
  t.ExceptionUnwindFinallyEnter = &finally_enter;
  t.ExceptionUnwindFunctionEnter = &unwind_function_enter;
  t.ExceptionUnwindFunctionLeave = &unwind_function_leave;
  t.ExceptionSearchFilterEnter = &filter_enter;
  t.ObjectAllocated = &object_allocated;
  t.EventPipeEventDelivered = &event_pipe_delivered;
}

}  // namespace mlpd::coreclr
