// Mono behind the runtime door: the runtime-neutral Config becomes the hooks' HookConfig, and every
// question of the agent is forwarded to the hooks (hooks.h, control.h, sampling.h, perf_output.h,
// heapshot.h, icalls.h, runtime_counters.h). What only Mono knows stays here: that it is present
// (mono_profiler_create exported), what it cannot do once it runs (attach), its own options.
#include "mono/mono_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <new>

#include "mlpd/conventions.h"
#include "mlpd/format.h"
#include "mlpd/hooks/control.h"
#include "mlpd/hooks/heapshot.h"
#include "mlpd/hooks/hooks.h"
#include "mlpd/hooks/icalls.h"
#include "mlpd/hooks/perf_output.h"
#include "mlpd/hooks/runtime_counters.h"
#include "capture/alloc_sampler.h"
#include "capture/os_threads.h"
#include "mlpd/capture/sampling.h"
#include "mono/sampling_start.h"
#include "mono/aot_images.h"

namespace mlpd::mono {

namespace {

static_assert(hooks::kSampleOff == runtime::kSampleOff && hooks::kSampleProcess == runtime::kSampleProcess &&
              hooks::kSampleReal == runtime::kSampleReal, "the sampling modes are the same numbers");

class MonoRuntime final : public runtime::Runtime {
 public:
  std::string_view name() const override { return "mono"; }
  bool present() const override { return dlsym(RTLD_DEFAULT, "mono_profiler_create") != nullptr; }
  std::string summary() const override { return hooks::runtime_summary(); }
  std::string backtrace_summary() const override { return hooks::backtrace_summary(); }
  bool takes_option(std::string_view n) const override {
    return n == "callspec" || n == "walker" || n == "roots-every-gc";
  }

  // Mono 6.8 and 6.12 fix at start-up whether the JIT instruments allocations and exception clauses
  // and whether its sampler thread exists (mono_profiler_enable_* return false afterwards). Sampling
  // has a sampler of our own then (late_sampler.h); what needs the rest is refused. `calls` is not
  // refused: the JIT asks the instrumentation filter when it compiles a method
  // (mini_method_compile), so the methods compiled after the attach are instrumented, those compiled
  // before are not (late_calls_notice).
  std::string late_refusal(const runtime::Config& c) const override {
    if (c.mask & format::MASK_GC_ALLOC) return "alloc (allocation events need the allocator chosen at start-up)";
    if (c.alloc_sample) return "alloc-sample (allocation events need the allocator chosen at start-up)";
    return {};
  }
  std::string late_calls_notice() const override {
    return "mlpd: calls: only methods compiled after the attach are instrumented (those already compiled, the "
           "running code among them, are not); they keep an empty profiler call at entry and exit after detach";
  }

  bool install(const runtime::Config& c, const runtime::Env& env, std::string& error) override {
    wake_ = env.wake_helper;
    wake_ctx_ = env.wake_ctx;
    MonoOptions own;
    if (!parse_mono_options(c.options, own, error)) return false;
    hooks::HookConfig config;
    config.mask = c.mask;
    config.calls = c.calls;
    config.calldepth = c.calldepth;
    config.calls_min_ns = c.calls_min_ns;
    config.maxframes = c.maxframes;
    config.roots_every_gc = own.roots_every_gc;
    config.callspec = own.callspec;
    config.verbose = c.verbose;
    config.walker = own.walker;
    config.eager_metadata = c.eager_metadata;
    config.late = c.late;
    config.sample_mode = c.sample_mode;
    config.sample_freq = c.sample_freq;
    config.alloc_sample = c.alloc_sample;
    config.start_paused = c.start_paused;
    config.command_port = c.heapshot_on_request;
    config.sample_pool = c.sample_pool;
    hooks::HookEnv he;
    he.shared = env.shared;
    he.registry = env.registry;
    he.meta = env.meta;
    he.on_runtime_initialized = env.on_runtime_initialized;
    he.on_shutdown_begin = env.on_shutdown_begin;
    he.on_shutdown_end = env.on_shutdown_end;
    hooks::LogProfilerSettings lp;  // what Mono.Profiler.Log.LogProfiler reads back at first
    lp.heapshot_mode = c.heapshot_mode;
    lp.heapshot_ms = c.heapshot_ms;
    lp.heapshot_gc = c.heapshot_gc;
    lp.sample_mode = c.sample_mode;
    lp.sample_freq = c.sample_freq;
    hooks::seed_log_profiler_settings(lp);  // also the heapshot policy
    hooks::set_heapshot_on_shutdown(c.heapshot_on_shutdown);
    if (!hooks::install(config, he, error)) return false;
    hooks::set_after_trigger_heapshot(env.after_trigger_heapshot);
    return true;
  }
  void stop() override { hooks::stop(); }
  void detach() override { hooks::detach(); }
  void end_remaining_threads() override { hooks::end_remaining_threads(); }
  void after_fork_child() override { hooks::perf::forget_after_fork(); }  // the parent's jitdump stays the parent's

  uint32_t event_mask() const override { return hooks::event_mask(); }
  void set_event_mask(uint32_t mask) override { hooks::set_event_mask(mask); }
  bool calls_enabled() const override { return hooks::calls_enabled(); }
  uint32_t call_depth() const override { return hooks::call_depth(); }
  void set_call_depth(uint32_t depth) override { hooks::set_call_depth(depth); }
  uint32_t max_frames() const override { return hooks::max_frames(); }
  bool pause() override { return hooks::pause(); }
  bool resume() override { return hooks::resume(); }
  bool paused() const override { return hooks::paused(); }
  uint64_t pause_generation() const override { return hooks::pause_generation(); }
  uint64_t paused_since_last_read() override { return hooks::paused_since_last_read(); }
  bool heapshots_available() const override { return true; }  // the finalizer thread takes them
  uint64_t request_heapshot() override { return hooks::request_heapshot(); }
  uint64_t heapshots_done() const override { return hooks::heapshots_done(); }

  void round() override {
    hooks::drain_samples();  // samples (and the native symbols they need) into the MetaLog first
    hooks::perf::drain();    // jitdump/perfmap records the JIT threads queued
  }
  void final_round(bool verbose) override {
    hooks::perf::finish(verbose);  // the last jitdump/perfmap code loads, JIT_CODE_CLOSE
    hooks::drain_samples(true);    // sampling is stopped: a record still being written is counted lost
  }
  bool start_perf_output(const runtime::PerfOutputConfig& c, std::string& error) override {
    hooks::perf::OutputConfig pc{c.jitdump, c.jitdump_dir, c.perfmap, wake_, wake_ctx_};
    return hooks::perf::start(pc, error);
  }

  runtime::SampleStats sample_stats() const override { return hooks::sample_stats(); }
  bool gc_pauses(runtime::GcPauses& out) const override {
    hooks::gc_pauses(out);
    return true;
  }
  std::string cpu_timers_not_used() const override { return hooks::cpu_timers_not_used(); }
  uint64_t alloc_sample_bytes() const override { return hooks::alloc_sample_bytes(); }
  void take_new_counters(std::vector<runtime::Counter>& out) override {
    hooks::take_new_runtime_counters(out);
    // Issue 33: one counter per AOT image loaded (value 1; the report's calls section reads them).
    for (const std::string& name : hooks::aot_images()) {
      if (std::find(aot_counted_.begin(), aot_counted_.end(), name) != aot_counted_.end()) continue;
      aot_counted_.push_back(name);
      runtime::Counter c;
      c.handle = &kAotCounterTag;
      c.desc.section = format::COUNTER_SECTION_PROFILER;
      c.desc.name = std::string(conventions::kAotImageCounterPrefix) + name;
      c.desc.type = format::COUNTER_ULONG;
      c.desc.unit = format::COUNTER_UNIT_COUNT;
      c.desc.variance = format::COUNTER_VARIANCE_CONSTANT;
      c.size = 8;
      out.push_back(std::move(c));
    }
  }
  bool read_counter(const runtime::Counter& c, uint64_t& bits) override {
    if (c.handle == &kAotCounterTag) {
      bits = 1;
      return true;
    }
    return hooks::read_runtime_counter(c, bits);
  }
  std::string calls_notice() const override {
    const std::vector<std::string> aot = hooks::aot_images();
    if (aot.empty()) return {};
    std::string names;
    for (const std::string& n : aot) names += (names.empty() ? "" : ", ") + n;
    return "mlpd: calls: methods of " + std::to_string(aot.size()) + " AOT-compiled image" + (aot.size() == 1 ? "" : "s") +
           " (" + names + ") ran without enter/leave events and are not counted; run mono with -O=-aot to see them";
  }
  std::vector<runtime::OsThread> os_threads() const override { return hooks::os_threads(); }

 private:
  static inline char kAotCounterTag = 0;  // its address: the handle of the AOT-image counters
  std::vector<std::string> aot_counted_;        // the AOT images that have their counter (helper thread)
  void (*wake_)(void*) = nullptr;
  void* wake_ctx_ = nullptr;
};

}  // namespace

bool parse_mono_options(std::string_view text, MonoOptions& out, std::string& error) {
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : line.substr(eq + 1);
    if (key == "callspec" && eq != std::string_view::npos) {
      out.callspec = std::string(value);
    } else if (key == "walker" && (value == "ours" || value == "mono" || value == "check")) {
      out.walker = value == "ours" ? 0 : value == "mono" ? 1 : 2;
    } else if (key == "roots-every-gc" && eq == std::string_view::npos) {
      out.roots_every_gc = true;
    } else {
      error = "unknown Mono option '" + std::string(line) + "'";
      return false;
    }
  }
  return true;
}

runtime::Runtime& runtime() {
  // Never destroyed (callbacks may run during exit), and no allocation: the ELF constructor asks it
  // in every process, Mono or not.
  alignas(MonoRuntime) static unsigned char storage[sizeof(MonoRuntime)];
  static MonoRuntime* r = new (storage) MonoRuntime;
  return *r;
}

}  // namespace mlpd::mono
