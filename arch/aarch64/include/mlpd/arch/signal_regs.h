// arm64: not ported yet (another session's work). The port fills this header with the same names as
// arch/x86_64/include/mlpd/arch/signal_regs.h; until then CMake builds an arm64 machine with arch/generic/.
#pragma once
#error "arch/aarch64 is not ported yet: configure with -DMLPD_ARCH=generic"
