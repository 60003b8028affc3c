#include "mlpd/arch/cycles.h"

namespace mlpd::arch {

uint64_t cycle_counter_frequency() noexcept {
  uint64_t f;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(f));
  return f & 0xffffffffu;  // the register's upper half is reserved
}

bool cycle_counter_invariant() noexcept {
  if (cycle_counter_frequency() == 0) return false;
  const uint64_t a = read_cycles();
  for (int i = 0; i < 100000; ++i) {
    if (read_cycles() != a) return true;
  }
  return false;  // a counter that stands still
}

}  // namespace mlpd::arch
