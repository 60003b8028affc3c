// arch/generic's signal registers: nothing is read from the ucontext_t (the IP comes from Mono), and
// no interrupted system call is recognised (the sampler's CPU clock test alone decides).
#include <ucontext.h>

#include <cstdint>
#include <cstring>

#include "mlpd/arch/signal_regs.h"
#include "mlpd_catch.h"

using namespace mlpd::arch;

TEST_CASE("arch generic: the signal registers are left alone, no system call is recognised", "[arch]") {
  ucontext_t uc;
  std::memset(&uc, 0x5a, sizeof uc);
  uint64_t out[kSignalRegs];
  for (uint64_t& r : out) r = 7;
  signal_registers(uc, out);
  for (uint64_t r : out) CHECK(r == 7);
  CHECK_FALSE(blocked_in_kernel(uc));
  CHECK_FALSE(back_from_wait(uc));
  CHECK_FALSE(kNativeUnwind);
}
