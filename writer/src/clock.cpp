#include "mlpd/rt/clock.h"

namespace mlpd::rt {

uint32_t measure_clock_overhead() {
  constexpr int kCalls = 256;
  const uint64_t start = now_ns();
  uint64_t sink = 0;
  for (int i = 0; i < kCalls; ++i) sink += now_ns();
  const uint64_t elapsed = now_ns() - start;
  (void)sink;
  return static_cast<uint32_t>(elapsed / kCalls);
}

}  // namespace mlpd::rt
