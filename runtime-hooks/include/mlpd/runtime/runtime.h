// The runtime door (issue 34): everything the runtime-neutral agent shell (agent/) asks of the managed
// runtime it profiles, and nothing more. One implementation per runtime lives in its own room
// (runtime-hooks/src/mono/ today, runtime-hooks/src/coreclr/ next, a fake one in tests/); the agent
// never names a runtime's type or symbol and never includes a runtime's header. This header includes
// none either: only the standard library, the writer's shared state (mlpd/rt/) and the codec's event
// model (mlpd/event.h).
//
// Shape: an abstract class, not a table of function pointers. The agent calls the runtime a few
// times per helper round and on commands, never on an event's hot path, so a virtual call costs
// nothing measurable; a class gives every runtime the compiler's check that it answers every
// question (pure virtual), lets the optional abilities have one documented default here (a runtime
// without heapshots inherits "not available" instead of each runtime writing its own stub), and keeps
// per-runtime state in the object rather than in globals. Everything is in one shared object
// (libmlpd.so), built by one compiler, so no C ABI across a library boundary is needed. A runtime
// keeps one instance for the life of the process (its entry points hand it to agent::start); the
// agent never deletes it.
//
// Threads: install() runs on the thread that starts the agent (an ELF constructor, the runtime's
// profiler initialisation, or the attach control thread). The control calls (mask, depth, pause,
// heapshot requests) come from the helper thread (command port) and from managed code (a runtime's
// own managed control API), concurrently: each must be safe from any thread. The round calls and the
// statistics are the helper thread's. stop() may be called from any thread, more than once.
//
// Lifecycle, as the agent drives it (agent/src/agent.cpp):
//   present() -> [late: late_refusal()] -> open the output, write the header -> install()
//   -> [start_perf_output()] -> helper rounds: round(); counters; ... -> shutdown: end_remaining_threads(),
//   stop(), final_round() -> [detach(): detach()] ; a fork child: after_fork_child().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mlpd/event.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_log.h"
#include "mlpd/rt/thread_registry.h"

namespace mlpd::runtime {

// Bumped when a member's meaning changes (additions do not bump it).
inline constexpr int kInterfaceVersion = 1;

// Statistical sampling modes (the values are the file format's and the options').
inline constexpr uint8_t kSampleOff = 0;
inline constexpr uint8_t kSampleProcess = 1;  // `sample`: the threads' CPU time
inline constexpr uint8_t kSampleReal = 2;     // `sample-real`: wall clock

// The runtime-neutral configuration: what the user asked for, in the agent's terms. A runtime that
// cannot do something asked here refuses it in install() with a one-line reason (or earlier, after
// start, through late_refusal()).
struct Config {
  uint32_t mask = 0;           // format::MASK_* events to record
  bool calls = false;          // enter/leave instrumentation
  uint32_t calldepth = 100;    // enter/leave recorded up to this nesting depth
  uint64_t calls_min_ns = 0;   // calls-min: calls shorter than this are elided (0: off)
  uint32_t maxframes = 32;     // backtrace depth of allocation/monitor/exception events (0: none)
  uint8_t sample_mode = kSampleOff;  // kSample*
  uint32_t sample_freq = 100;  // Hz
  uint64_t sample_pool = 1000; // sample records in flight (maxsamples)
  uint64_t alloc_sample = 0;   // alloc-sample=BYTES: mean bytes between allocation samples (0: all)
  bool start_paused = false;   // start-paused: nothing recorded until resume()
  bool heapshot_on_request = false;  // the command port is open: a heapshot may be asked for at any
                                     // time (classes must be named when loaded)
  uint8_t heapshot_mode = 0;   // format::HEAPSHOT_*: the periodic heapshots
  uint32_t heapshot_ms = 0;    //   HEAPSHOT_X_MS: at most every this many milliseconds
  uint32_t heapshot_gc = 0;    //   HEAPSHOT_X_GC: every this many major collections
  bool heapshot_on_shutdown = false;  // heapshot-on-shutdown
  bool eager_metadata = false; // describe every method and class when loaded
  bool verbose = false;        // the runtime may say one line about what it switched off, and its counts
  bool late = false;           // attached to a runtime that runs already (`mlpd attach`)
  // The runtime's own settings, opaque to the agent: one `name=value` (or bare `name`) per line,
  // '\n'-separated (values may hold commas: a Mono callspec does). The agent puts in only the
  // settings the runtime takes (Runtime::takes_option); one the user gave that the runtime does not
  // take is refused by the agent in one line, one that only follows from another option (Mono's
  // roots-every-gc from `compat`) is left out. The runtime parses it in install() and refuses a bad
  // value with a one-line reason. Mono's: callspec=SPEC, walker=ours|mono|check, roots-every-gc.
  std::string options;
};

// What the agent gives the runtime to write into, and what it wants to hear about. The pointers stay
// valid from install() until the process ends (a detach keeps them: the agent is never freed).
struct Env {
  rt::WriterShared* shared = nullptr;     // the per-thread buffers' pool and queue (ThreadLog)
  rt::ThreadRegistry* registry = nullptr; // every thread's log
  rt::MetaLog* meta = nullptr;            // events written off the program's threads (samples, ...)
  void (*on_runtime_initialized)() = nullptr;  // the runtime finished starting (may be null)
  void (*on_shutdown_begin)() = nullptr;       // the runtime begins to shut down (may be null)
  void (*on_shutdown_end)() = nullptr;         // the runtime has shut down: the agent finishes the file
  void (*after_trigger_heapshot)() = nullptr;  // a heapshot a program asked for is written (flight
                                               // recorder: dump it); must not block; may be null
  void (*wake_helper)(void*) = nullptr;        // asks the helper for an early round (async-signal-safe)
  bool (*live_round)(int limit_ms) = nullptr;  // every thread's events written now, waited for (bounded)
  void* wake_ctx = nullptr;
};

// perf's files about JIT'd code (docs/perf.md), for runtimes whose JIT reports its code.
struct PerfOutputConfig {
  bool jitdump = false;
  std::string jitdump_dir = ".";  // DIR/jit-PID.dump
  bool perfmap = false;           // /tmp/perf-PID.map
};

// What happened to the statistical samples so far (relaxed counters; the profiler counters and
// `verbose` read them). After the final round every signal seen is exactly one of: taken,
// skipped_idle, dropped_pool_full, dropped_shutdown, dropped_unfinished. docs/design.md, "Sampling".
struct SampleStats {
  uint64_t taken = 0;              // recorded into the pool (counted when drained)
  uint64_t written = 0;            // written as TYPE_SAMPLE_HIT events
  uint64_t skipped_idle = 0;       // `sample`: the thread used no sampling period of CPU since its last
  uint64_t dropped_pool_full = 0;  // no free record (maxsamples records in flight)
  uint64_t dropped_shutdown = 0;   // arrived after profiling stopped
  uint64_t dropped_unfinished = 0; // still being filled at the final drain (not in `taken`)
  uint64_t stack_copy_failed = 0;  // written with the leaf IP only: the stack top could not be copied
  uint64_t unwind_failed = 0;      // written with the leaf IP only: no unwind info for the leaf
  uint64_t frames_left_out = 0;    // managed frames not written (method unknown and every frame above)
  uint64_t handler_ns = 0;         // time in the signal handler for the taken samples (sum)
  uint64_t drain_ns = 0;           // time the helper spent turning samples into events (sum)
  uint64_t truncated = 0;          // samples written cut at their root because the stack is deeper
                                   // than the frames kept (256 managed, 256 native): [truncated]
  uint64_t cut_unnamed = 0;        // samples cut at a managed frame whose method nobody could name
                                   // (frames_left_out has the frames): [stack cut]
  uint64_t cut_copy = 0;           // samples whose native stack goes on beyond the stack copy (the
                                   // native frames between it and the managed ones are missing)
  uint64_t clock_ns = 0;           // the sampled threads' clock between their signals
  uint64_t freq = 0;               // the rate asked for (Hz; 0: off)
  const char* engine = "";         // what sends the signals (`verbose`)
  uint64_t threads_without_timer = 0;  // per-thread CPU timers: threads that could not get one
  // Samples written per second of the sampled threads' clock (0: none yet).
  uint64_t delivered_hz() const { return clock_ns ? static_cast<uint64_t>(static_cast<double>(written) * 1e9 / static_cast<double>(clock_ns) + 0.5) : 0; }
};

// The program's pauses for garbage collection (the world stopped: from the request to stop to the
// restart), counted into fixed buckets; the metrics endpoint's `mlpd_gc_pause_seconds` histogram
// (docs/fleet.md). Relaxed counters the collecting thread adds to; read by the helper.
struct GcPauses {
  static constexpr size_t kBounds = 12;
  // The buckets' upper bounds in nanoseconds (100 us .. 1 s).
  static constexpr uint64_t kBoundNs[kBounds] = {100'000,    250'000,    500'000,     1'000'000,
                                                 2'500'000,  5'000'000,  10'000'000,  25'000'000,
                                                 50'000'000, 100'000'000, 500'000'000, 1'000'000'000};
  uint64_t buckets[kBounds + 1] = {};  // pauses in (bound i-1, bound i]; the last: above every bound
  uint64_t sum_ns = 0;
  static constexpr size_t bucket_of(uint64_t ns) {
    size_t i = 0;
    while (i < kBounds && ns > kBoundNs[i]) ++i;
    return i;
  }
};

// One of the runtime's own counters (Mono: mono-counters; CoreCLR: its event counters), as the
// agent's counter sampler sees it.
struct Counter {
  void* handle = nullptr;  // the runtime's own (opaque to the agent)
  CounterDesc desc;        // index 0 (the agent's sampler numbers counters)
  size_t size = 0;         // bytes of the value: 4 or 8
};

// A thread the runtime knows (for the per-thread CPU counters).
struct OsThread {
  int os_tid = 0;    // gettid()
  uint64_t tid = 0;  // the thread id of the file's thread events
  std::string name;  // the managed name, empty until one is given
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // -- describe itself
  // A short lowercase name for messages and the file's header ("mono", "coreclr").
  virtual std::string_view name() const = 0;
  // Whether this runtime is in the process (a cheap look-up, no side effect). False: the agent does
  // nothing at all, says nothing, writes nothing.
  virtual bool present() const = 0;
  // For `verbose`, after install(): "runtime: Mono 6.8.0.105, internals v6_8".
  virtual std::string summary() const = 0;
  // For `verbose`, when backtraces were asked for: which stack walker made them, and its counts.
  virtual std::string backtrace_summary() const { return {}; }

  // Whether `name` (callspec, walker, roots-every-gc, ...) is one of the runtime's own settings, which
  // the agent then passes in Config::options.
  virtual bool takes_option(std::string_view name) const {
    (void)name;
    return false;
  }

  // -- what it cannot do after the program started (attach)
  // "" when `config` can be honoured by a runtime that runs already; otherwise the reason, naming
  // the option: "alloc (allocation events need the allocator chosen at start-up)". The agent refuses
  // the attach with one line built from it, before anything is opened.
  virtual std::string late_refusal(const Config& config) const = 0;
  // A line the agent prints after a successful attach with `calls` (what cannot be instrumented any
  // more), "" for none.
  virtual std::string late_calls_notice() const { return {}; }
  // A line `verbose` prints at exit when `calls` ran and some code ran without enter/leave events
  // (Mono: methods of AOT-compiled images), "" for none. Helper thread, after the final round.
  virtual std::string calls_notice() const { return {}; }

  // -- lifecycle
  // Installs the runtime's callbacks and the capture for `config`; the events go to `env`. False with
  // a one-line reason (no "mlpd: " prefix) when the runtime cannot honour the configuration, in which
  // case nothing of it is left installed and the host runs on unprofiled.
  virtual bool install(const Config& config, const Env& env, std::string& error) = 0;
  // Stops recording: every callback returns at once from now on (shutdown, output failure, fork
  // child). Any thread, idempotent.
  virtual void stop() = 0;
  // stop(), and every callback taken out of the runtime, every signal and thread of ours given back.
  // A later install() (attach again) works on the same process. After the agent's final round.
  virtual void detach() = 0;
  // Synthesizes thread end events for the threads that started and never ended (at shutdown, before
  // the final round).
  virtual void end_remaining_threads() = 0;
  // Fork child: the parent's files and threads are left alone (the agent has stopped the runtime).
  virtual void after_fork_child() {}

  // -- run-time control (the command port, the runtime's managed API); any thread
  virtual uint32_t event_mask() const = 0;
  virtual void set_event_mask(uint32_t mask) = 0;
  virtual bool calls_enabled() const = 0;  // `calls` was given at start (instrumented then)
  virtual uint32_t call_depth() const = 0;
  virtual void set_call_depth(uint32_t depth) = 0;
  virtual uint32_t max_frames() const = 0;  // backtrace depth now (0: none)
  // pause(): nothing recorded until resume() (metadata goes on being described). False when there
  // was nothing to do. Each writes a sync point into the file.
  virtual bool pause() = 0;
  virtual bool resume() = 0;
  virtual bool paused() const = 0;
  // Incremented by each pause and resume (the helper samples the counters when it changes).
  virtual uint64_t pause_generation() const = 0;
  // 1 when paused now or at some time since the last call (the counter "Profiling paused"), else 0.
  virtual uint64_t paused_since_last_read() = 0;
  // Heapshots on request: a ticket (the sequence number of the heapshot that will serve the request),
  // 0 when none can be taken. Never blocks. heapshots_done(): heapshots completely written so far.
  virtual bool heapshots_available() const { return false; }
  virtual uint64_t request_heapshot() { return 0; }
  virtual uint64_t heapshots_done() const { return 0; }
  // Why request_heapshot() returned 0 while profiling runs (a runtime that takes heapshots only when
  // an option asked for them at start); "" when profiling has stopped.
  virtual std::string heapshot_refusal() const { return {}; }

  // -- the helper thread's rounds
  // Each round, before the buffers are written: completed samples (and the native names they need)
  // into env.meta, then the queued perf records (jitdump/perfmap). Cheap when idle.
  virtual void round() = 0;
  // The last round's part, after stop(): the perf files closed, the samples pool closed and drained
  // (a record still being written is counted lost); every later round() does nothing.
  virtual void final_round(bool verbose) = 0;
  // Opens perf's files before the runtime compiles anything (after install()). False with a one-line
  // reason: the agent says it and goes on without them.
  virtual bool start_perf_output(const PerfOutputConfig& config, std::string& error) {
    (void)config;
    error = "mlpd: jitdump/perfmap: not available for this runtime";
    return false;
  }

  // -- statistics and counters (helper thread)
  virtual SampleStats sample_stats() const = 0;
  // Why `sample` does not run on per-thread CPU timers ("" when it does, or was not asked for).
  virtual std::string cpu_timers_not_used() const { return {}; }
  // alloc-sample's mean interval in bytes (0: every allocation recorded).
  virtual uint64_t alloc_sample_bytes() const = 0;
  // Appends the runtime's counters that appeared since the last call, in registration order.
  virtual void take_new_counters(std::vector<Counter>& out) { (void)out; }
  // Reads a counter's value as the integer of its width; false if the runtime could not.
  virtual bool read_counter(const Counter& counter, uint64_t& bits) {
    (void)counter;
    (void)bits;
    return false;
  }
  // The collections' pauses so far; false when the runtime does not measure them (the series is
  // then left out).
  virtual bool gc_pauses(GcPauses& out) const {
    (void)out;
    return false;
  }
  // Every managed thread started so far (exited ones too). Takes a lock; never while the world is
  // stopped.
  virtual std::vector<OsThread> os_threads() const { return {}; }
};

}  // namespace mlpd::runtime
