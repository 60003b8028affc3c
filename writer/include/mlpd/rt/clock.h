// The agent's clock: nanoseconds on CLOCK_MONOTONIC (the vDSO makes it a few tens of ns, no syscall),
// the same clock Mono's log profiler uses, so our times and Mono's are comparable. One read per event.
#pragma once

#include <cstdint>
#include <ctime>

namespace mlpd::rt {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Mean cost of one now_ns() call in ns, for the file header's timer overhead field.
uint32_t measure_clock_overhead();

}  // namespace mlpd::rt
