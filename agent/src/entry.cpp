// Entry points of libmlpd.so.
//  * LD_PRELOAD=libmlpd.so MLPD_OPTIONS=... : the ELF constructor starts the agent before main, so
//    the profiler is installed before the Mono runtime starts (what mono_profiler_create and the
//    enable_* calls require).
//  * mono --profile=mlpd:OPTIONS (or MONO_ENV_OPTIONS): Mono finds mono_profiler_init_mlpd in the
//    main program's scope (a preloaded library is in it) or in libmono-profiler-mlpd.so.
// In a process that is not Mono both do nothing.
#include <cstdlib>
#include <string_view>

#include "mlpd/agent/agent.h"
#include "mlpd/agent/options.h"

__attribute__((constructor)) static void mlpd_preload_constructor() {
  if (const char* opts = std::getenv("MLPD_OPTIONS")) mlpd::agent::start(opts);
}

__attribute__((destructor)) static void mlpd_unload_destructor() { mlpd::agent::shutdown(); }

extern "C" __attribute__((visibility("default"))) void mono_profiler_init_mlpd(const char* desc) {
  mlpd::agent::start(mlpd::agent::options_from_profiler_desc(desc ? desc : ""));
}
