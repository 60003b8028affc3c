#include "mlpd/arch/cycles.h"

namespace mlpd::arch {

bool cycle_counter_invariant() noexcept { return false; }

}  // namespace mlpd::arch
