/* A program of another machine's root run as if it were this machine's (the arm64 tests): execs
 * scripts/in-root.sh ROOT TOOL ARGS..., built in (MLPD_IN_ROOT, MLPD_ROOT, MLPD_TOOL, MLPD_BINDS).
 * Linked statically, so that this machine's loader never sees the test's LD_PRELOAD: it names the arm64
 * agent, which only the root's loader can load (a shell script here would print ld.so's "cannot be
 * preloaded" on the program's stderr). The preload goes to in-root.sh as MLPD_ROOT_PRELOAD.
 * MLPD_TOOL "": the program is the first argument (any program of the root). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const char* preload = getenv("LD_PRELOAD");
  if (setenv("MLPD_ROOT_PRELOAD", preload ? preload : "", 1) != 0 || unsetenv("LD_PRELOAD") != 0 ||
      setenv("MLPD_ROOT_BINDS", MLPD_BINDS, 1) != 0) {
    perror("root_exec");
    return 127;
  }
  char** args = calloc((size_t)argc + 3, sizeof *args);
  if (!args) return 127;
  args[0] = (char*)MLPD_IN_ROOT;
  args[1] = (char*)MLPD_ROOT;
  int n = 2;
  if (MLPD_TOOL[0] != '\0') args[n++] = (char*)MLPD_TOOL;
  for (int i = 1; i < argc; ++i) args[n++] = argv[i];
  execv(MLPD_IN_ROOT, args);
  perror("root_exec: " MLPD_IN_ROOT);
  return 127;
}
