// Sampled allocations (alloc-sample=BYTES): per thread, a Poisson process over the bytes allocated
// (exponential intervals of mean BYTES, as TCMalloc and async-profiler draw them, so that a fixed
// allocation pattern is not aliased). An allocation is recorded when a sampling point falls inside
// its bytes: probability 1 - exp(-size/BYTES), which the reader inverts to estimate totals
// (docs/format.md). A skipped allocation costs one subtraction and a test of a thread-local.
#pragma once

#include <cstdint>


namespace mlpd::hooks {
// The mean interval in bytes of alloc-sample (0: every allocation is recorded).
uint64_t alloc_sample_bytes();
}  // namespace mlpd::hooks

namespace mlpd::hooks::alloc_sampler {

// The mean interval in bytes; 0: every allocation is recorded. Set by the runtime's install.
extern __attribute__((visibility("hidden"))) uint64_t g_mean;

// Bytes left before this thread's next sampling point. 0 before the thread's first allocation
// (the slow path then draws its first interval).
extern thread_local constinit int64_t tls_left __attribute__((tls_model("initial-exec"), visibility("hidden")));

// The slow path: the first allocation of the thread, or a sampling point reached. True when the
// allocation of `size` bytes (already subtracted from tls_left) is to be recorded.
bool reached(uint64_t size);

// True when an allocation of `size` bytes is to be recorded (always when sampling is off).
inline bool take(uint64_t size) {
  if (g_mean == 0) return true;
  const int64_t left = tls_left - static_cast<int64_t>(size);
  tls_left = left;
  if (left > 0) [[likely]] return false;
  return reached(size);
}

}  // namespace mlpd::hooks::alloc_sampler
