// The runtime hooks: Mono profiler callbacks translated into mlpd events.
#pragma once

#include <cstdint>
#include <string>

#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"

namespace mlpd::hooks {

struct HookConfig {
  uint32_t mask = 0;         // format::MASK_* events to record
  bool calls = false;        // enter/leave instrumentation
  uint32_t calldepth = 100;  // enter/leave recorded up to this nesting depth
  uint64_t calls_min_ns = 0; // calls-min: calls shorter than this are elided (0: off)
  uint32_t maxframes = 32;   // backtrace depth (0: none); backtraces are off with `calls`
  bool roots_every_gc = false;  // gcroot reports on every collection (Mono's compat mode), not only heapshots
  bool verbose = false;          // say when our stack walker switches itself off (and its counts at exit)
  std::string callspec;          // with `calls`: instrument only the methods this spec matches (Mono's
                                 // --trace syntax: M:Type:Method, T:Type, N:Namespace, program, ...)
  uint8_t sample_mode = 0;       // hooks::kSample* (sampling.h); 0: off
  uint32_t sample_freq = 100;    // Hz
  uint64_t sample_pool = 1000;   // sample records in flight (maxsamples)
  uint64_t alloc_sample = 0;     // alloc-sample=BYTES: mean bytes between allocation samples (0: all)
  bool start_paused = false;     // start-paused: paused from the start (control.h)
  bool command_port = false;     // the command port is open: a heapshot may be asked for at any time
  uint8_t walker = 0;            // walker= (agent::WalkerMode): 0 ours, 1 Mono's for all, 2 ours checked
  bool eager_metadata = false;   // eager-metadata: describe every method and class when loaded
  bool late = false;             // attach (`mlpd attach`): the runtime runs already. Allocations, clauses and
                                 // Mono's sampler cannot be had any more (the agent refuses what needs them);
                                 // sampling uses our own signal (late_sampler.h); what is loaded already is
                                 // described at install.
};

// What the agent gives the hooks to write into, and what it wants to hear about.
struct HookEnv {
  rt::WriterShared* shared = nullptr;
  rt::ThreadRegistry* registry = nullptr;
  rt::MetaLog* meta = nullptr;
  void (*on_runtime_initialized)() = nullptr;
  void (*on_shutdown_begin)() = nullptr;
  void (*on_shutdown_end)() = nullptr;
};

// Binds the Mono API and installs the profiler with callbacks for `config`. Must run before the
// runtime starts (an ELF constructor, or mono_profiler_init_mlpd). Returns false with a one-line
// reason when this is not a Mono process or the API is incomplete.
bool install(const HookConfig& config, const HookEnv& env, std::string& error);

// Stops recording: every callback returns at once from now on (shutdown, fork child).
void stop();
// Detach: stop() and also every callback of ours taken out of the runtime, our sampler and its signal
// handed back. A later install() (attach again) works on the same process.
void detach();

// Run-time control (the Mono.Profiler.Log.LogProfiler API, the command port). The event mask takes
// effect for the next event; callbacks are installed or removed with their mask bits, as Mono does.
uint32_t event_mask();
void set_event_mask(uint32_t mask);
uint32_t call_depth();
void set_call_depth(uint32_t depth);
uint32_t max_frames();  // backtrace depth now (0: none)
void set_max_frames(uint32_t frames);  // clamped to format::kMaxFrames
std::string backtrace_summary();       // for `verbose`: which stack walker made the backtraces
std::string runtime_summary();         // for `verbose`: "runtime: Mono 6.8.0.105, internals v6_8" (after install)
bool calls_enabled();   // `calls` was given at start (instrumentation cannot be added later)

// Synthesizes thread end events for threads that started and never ended (at shutdown), as Mono does.
void end_remaining_threads();

}  // namespace mlpd::hooks
