// Entry points of libmlpd.so. The agent core (issue 3) is not built yet: loading the library into
// any process changes nothing. When MLPD_OPTIONS is set, say so once, so nobody believes they are
// being profiled.
#include <cstdio>
#include <cstdlib>

namespace {
void announce_stub() {
  static bool said = false;
  if (said) return;
  said = true;
  std::fputs("mlpd: this build of libmlpd.so does not profile yet (agent core not built); nothing is recorded\n",
             stderr);
}
}  // namespace

__attribute__((constructor)) static void mlpd_preload_constructor() {
  if (std::getenv("MLPD_OPTIONS")) announce_stub();
}

extern "C" __attribute__((visibility("default"))) void mono_profiler_init_mlpd(const char*) { announce_stub(); }
