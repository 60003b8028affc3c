// What an attached agent can do (docs/attach.md): Mono 6.8 and 6.12 fix at start-up whether the JIT
// instruments allocations and exception clauses and whether its sampler thread exists
// (mono_profiler_enable_* return false afterwards). Sampling has a sampler of our own then; what
// needs the rest is refused here, in one line, before anything is opened.
#include "attach_options.h"

#include "mlpd/format.h"

namespace mlpd::agent {

bool late_options_allowed(const Options& o, std::string& error) {
  const char* refused = nullptr;
  if (o.effective_mask & format::MASK_GC_ALLOC) refused = "alloc (allocation events need the allocator chosen at start-up)";
  else if (o.alloc_sample) refused = "alloc-sample (allocation events need the allocator chosen at start-up)";
  else if (o.calls) refused = "calls (not supported after attach yet)";
  if (!refused) return true;
  error = std::string("mlpd: cannot attach with ") + refused + "; use LD_PRELOAD for it";
  return false;
}

}  // namespace mlpd::agent
