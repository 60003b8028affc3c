#include "mlpd/arch/cycles.h"

#include <cpuid.h>

namespace mlpd::arch {

bool cycle_counter_invariant() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d >> 8) & 1;
}

}  // namespace mlpd::arch
