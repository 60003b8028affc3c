// The hooks' run-time state, read by every callback: the configuration and environment install()
// was given, whether the agent is active, and the settings that can change while the program runs
// (the event mask, call depth, backtrace depth: LogProfiler API and command port). The run-time
// control functions of mlpd/hooks/hooks.h that only touch this state are defined in state.cpp.
#pragma once

#include <mono/metadata/profiler.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "mlpd/hooks/hooks.h"
#include "mlpd/rt/thread_log.h"

namespace mlpd::hooks::state {

struct State {
  HookConfig cfg;
  HookEnv env;
  MonoProfilerHandle handle = nullptr;
  alignas(16) unsigned char callspec[64] = {};  // Mono's MonoCallSpec (16 bytes in 6.8), opaque to us
  bool has_callspec = false;
  mono_bool (*callspec_eval)(MonoMethod*, const void*) = nullptr;
  // Puts in place the callbacks that are installed only while the event mask wants them (set by
  // install(), hooks.cpp; called by set_event_mask).
  void (*apply_mask)(uint32_t mask) = nullptr;
};

// Hidden: referenced directly (one RIP-relative load), not through the GOT, on every event.
#define MLPD_HOOKS_HIDDEN __attribute__((visibility("hidden")))

// Allocated by install(): a static with a constructor might not be built yet when an ELF constructor
// of this library runs. nullptr until then.
extern MLPD_HOOKS_HIDDEN State* g;
extern MLPD_HOOKS_HIDDEN std::atomic<bool> g_active;
extern MLPD_HOOKS_HIDDEN std::atomic<bool> g_runtime_ready;  // the runtime is initialised (its finalizer thread exists)
// Run-time adjustable settings: read with relaxed loads per event.
extern MLPD_HOOKS_HIDDEN std::atomic<uint32_t> g_mask;
extern MLPD_HOOKS_HIDDEN std::atomic<uint32_t> g_calldepth;
extern MLPD_HOOKS_HIDDEN std::atomic<uint32_t> g_maxframes;  // 0 also when `calls` is on: no backtraces then

// Pause (control.h, pause.cpp): while g_paused, g_mask and g_calldepth are 0 and the settings the
// program or the command port asks for are kept in g_saved_* (restored by resume()). All four, and
// every change of g_mask/g_calldepth through the control API, under control_mutex() (innermost lock).
extern MLPD_HOOKS_HIDDEN std::atomic<bool> g_paused;
extern MLPD_HOOKS_HIDDEN uint32_t g_saved_mask;
extern MLPD_HOOKS_HIDDEN uint32_t g_saved_calldepth;
std::mutex& control_mutex();

inline bool active() { return g_active.load(std::memory_order_relaxed); }
inline bool enabled(uint32_t bit) { return (g_mask.load(std::memory_order_relaxed) & bit) != 0; }
inline bool runtime_ready() { return g_runtime_ready.load(std::memory_order_acquire); }
// The calling thread's log (created on its first event); nullptr while logging is off.
inline rt::ThreadLog* thread_log() { return g ? g->env.registry->get() : nullptr; }

}  // namespace mlpd::hooks::state
