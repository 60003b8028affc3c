// Names of the format's enum values, as `mlpd dump` prints them and exporters and reports show them.
// Each returns an empty string_view for a value that has no name (a newer or corrupt file); callers
// then print the number. The names follow Mono's enums (mono/profiler/log.h, mono-counters.h) in
// lower case; docs/format.md lists the values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mlpd {

// gc_event (format::GC_EVENT_*): "start", "end", "pre_stop_world", ...
std::string_view gc_event_name(uint8_t event);
// gc_handle_created/destroyed handle types: "weak", "weak_track", "normal", "pinned".
std::string_view handle_type_name(uint64_t type);
// exception_clause kinds (format::CLAUSE_*): "catch", "filter", "finally", "fault".
std::string_view clause_name(uint8_t clause);
// monitor events (format::MONITOR_*): "contention", "done", "fail".
std::string_view monitor_event_name(uint8_t event);
// heap_root_register sources (MonoGCRootSource): "external", "stack", "finalizer_queue", ...
std::string_view root_source_name(uint8_t source);
// jit_helper code buffer types (format::CODE_BUFFER_*): "method", "method_trampoline", ...
std::string_view code_buffer_name(uint8_t type);
// sync_point types: "periodic", "world_stop", "world_start".
std::string_view sync_point_name(uint8_t type);

// Counter descriptors (format::COUNTER_*).
std::string_view counter_type_name(uint64_t type);          // "int", "uint", ..., "time_interval"
std::string_view counter_section_name(uint64_t section);    // "jit", "gc", ..., "interp" (one flag)
std::string_view counter_unit_name(uint64_t unit);          // "raw", "bytes", "time", "count", "percentage"
std::string_view counter_variance_name(uint64_t variance);  // "none", "monotonic", "constant", "variable"
// True for the counter types whose values are signed (int, word, long, time_interval).
bool counter_type_signed(uint64_t type);

// "YYYY-MM-DDTHH:MM:SS.mmmZ" for milliseconds since the Unix epoch (the file header's startup_ms);
// empty when out of range.
std::string iso8601_utc(uint64_t ms);

}  // namespace mlpd
