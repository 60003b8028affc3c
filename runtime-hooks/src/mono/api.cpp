// The one place where the agent looks Mono's functions up: the required public API (mono_api.h) and
// the optional and non-public ones (mono/optional.h), by name from the process's global scope.
#include "mlpd/hooks/mono_api.h"

#include <dlfcn.h>

#include "mono/optional.h"

namespace mlpd::hooks {

MonoApi mono;
MonoOptional mono_optional;

namespace {
template <typename Fn>
void look_up(Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}
}  // namespace

bool MonoApi::bind(std::string& missing) {
#define MLPD_MONO_BIND(name)  \
  look_up(name, #name);       \
  if (!name) {                \
    missing = #name;          \
    return false;             \
  }
  MLPD_MONO_REQUIRED(MLPD_MONO_BIND)
#undef MLPD_MONO_BIND
  mono_optional.bind();
  return true;
}

void MonoOptional::bind() {
  look_up(mono_method_get_context, "mono_method_get_context");
  look_up(mono_method_get_flags, "mono_method_get_flags");
  look_up(mono_method_get_class, "mono_method_get_class");
  look_up(mono_class_is_valuetype, "mono_class_is_valuetype");
  look_up(mono_gc_collection_count, "mono_gc_collection_count");
  look_up(mono_gc_get_generation, "mono_gc_get_generation");
  look_up(mono_thread_info_current_unchecked, "mono_thread_info_current_unchecked");
  look_up(mono_add_internal_call, "mono_add_internal_call");
  look_up(mono_domain_foreach, "mono_domain_foreach");
  look_up(mono_assembly_foreach, "mono_assembly_foreach");
  look_up(mono_runtime_get_aotid, "mono_runtime_get_aotid");
  look_up(mono_get_runtime_build_info, "mono_get_runtime_build_info");
  look_up(mono_callspec_parse, "mono_callspec_parse");
  look_up(mono_callspec_eval, "mono_callspec_eval");
}

}  // namespace mlpd::hooks
