// What an attached agent can do (docs/attach.md): Mono 6.8 and 6.12 fix at start-up whether the JIT
// instruments allocations and exception clauses and whether its sampler thread exists
// (mono_profiler_enable_* return false afterwards). Sampling has a sampler of our own then; what
// needs the rest is refused here, in one line, before anything is opened. `calls` is not refused: the
// JIT asks the instrumentation filter when it compiles a method (mini_method_compile), so the methods
// compiled after the attach are instrumented, those compiled before are not (late_calls_notice).
#include "attach_options.h"

#include "mlpd/format.h"

namespace mlpd::agent {

bool late_options_allowed(const Options& o, std::string& error) {
  const char* refused = nullptr;
  if (o.effective_mask & format::MASK_GC_ALLOC) refused = "alloc (allocation events need the allocator chosen at start-up)";
  else if (o.alloc_sample) refused = "alloc-sample (allocation events need the allocator chosen at start-up)";
  if (!refused) return true;
  error = std::string("mlpd: cannot attach with ") + refused + "; use LD_PRELOAD for it";
  return false;
}

const char* late_calls_notice() {
  return "mlpd: calls: only methods compiled after the attach are instrumented (those already compiled, the "
         "running code among them, are not); they keep an empty profiler call at entry and exit after detach";
}

}  // namespace mlpd::agent
