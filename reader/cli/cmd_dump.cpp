// mlpd dump [--json] FILE  (placeholder until the dump command lands)
#include <cstdio>

#include "commands.h"

namespace mlpd::cli {
int cmd_dump(int, char**) {
  std::fprintf(stderr, "mlpd dump: not built yet\n");
  return 2;
}
}  // namespace mlpd::cli
