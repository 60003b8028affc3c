#include "mlpd/hooks/mono_api.h"

#include <dlfcn.h>

namespace mlpd::hooks {

MonoApi mono;

bool MonoApi::bind(std::string& missing) {
#define MLPD_MONO_BIND(name)                                                    \
  name = reinterpret_cast<decltype(&::name)>(dlsym(RTLD_DEFAULT, #name));       \
  if (!name) {                                                                  \
    missing = #name;                                                            \
    return false;                                                               \
  }
  MLPD_MONO_REQUIRED(MLPD_MONO_BIND)
#undef MLPD_MONO_BIND
  return true;
}

}  // namespace mlpd::hooks
