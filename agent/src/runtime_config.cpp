#include "runtime_config.h"

namespace mlpd::agent {

bool runtime_config(const Options& o, const runtime::Runtime& runtime, bool late, unsigned cores,
                    runtime::Config& c, std::string& error) {
  c = runtime::Config();
  c.mask = o.effective_mask;
  c.calls = o.calls;
  c.calldepth = o.calldepth;
  c.calls_min_ns = uint64_t{o.calls_min_us} * 1000;
  c.maxframes = o.maxframes;
  c.sample_mode = o.sample_mode == SampleMode::Process ? runtime::kSampleProcess
                  : o.sample_mode == SampleMode::Real  ? runtime::kSampleReal
                                                       : runtime::kSampleOff;
  c.sample_freq = o.sample_freq;
  c.sample_pool = max_sample_hits(o, cores);
  c.alloc_sample = o.alloc_sample;
  c.start_paused = o.start_paused;
  c.heapshot_on_request = wants_command_server(o);  // heapshots on request: classes are named at load
  c.heapshot_mode = o.heapshot_mode;
  c.heapshot_ms = o.heapshot_ms;
  c.heapshot_gc = o.heapshot_gc;
  c.heapshot_on_shutdown = o.heapshot_on_shutdown;
  c.eager_metadata = o.eager_metadata;
  c.verbose = o.verbose;
  c.late = late;
  // The runtime's own settings (Mono's today): one per line (a callspec may hold commas; a newline in
  // it would end the line early: the runtime then refuses the rest, in one line).
  const auto own = [&](const char* name, const std::string& line, bool given) {
    if (runtime.takes_option(name)) {
      c.options += line + "\n";
      return true;
    }
    if (!given) return true;  // follows from another option: not for this runtime
    error = std::string("mlpd: ") + name + "= is not available for the " + std::string(runtime.name()) +
            " runtime; profiling is off";
    return false;
  };
  if (!o.callspec.empty() && !own("callspec", "callspec=" + o.callspec, true)) return false;
  if (o.walker != WalkerMode::Ours &&
      !own("walker", o.walker == WalkerMode::Mono ? "walker=mono" : "walker=check", true)) return false;
  // gcroot reports on every collection, as Mono's profiler does in its compatible mode.
  if (o.compat && !own("roots-every-gc", "roots-every-gc", false)) return false;
  return true;
}

bool late_options_allowed(const runtime::Runtime& runtime, const runtime::Config& config, std::string& error) {
  const std::string refused = runtime.late_refusal(config);
  if (refused.empty()) return true;
  error = "mlpd: cannot attach with " + refused + "; use LD_PRELOAD for it";
  return false;
}

}  // namespace mlpd::agent
