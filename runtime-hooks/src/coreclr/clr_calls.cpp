// `calls` on .NET (clr_calls.h). The hot path (mlpd_clr_on_enter / mlpd_clr_on_leave) is Mono's
// (runtime-hooks/src/mono/call_callbacks.cpp): when the thread has its log with room, its shadow stack
// room for the frame and the clock is the TSC, the event is written inline; anything else goes to a
// slow path that does the same from the start. No allocation and no lock on the hot path; the shadow
// stack grows (realloc) on the slow path only. The method is described by the mapper at compilation,
// before its code can run, so no hook needs to check that.
#include "coreclr/clr_calls.h"

#include <pthread.h>

#include <atomic>
#include <cstdio>

#include "capture/call_stack.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"
#include "mlpd/rt/thread_registry.h"

namespace mlpd::coreclr::calls {

using hooks::CallStack;
using namespace mlpd::format;
using rt::now_ns;

namespace {

std::atomic<bool> g_installed{false};
std::atomic<bool> g_active{false};
std::atomic<uint32_t> g_calldepth{0};
uint64_t g_calls_min_ns = 0;
MapFn g_map = nullptr;
void* g_map_ctx = nullptr;

thread_local constinit CallStack tls_calls __attribute__((tls_model("initial-exec")));
// The function whose frame the exception's second pass is unwinding on this thread (0: none).
thread_local constinit FunctionID tls_unwinding __attribute__((tls_model("initial-exec"))) = 0;

// Frees a thread's shadow stack when the thread exits (the key's value only marks that it has one).
pthread_key_t g_key;
bool g_key_ok = false;
void free_call_stack(void*) { tls_calls.release(); }

bool grow(CallStack& cs) {
  if (!cs.frames && g_key_ok) pthread_setspecific(g_key, &cs);
  return cs.grow();
}
bool make_room(CallStack& cs) { return cs.depth == cs.count && (!cs.full() || grow(cs)); }

rt::ThreadLog* thread_log() {
  rt::ThreadRegistry* r = rt::ThreadRegistry::instance();
  return r ? r->get() : nullptr;
}

// The frame of an enter: counted only (out of memory), unrecorded (beyond calldepth, or no log), or
// recorded; returns the log to write the enter to when recorded.
inline rt::ThreadLog* push_enter(CallStack& cs, uint64_t method) {
  if (!make_room(cs)) [[unlikely]] {
    cs.enter_counted();
    return nullptr;
  }
  rt::ThreadLog* l = cs.within(g_calldepth.load(std::memory_order_relaxed)) ? thread_log() : nullptr;
  if (!l) {
    cs.push_unrecorded(method);
    return nullptr;
  }
  cs.push(method);
  return l;
}

[[gnu::noinline]] void enter_slow(uint64_t method) {
  if (rt::ThreadLog* l = push_enter(tls_calls, method)) rt::write_method(*l, TYPE_ENTER, now_ns(), method);
}

// Any leave of `method` (a leave, a tail call, an exceptional leave): frames above its own were left
// without a leave of theirs (an exception the runtime did not report per frame) and are closed as
// exceptional leaves; a leave of a frame we never saw changes nothing.
void leave(uint64_t method, uint8_t ext) {
  rt::ThreadLog* l = nullptr;
  uint64_t now = 0;
  bool first = true;
  tls_calls.leave(method, [&](uint64_t frame, bool left) {
    if (first) {
      first = false;
      l = thread_log();
      now = now_ns();
    }
    if (l) rt::write_method(*l, left ? ext : TYPE_EXC_LEAVE, now, frame);
  });
}

[[gnu::noinline]] void leave_slow(uint64_t method) {
  if (tls_calls.leave_top(method)) [[likely]] {
    if (rt::ThreadLog* l = thread_log()) rt::write_method(*l, TYPE_LEAVE, now_ns(), method);
    return;
  }
  leave(method, TYPE_LEAVE);
}

// FunctionIDMapper2: called by the JIT for each function it compiles with hooks, before the code can
// run; what it returns is what the hooks receive.
[[maybe_unused]] UINT_PTR function_id_mapper(FunctionID function, void*, BOOL* hook) {
  bool h = false;
  const uint64_t id = g_map ? g_map(g_map_ctx, function, h) : function;
  if (hook) *hook = h ? 1 : 0;
  return id;
}

}  // namespace

bool install(ProfilerInfo* info, MapFn map, void* ctx, uint32_t calldepth, uint64_t calls_min_ns,
             std::string& error) {
  if (!g_key_ok) g_key_ok = pthread_key_create(&g_key, free_call_stack) == 0;
#if defined(__x86_64__) && defined(__linux__)
  g_map = map;
  g_map_ctx = ctx;
  g_calldepth.store(calldepth, std::memory_order_relaxed);
  g_calls_min_ns = calls_min_ns;
  auto text = [](HRESULT hr) {
    char t[16];
    std::snprintf(t, sizeof t, "0x%08x", static_cast<unsigned>(hr));
    return std::string(t);
  };
  HRESULT hr = info->table->SetFunctionIDMapper2(info, reinterpret_cast<void*>(&function_id_mapper), nullptr);
  if (!succeeded(hr)) return error = "calls: the runtime refused our function id mapper (" + text(hr) + ")", false;
  void* enter = reinterpret_cast<void*>(calls_min_ns ? &mlpd_clr_enter_min_stub : &mlpd_clr_enter_stub);
  void* leave = reinterpret_cast<void*>(calls_min_ns ? &mlpd_clr_leave_min_stub : &mlpd_clr_leave_stub);
  hr = info->table->SetEnterLeaveFunctionHooks3(info, enter, leave, reinterpret_cast<void*>(&mlpd_clr_tailcall_stub));
  if (!succeeded(hr)) return error = "calls: the runtime refused the enter/leave hooks (" + text(hr) + ")", false;
  g_installed.store(true, std::memory_order_release);
  return true;
#else
  (void)info, (void)map, (void)ctx, (void)calldepth, (void)calls_min_ns;
  return error = "calls: enter/leave hooks on .NET are built for Linux x86-64 only", false;
#endif
}

bool installed() { return g_installed.load(std::memory_order_acquire); }
void set_active(bool on) { g_active.store(on && installed(), std::memory_order_release); }
uint32_t depth() { return g_calldepth.load(std::memory_order_relaxed); }
void set_depth(uint32_t d) { g_calldepth.store(d, std::memory_order_relaxed); }

void unwind_function_enter(FunctionID function) {
  if (g_active.load(std::memory_order_relaxed)) tls_unwinding = function;
}
void unwind_function_leave() {
  const FunctionID f = tls_unwinding;
  tls_unwinding = 0;
  // The frame's own hook value: the mapper's, which is the FunctionID for every hooked method.
  if (f && g_active.load(std::memory_order_relaxed)) leave(f, TYPE_EXC_LEAVE);
}
void catcher_enter() { tls_unwinding = 0; }

namespace {
thread_local constinit FunctionID tls_dynamic __attribute__((tls_model("initial-exec"))) = 0;
}
void dynamic_compile(FunctionID function) { tls_dynamic = function; }
bool compiling_dynamic(FunctionID function) { return function && tls_dynamic == function; }

}  // namespace mlpd::coreclr::calls

using namespace mlpd;
using namespace mlpd::coreclr::calls;

// The hot path: the usual enter (within calldepth, the thread's log with room, room on the shadow
// stack, the TSC clock) inline with no call; anything else in enter_slow.
extern "C" void mlpd_clr_on_enter(uint64_t method) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  CallStack& cs = tls_calls;
  rt::ThreadLog* l = rt::ThreadRegistry::current();
  uint64_t now;
  if (cs.depth < g_calldepth.load(std::memory_order_relaxed) && l && !cs.full() &&
      l->has_room(rt::kMethodEventBytes) && rt::now_ns_tsc(now)) [[likely]] {
    cs.push(method);
    rt::write_method_at(*l, l->cursor(), format::TYPE_ENTER, now, method);
    return;
  }
  enter_slow(method);
}

extern "C" void mlpd_clr_on_leave(uint64_t method) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  CallStack& cs = tls_calls;
  rt::ThreadLog* l = rt::ThreadRegistry::current();
  uint64_t now;
  if (cs.is_top(method) && l && l->has_room(rt::kMethodEventBytes) && rt::now_ns_tsc(now)) [[likely]] {
    cs.pop_top();
    rt::write_method_at(*l, l->cursor(), format::TYPE_LEAVE, now, method);
    return;
  }
  leave_slow(method);
}

// calls-min (short-call elision), as on Mono: the enter is held in the buffer unpublished; the usual
// leave of the innermost held enter, nothing written since and shorter than calls-min, takes it back.
extern "C" void mlpd_clr_on_enter_min(uint64_t method) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  if (rt::ThreadLog* l = push_enter(tls_calls, method)) rt::write_enter_held(*l, now_ns(), method);
}

extern "C" void mlpd_clr_on_leave_min(uint64_t method) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  if (tls_calls.leave_top(method)) [[likely]] {
    if (rt::ThreadLog* l = thread_log()) {
      const uint64_t now = now_ns();
      if (!l->elide_held(now, g_calls_min_ns)) rt::write_method(*l, format::TYPE_LEAVE, now, method);
    }
    return;
  }
  leave(method, format::TYPE_LEAVE);
}

// A tail call ends the caller's frame: its leave, before the callee enters.
extern "C" void mlpd_clr_on_tailcall(uint64_t method) {
  if (g_active.load(std::memory_order_relaxed)) leave(method, format::TYPE_LEAVE);
}
