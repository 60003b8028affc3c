// The `calls` callbacks: enter, leave, tail call and exceptional leave of instrumented methods,
// each kept on the thread's shadow stack (call_stack.h) and written to its log, and the
// instrumentation filter (callspec, the runtime's safepoint poll). The hot path (docs/design.md, "The
// calls hot path") is on_method_enter / on_method_leave: everything they use per call is inline or
// in this file.
#include <pthread.h>

#include <cstring>

#include "capture/call_stack.h"
#include "callbacks.h"
#include "described.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/rt/clock.h"

namespace mlpd::hooks::cb {

using namespace mlpd::format;
using namespace state;
using rt::now_ns;

uint64_t g_calls_min_ns = 0;

namespace {

thread_local constinit CallStack tls_calls __attribute__((tls_model("initial-exec")));
// Frees a thread's shadow stack when the thread exits. The key's value only marks that there is one:
// the stack itself is the exiting thread's tls_calls, still valid while key destructors run.
pthread_key_t g_calls_key;
bool g_calls_key_ok = false;
void free_call_stack(void*) { tls_calls.release(); }

// Room for one more frame; the first growth registers the stack for freeing at thread exit.
bool grow(CallStack& cs) {
  if (!cs.frames && g_calls_key_ok) pthread_setspecific(g_calls_key, &cs);
  return cs.grow();
}
// Whether an enter can be kept as a frame (growing the stack if needed); if not, it is only counted.
bool make_room(CallStack& cs) { return cs.depth == cs.count && (!cs.full() || grow(cs)); }

// The full enter, every case. An enter of a method not yet described describes it first: a method's
// code can run before its jit_done event is raised (another thread that finds the code published
// while the compiling thread has not yet raised the event; P/Invoke methods, whose event follows their
// wrapper's), and its enter must not reach the file before its description. Described without a code
// range; jit_done describes it again with one.
// An enter beyond calldepth (or with logging off) is kept as an unrecorded frame, so that its leave
// is matched with it and not with a recorded frame of the same method below (call_stack.h).
// The frame of an enter on the thread's shadow stack: counted only, unrecorded (beyond calldepth, or
// no log), or recorded, its method described first. Returns the log to write the enter to when recorded.
inline rt::ThreadLog* push_enter(CallStack& cs, MonoMethod* m) {
  if (!make_room(cs)) [[unlikely]] {
    cs.enter_counted();
    return nullptr;
  }
  rt::ThreadLog* l = cs.within(g_calldepth.load(std::memory_order_relaxed)) ? log() : nullptr;
  if (!l) {
    cs.push_unrecorded(u(m));
    return nullptr;
  }
  described::ensure_method_cached(m);
  cs.push(u(m));
  return l;
}

[[gnu::noinline]] void method_enter_slow(MonoMethod* m) {
  if (rt::ThreadLog* l = push_enter(tls_calls, m)) rt::write_method(*l, TYPE_ENTER, now_ns(), u(m));
}

// A leave (or exceptional leave) of `m`: frames above m's were left without a leave event and are
// closed as exceptional leaves (CallStack::leave). A leave of an unrecorded frame writes nothing,
// and a leave with no frame is dropped.
void leave(MonoMethod* m, uint8_t ext) {
  rt::ThreadLog* l = nullptr;
  uint64_t now = 0;
  bool first = true;
  tls_calls.leave(u(m), [&](uint64_t frame, bool left) {
    if (first) {
      first = false;
      l = log();
      now = now_ns();
    }
    if (l) rt::write_method(*l, left ? ext : TYPE_EXC_LEAVE, now, frame);
  });
}

[[gnu::noinline]] void method_leave_slow(MonoMethod* m) {
  // The usual case: the method leaving is the one on top, and every frame is recorded.
  if (tls_calls.leave_top(u(m))) [[likely]] {
    if (rt::ThreadLog* l = log()) rt::write_method(*l, TYPE_LEAVE, now_ns(), u(m));
    return;
  }
  leave(m, TYPE_LEAVE);
}

// The runtime's safepoint poll, called at every method entry and loop back edge of a running thread
// from the moment a collection starts stopping the world until it has restarted it (Mono's
// mono_polling_required). Under Mono's log profiler such a thread blocks on its first event of that
// window (the exclusive buffer lock its gc_event callback holds from PRE_STOP_WORLD_LOCKED to
// POST_START_WORLD_UNLOCKED), so Mono's files do not have these calls; our callbacks never block, the
// thread goes on running and polling, and each poll would be a recorded call (tens of thousands per
// collection on a busy multi-threaded program). Not instrumented: see docs/design.md.
bool is_state_poll(MonoMethod* m) {
  const char* name = mono.mono_method_get_name(m);
  return name && std::strcmp(name, "__icall_wrapper_mono_threads_state_poll") == 0;
}

}  // namespace

void init_call_stacks() { g_calls_key_ok = pthread_key_create(&g_calls_key, free_call_stack) == 0; }

// The `calls` hot path (docs/design.md, "The calls hot path"): when nothing needs a call (the
// thread has its log and room for the frame and the event, the method is in its described cache,
// the clock is the TSC), the enter is written inline with no call, so that the callback needs no
// saved registers or stack frame; anything else goes to method_enter_slow, which does the same
// from the start (nothing is changed before the choice).
void on_method_enter(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  CallStack& cs = tls_calls;
  rt::ThreadLog* l = rt::ThreadRegistry::current();
  uint64_t now;
  if (cs.depth < g_calldepth.load(std::memory_order_relaxed) && l && !cs.full() && described::method_cached(m) &&
      l->has_room(rt::kMethodEventBytes) && rt::now_ns_tsc(now)) [[likely]] {
    cs.push(u(m));  // !full(): no frame is only counted (call_stack.h), depth == count
    rt::write_method_at(*l, l->cursor(), TYPE_ENTER, now, u(m));
    return;
  }
  method_enter_slow(m);
}

// As on_method_enter: the usual leave (the method on top, the log with room, the TSC) inline with
// no call, the rest in method_leave_slow.
void on_method_leave(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  CallStack& cs = tls_calls;
  rt::ThreadLog* l = rt::ThreadRegistry::current();
  uint64_t now;
  if (cs.is_top(u(m)) && l && l->has_room(rt::kMethodEventBytes) && rt::now_ns_tsc(now)) [[likely]] {
    cs.pop_top();
    rt::write_method_at(*l, l->cursor(), TYPE_LEAVE, now, u(m));
    return;
  }
  method_leave_slow(m);
}

// calls-min (short-call elision): the same callbacks, installed instead of the two above so that
// calls without calls-min run exactly the code they ran before. An enter is held in the thread's
// buffer unpublished (rt::write_enter_held); the usual leave of the innermost held enter, when
// nothing was written since and the call took less than calls-min, takes the enter back and writes
// no leave (ThreadLog::elide_held). Any other leave is written as usual and publishes what is held.
void on_method_enter_min(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  if (rt::ThreadLog* l = push_enter(tls_calls, m)) rt::write_enter_held(*l, now_ns(), u(m));
}

void on_method_leave_min(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  if (tls_calls.leave_top(u(m))) [[likely]] {
    if (rt::ThreadLog* l = log()) {
      const uint64_t now = now_ns();
      if (!l->elide_held(now, g_calls_min_ns)) rt::write_method(*l, TYPE_LEAVE, now, u(m));
    }
    return;
  }
  leave(m, TYPE_LEAVE);
}

void on_method_tail_call(MonoProfiler*, MonoMethod* m, MonoMethod*) {
  if (active()) leave(m, TYPE_LEAVE);
}
void on_method_exception_leave(MonoProfiler*, MonoMethod* m, MonoObject*) {
  if (active()) leave(m, TYPE_EXC_LEAVE);
}

MonoProfilerCallInstrumentationFlags call_filter(MonoProfiler*, MonoMethod* m) {
  if (g->has_callspec && !g->callspec_eval(m, g->callspec)) return MONO_PROFILER_CALL_INSTRUMENTATION_NONE;
  if (is_state_poll(m)) return MONO_PROFILER_CALL_INSTRUMENTATION_NONE;
  return static_cast<MonoProfilerCallInstrumentationFlags>(
      MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE |
      MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE);
}

}  // namespace mlpd::hooks::cb
