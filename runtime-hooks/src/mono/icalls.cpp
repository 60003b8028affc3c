// The Mono.Profiler.Log.LogProfiler internal calls, implemented on the hooks' run-time control API.
//
// Managed signatures, as found with `monodis --method /usr/lib/mono/4.5/Mono.Profiler.Log.dll` (Mono
// 6.8.0.105). All are `private static` except TriggerHeapshot (`public static`); the public properties
// around them validate first and throw ArgumentException / ArgumentOutOfRangeException themselves, but
// the private methods can still be reached with reflection, so every setter here checks again.
//   int32 GetMaxStackTraceFrames ()
//   int32 GetStackTraceFrames ()                  void SetStackTraceFrames (int32)
//   LogHeapshotMode GetHeapshotMode ()            void SetHeapshotMode (LogHeapshotMode)
//   int32 GetHeapshotMillisecondsFrequency ()     void SetHeapshotMillisecondsFrequency (int32)
//   int32 GetHeapshotCollectionsFrequency ()      void SetHeapshotCollectionsFrequency (int32)
//   void TriggerHeapshot ()
//   int32 GetCallDepth ()                         void SetCallDepth (int32)
//   void GetSampleMode ([out] LogSampleMode&, [out] int32&)
//   bool SetSampleMode (LogSampleMode, int32)
//   bool GetXEvents ()                            void SetXEvents (bool)
//     for X in Exception, Monitor, GC, GCAllocation, GCMove, GCRoot, GCHandle, GCFinalization, Counter, Jit
// Both enums have an int32 underlying type:
//   LogHeapshotMode: None 0, EveryMajor 1, OnDemand 2, Milliseconds 3, Collections 4
//   LogSampleMode:   None 0, Process 1, Real 2            (= MonoProfilerSampleMode)
// Native side: int32 -> int32_t, bool -> MonoBoolean (one byte), enum -> int32_t, out -> pointer to
// the caller's local (plain stores, no managed object is touched).
//
// Decisions:
// * Negative integers (only reachable through reflection) are CLAMPED to 0: call depth 0 records no
//   enter/leave (as Mono's negative max depth does), 0 frames means no backtraces, frequency 0 means
//   "no periodic heapshot". Frames above format::kMaxFrames are clamped to it (set_max_frames).
// * Enum values outside the managed enums are IGNORED (the setting keeps its value; SetSampleMode
//   returns false), as is a sample frequency below 1.
// * The managed LogHeapshotMode numbers Milliseconds 3 / Collections 4, but Mono's internal mode (and
//   format::HEAPSHOT_*) numbers X_GC 3 / X_MS 4; Mono 6.8 passes the number through unchanged, so
//   there `HeapshotMode = Milliseconds` really selects every-N-collections. We translate, so the mode a
//   program sets is the mode it gets (and reads back).
// * GetStackTraceFrames returns the depth in effect (max_frames()), which is 0 with `calls` (no
//   backtraces then); Mono returns its configured value there although it takes no backtraces either.
// * The heapshot settings are handed to the heapshot engine (heapshot.h) at once. TriggerHeapshot takes
//   the heapshot before it returns (a forced collection on the calling thread); Mono's only requests
//   one, taken later by a collection its finalizer thread forces. Two calls are two heapshots.
//   In the flight recorder's ring mode the agent then dumps the ring (set_after_trigger_heapshot) and
//   the call returns once the dump is written (docs/flight-recorder.md, "LogProfiler").
// * SetSampleMode changes Mono's sampler when sampling was set up at start (`sample`/`sample-real`)
//   and returns true then, as Mono does when its profiler owns sampling; otherwise it stores the
//   values and returns false ("not applied").
// * Setters take one mutex, so that two threads changing different event bits do not lose one of the
//   changes (read-modify-write of the mask). The command port changes the mask through the same hooks
//   API without this mutex; a race between the two can lose one change, never corrupt anything.
#include "mlpd/hooks/icalls.h"
#include "mlpd/capture/sampling.h"
#include "mono/sampling_start.h"

#include <mono/metadata/loader.h>
#include <mono/metadata/profiler.h>
#include <mono/utils/mono-publib.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "mlpd/event_names.h"
#include "mlpd/format.h"
#include "mlpd/hooks/heapshot.h"
#include "mlpd/hooks/hooks.h"
#include "mono/optional.h"

namespace mlpd::hooks {

namespace {

using namespace mlpd::format;

// Heap-allocated on first use, never destroyed: no static constructor/destructor order to worry about
// (this library is loaded by an ELF constructor and may be called during exit).
struct IcallState {
  std::mutex mutex;
  LogProfilerSettings settings;
};

IcallState& state() {
  static IcallState* s = new IcallState;
  return *s;
}

// Managed LogHeapshotMode <-> format::HEAPSHOT_*.
constexpr int32_t kManagedHeapshotMilliseconds = 3;
constexpr int32_t kManagedHeapshotCollections = 4;

bool heapshot_from_managed(int32_t managed, uint8_t& mode) {
  switch (managed) {
    case HEAPSHOT_NONE: mode = HEAPSHOT_NONE; return true;
    case HEAPSHOT_MAJOR: mode = HEAPSHOT_MAJOR; return true;
    case HEAPSHOT_ON_DEMAND: mode = HEAPSHOT_ON_DEMAND; return true;
    case kManagedHeapshotMilliseconds: mode = HEAPSHOT_X_MS; return true;
    case kManagedHeapshotCollections: mode = HEAPSHOT_X_GC; return true;
    default: return false;
  }
}

int32_t heapshot_to_managed(uint8_t mode) {
  switch (mode) {
    case HEAPSHOT_X_MS: return kManagedHeapshotMilliseconds;
    case HEAPSHOT_X_GC: return kManagedHeapshotCollections;
    default: return mode;  // NONE, MAJOR, ON_DEMAND share their numbers
  }
}

// Called with the mutex held, after any heapshot setting changed.
void apply_heapshot_settings(const LogProfilerSettings& s) {
  set_heapshot_policy(s.heapshot_mode, s.heapshot_gc, s.heapshot_ms);
}

uint32_t non_negative(int32_t v) { return v < 0 ? 0u : static_cast<uint32_t>(v); }
int32_t as_int32(uint32_t v) { return static_cast<int32_t>(std::min<uint32_t>(v, INT32_MAX)); }

// -- backtraces, call depth

int32_t GetMaxStackTraceFrames() { return static_cast<int32_t>(kMaxFrames); }
int32_t GetStackTraceFrames() { return as_int32(max_frames()); }
void SetStackTraceFrames(int32_t value) {
  std::lock_guard<std::mutex> lock(state().mutex);
  set_max_frames(non_negative(value));  // clamps to kMaxFrames
}

int32_t GetCallDepth() { return as_int32(call_depth()); }
void SetCallDepth(int32_t value) {
  std::lock_guard<std::mutex> lock(state().mutex);
  set_call_depth(non_negative(value));
}

// -- heapshots

int32_t GetHeapshotMode() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return heapshot_to_managed(state().settings.heapshot_mode);
}
void SetHeapshotMode(int32_t value) {
  uint8_t mode;
  if (!heapshot_from_managed(value, mode)) return;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().settings.heapshot_mode = mode;
  apply_heapshot_settings(state().settings);
}
int32_t GetHeapshotMillisecondsFrequency() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return as_int32(state().settings.heapshot_ms);
}
void SetHeapshotMillisecondsFrequency(int32_t value) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().settings.heapshot_ms = non_negative(value);
  apply_heapshot_settings(state().settings);
}
int32_t GetHeapshotCollectionsFrequency() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return as_int32(state().settings.heapshot_gc);
}
void SetHeapshotCollectionsFrequency(int32_t value) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().settings.heapshot_gc = non_negative(value);
  apply_heapshot_settings(state().settings);
}
// A heapshot now, on this (managed, hence attached) thread: see the decisions above. In ring mode the
// agent then asks for a dump (set_after_trigger_heapshot).
std::atomic<void (*)()> g_after_trigger{nullptr};
void TriggerHeapshot() {
  const uint64_t ticket = heapshot_now();
  if (auto fn = g_after_trigger.load(std::memory_order_acquire); fn && ticket && heapshots_done() >= ticket) fn();
}

// -- sampling (applied to Mono's sampler when sampling was on at start; stored and read back always)

void GetSampleMode(int32_t* mode, int32_t* frequency) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (mode) *mode = state().settings.sample_mode;
  if (frequency) *frequency = as_int32(state().settings.sample_freq);
}
MonoBoolean SetSampleMode(int32_t mode, int32_t frequency) {
  if (mode != MONO_PROFILER_SAMPLE_MODE_NONE && mode != MONO_PROFILER_SAMPLE_MODE_PROCESS &&
      mode != MONO_PROFILER_SAMPLE_MODE_REAL) {
    return 0;
  }
  if (frequency < 1) return 0;
  std::lock_guard<std::mutex> lock(state().mutex);
  // Applied when sampling was set up at start (then Mono's sampler takes the new mode and rate);
  // otherwise stored and read back only, and false says it was not applied.
  const bool applied = change_sampling(static_cast<uint8_t>(mode), static_cast<uint32_t>(frequency));
  state().settings.sample_mode = static_cast<uint8_t>(mode);
  state().settings.sample_freq = static_cast<uint32_t>(frequency);
  return applied ? 1 : 0;
}

// -- event mask bits

MonoBoolean get_bit(uint32_t bit) { return (event_mask() & bit) ? 1 : 0; }
void set_bit(uint32_t bit, MonoBoolean on) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const uint32_t mask = event_mask();
  const uint32_t next = on ? (mask | bit) : (mask & ~bit);
  if (next != mask) set_event_mask(next);  // also installs/removes the bit's callbacks
}

// Get/Set<Name>Events for every row of the event vocabulary (mlpd/event_names.h) with a LogProfiler name.
template <size_t I>
MonoBoolean get_events() {
  return get_bit(kEventBitNames[I].mask);
}
template <size_t I>
void set_events(MonoBoolean on) {
  set_bit(kEventBitNames[I].mask, on);
}
struct EventIcalls {
  const void* get;
  const void* set;
};
template <size_t... I>
constexpr std::array<EventIcalls, sizeof...(I)> event_icalls(std::index_sequence<I...>) {
  return {EventIcalls{reinterpret_cast<const void*>(&get_events<I>), reinterpret_cast<const void*>(&set_events<I>)}...};
}
const std::array kEventIcalls = event_icalls(std::make_index_sequence<std::size(kEventBitNames)>());

struct Icall {
  const char* name;
  const void* fn;
};

#define MLPD_ICALL(name) {"Mono.Profiler.Log.LogProfiler::" #name, reinterpret_cast<const void*>(&name)}

const Icall kIcalls[] = {
    MLPD_ICALL(GetMaxStackTraceFrames),
    MLPD_ICALL(GetStackTraceFrames),
    MLPD_ICALL(SetStackTraceFrames),
    MLPD_ICALL(GetHeapshotMode),
    MLPD_ICALL(SetHeapshotMode),
    MLPD_ICALL(GetHeapshotMillisecondsFrequency),
    MLPD_ICALL(SetHeapshotMillisecondsFrequency),
    MLPD_ICALL(GetHeapshotCollectionsFrequency),
    MLPD_ICALL(SetHeapshotCollectionsFrequency),
    MLPD_ICALL(TriggerHeapshot),
    MLPD_ICALL(GetCallDepth),
    MLPD_ICALL(SetCallDepth),
    MLPD_ICALL(GetSampleMode),
    MLPD_ICALL(SetSampleMode),
};

#undef MLPD_ICALL

}  // namespace

void seed_log_profiler_settings(const LogProfilerSettings& settings) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().settings = settings;
  apply_heapshot_settings(settings);
}

LogProfilerSettings log_profiler_settings() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().settings;
}

void set_after_trigger_heapshot(void (*fn)()) { g_after_trigger.store(fn, std::memory_order_release); }

void register_log_profiler_icalls() {
  // Resolved here rather than in the required API list: the agent works without it, only
  // LogProfiler.IsAttached then says false.
  auto add = mono_optional.mono_add_internal_call;
  if (!add) return;
  for (const Icall& icall : kIcalls) add(icall.name, icall.fn);
  // The event properties' names, kept for the process's life (whether Mono copies them or not).
  static std::string names[2 * std::size(kEventBitNames)];
  for (size_t i = 0; i < std::size(kEventBitNames); ++i) {
    const std::string_view lp = kEventBitNames[i].log_profiler;
    if (lp.empty()) continue;
    for (int set = 0; set < 2; ++set) {
      std::string& n = names[2 * i + static_cast<size_t>(set)];
      n.assign("Mono.Profiler.Log.LogProfiler::").append(set ? "Set" : "Get").append(lp).append("Events");
      add(n.c_str(), set ? kEventIcalls[i].set : kEventIcalls[i].get);
    }
  }
}

}  // namespace mlpd::hooks
