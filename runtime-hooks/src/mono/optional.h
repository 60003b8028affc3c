// Mono's functions outside the required table (mlpd/hooks/mono_api.h, without which the agent does
// not start): exported by the runtime, several of them not in its public headers, each used only when
// found. Bound with the required ones, at start, by MonoApi::bind (mono/api.cpp): together the one
// place where the agent looks Mono's functions up.
#pragma once

#include "mlpd/hooks/mono_api.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks {

struct MonoOptional {
  // The walker's generic code (walker/generic_instances.*, walker/code_table.cpp).
  void* (*mono_method_get_context)(MonoMethod*) = nullptr;  // not in the public headers
  uint32_t (*mono_method_get_flags)(MonoMethod*, uint32_t*) = nullptr;
  MonoClass* (*mono_method_get_class)(MonoMethod*) = nullptr;
  mono_bool (*mono_class_is_valuetype)(MonoClass*) = nullptr;
  int (*mono_gc_collection_count)(int) = nullptr;
  int (*mono_gc_get_generation)(MonoObject*) = nullptr;
  // The calling thread's MonoThreadInfo (utils/mono-threads.h, internal): the walker's JIT TLS.
  void* (*mono_thread_info_current_unchecked)() = nullptr;
  // LogProfiler's icalls (icalls.cpp): without it LogProfiler.IsAttached says false.
  void (*mono_add_internal_call)(const char*, const void*) = nullptr;
  // What a late start (attach) describes as already loaded (metadata_callbacks.cpp's describe_loaded).
  void (*mono_domain_foreach)(MonoDomainFunc, void*) = nullptr;
  void (*mono_assembly_foreach)(MonoFunc, void*) = nullptr;
  // The entry assembly's AOT id (metadata_callbacks.cpp, at shutdown); not in the public headers.
  char* (*mono_runtime_get_aotid)() = nullptr;
  // The runtime's version (mono/runtime_version.h picks the readers of its internals).
  char* (*mono_get_runtime_build_info)() = nullptr;
  // Mono's callspec parser (the --trace syntax) for `callspec=` (metadata/callspec.h, internal).
  mono_bool (*mono_callspec_parse)(const char*, void*, char**) = nullptr;
  mono_bool (*mono_callspec_eval)(MonoMethod*, const void*) = nullptr;

  // Looks every one up (absent: nullptr).
  void bind();
};

extern MonoOptional mono_optional;

}  // namespace mlpd::hooks
#pragma GCC visibility pop
