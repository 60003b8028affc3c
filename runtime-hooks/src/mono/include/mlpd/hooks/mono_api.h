// The Mono embedding API as the agent uses it: every function is resolved at start with
// dlsym(RTLD_DEFAULT, ...) and typed from the installed headers (decltype), so libmlpd.so never
// links libmono and loads harmlessly into a process that is not Mono (bind() then fails and the
// agent stays off). Only public API functions are used.
#pragma once

#include <mono/metadata/appdomain.h>
#include <mono/metadata/assembly.h>
#include <mono/metadata/class.h>
#include <mono/metadata/debug-helpers.h>
#include <mono/metadata/image.h>
#include <mono/metadata/loader.h>
#include <mono/metadata/mono-gc.h>
#include <mono/metadata/object.h>
#include <mono/metadata/profiler.h>
#include <mono/metadata/threads.h>
#include <mono/utils/mono-counters.h>
#include <mono/utils/mono-publib.h>

#include <string>

namespace mlpd::hooks {

// Required: without any of these the agent does not start.
#define MLPD_MONO_REQUIRED(X)                          \
  X(mono_profiler_create)                              \
  X(mono_profiler_enable_allocations)                  \
  X(mono_profiler_enable_clauses)                      \
  X(mono_profiler_set_runtime_initialized_callback)    \
  X(mono_profiler_set_runtime_shutdown_begin_callback) \
  X(mono_profiler_set_runtime_shutdown_end_callback)   \
  X(mono_profiler_set_thread_started_callback)         \
  X(mono_profiler_set_thread_stopped_callback)         \
  X(mono_profiler_set_thread_exited_callback)          \
  X(mono_profiler_set_thread_name_callback)            \
  X(mono_profiler_set_domain_loaded_callback)          \
  X(mono_profiler_set_domain_unloading_callback)       \
  X(mono_profiler_set_domain_name_callback)            \
  X(mono_profiler_set_context_loaded_callback)         \
  X(mono_profiler_set_context_unloaded_callback)       \
  X(mono_profiler_set_assembly_loaded_callback)        \
  X(mono_profiler_set_assembly_unloading_callback)     \
  X(mono_profiler_set_image_loaded_callback)           \
  X(mono_profiler_set_image_unloading_callback)        \
  X(mono_profiler_set_class_loaded_callback)           \
  X(mono_profiler_set_vtable_loaded_callback)          \
  X(mono_profiler_set_jit_done_callback)               \
  X(mono_profiler_set_method_free_callback)            \
  X(mono_profiler_set_jit_code_buffer_callback)        \
  X(mono_profiler_set_method_enter_callback)           \
  X(mono_profiler_set_method_leave_callback)           \
  X(mono_profiler_set_method_tail_call_callback)       \
  X(mono_profiler_set_method_exception_leave_callback) \
  X(mono_profiler_set_call_instrumentation_filter_callback) \
  X(mono_profiler_set_exception_throw_callback)        \
  X(mono_profiler_set_exception_clause_callback)       \
  X(mono_profiler_set_gc_event_callback)               \
  X(mono_profiler_set_gc_allocation_callback)          \
  X(mono_profiler_set_gc_moves_callback)               \
  X(mono_profiler_set_gc_resize_callback)              \
  X(mono_profiler_set_gc_handle_created_callback)      \
  X(mono_profiler_set_gc_handle_deleted_callback)      \
  X(mono_profiler_set_gc_finalizing_callback)          \
  X(mono_profiler_set_gc_finalized_callback)           \
  X(mono_profiler_set_gc_finalizing_object_callback)   \
  X(mono_profiler_set_gc_finalized_object_callback)    \
  X(mono_profiler_set_gc_root_register_callback)       \
  X(mono_profiler_set_gc_root_unregister_callback)     \
  X(mono_profiler_set_gc_roots_callback)               \
  X(mono_profiler_set_monitor_contention_callback)     \
  X(mono_profiler_set_monitor_acquired_callback)       \
  X(mono_profiler_set_monitor_failed_callback)         \
  X(mono_image_get_filename)                           \
  X(mono_image_get_guid)                               \
  X(mono_assembly_get_image)                           \
  X(mono_assembly_get_name)                            \
  X(mono_stringify_assembly_name)                      \
  X(mono_class_get_image)                              \
  X(mono_class_get_type)                               \
  X(mono_class_get_name)                               \
  X(mono_class_get_namespace)                          \
  X(mono_class_get_nesting_type)                       \
  X(mono_type_get_name)                                \
  X(mono_vtable_class)                                 \
  X(mono_vtable_domain)                                \
  X(mono_domain_get)                                   \
  X(mono_domain_get_id)                                \
  X(mono_context_get_id)                               \
  X(mono_context_get_domain_id)                        \
  X(mono_method_full_name)                             \
  X(mono_method_get_name)                              \
  X(mono_jit_info_get_code_start)                      \
  X(mono_jit_info_get_code_size)                       \
  X(mono_jit_info_get_method)                          \
  X(mono_jit_info_table_find)                          \
  X(mono_object_get_vtable)                            \
  X(mono_object_get_size)                              \
  X(mono_gc_collect)                                   \
  X(mono_gc_max_generation)                            \
  X(mono_gc_get_generation)                            \
  X(mono_gc_walk_heap)                                 \
  X(mono_gc_finalize_notify)                           \
  X(mono_stack_walk_no_il)                             \
  X(mono_counters_on_register)                         \
  X(mono_counters_foreach)                             \
  X(mono_counters_sample)                              \
  X(mono_counter_get_name)                             \
  X(mono_counter_get_section)                          \
  X(mono_counter_get_type)                             \
  X(mono_counter_get_unit)                             \
  X(mono_counter_get_variance)                         \
  X(mono_counter_get_size)                             \
  X(mono_stack_walk_async_safe)                        \
  X(mono_profiler_enable_sampling)                     \
  X(mono_profiler_set_sample_mode)                     \
  X(mono_profiler_set_sample_hit_callback)             \
  X(mono_free)

#define MLPD_MONO_FN_MEMBER(name) decltype(&::name) name = nullptr;

struct MonoApi {
  MLPD_MONO_REQUIRED(MLPD_MONO_FN_MEMBER)

  // Resolves every function; on failure names the first missing one in `missing`.
  bool bind(std::string& missing);
};

#undef MLPD_MONO_FN_MEMBER

// The bound API (filled by bind()).
extern MonoApi mono;

// A string Mono allocated for us (nullptr: empty), copied and freed with mono_free.
inline std::string take_mono_string(char* s) {
  std::string r = s ? s : "";
  if (s) mono.mono_free(s);
  return r;
}

}  // namespace mlpd::hooks
