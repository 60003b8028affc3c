// arm64: not ported yet (see include/mlpd/arch/cycles.h).
#include "mlpd/arch/cycles.h"
