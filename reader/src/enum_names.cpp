// Names of the format's enum values (see mlpd/enum_names.h).
#include "mlpd/enum_names.h"

#include <ctime>
#include <cstdio>
#include <iterator>

#include "mlpd/format.h"

namespace mlpd {

std::string_view gc_event_name(uint8_t e) {
  switch (e) {
    case format::GC_EVENT_START: return "start";
    case format::GC_EVENT_END: return "end";
    case format::GC_EVENT_PRE_STOP_WORLD: return "pre_stop_world";
    case format::GC_EVENT_POST_STOP_WORLD: return "post_stop_world";
    case format::GC_EVENT_PRE_START_WORLD: return "pre_start_world";
    case format::GC_EVENT_POST_START_WORLD: return "post_start_world";
    case format::GC_EVENT_PRE_STOP_WORLD_LOCKED: return "pre_stop_world_locked";
    case format::GC_EVENT_POST_START_WORLD_UNLOCKED: return "post_start_world_unlocked";
    default: return {};
  }
}

std::string_view handle_type_name(uint64_t t) {
  static constexpr std::string_view k[] = {"weak", "weak_track", "normal", "pinned"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view clause_name(uint8_t c) {
  switch (c) {
    case format::CLAUSE_CATCH: return "catch";
    case format::CLAUSE_FILTER: return "filter";
    case format::CLAUSE_FINALLY: return "finally";
    case format::CLAUSE_FAULT: return "fault";
    default: return {};
  }
}

std::string_view monitor_event_name(uint8_t e) {
  switch (e) {
    case format::MONITOR_CONTENTION: return "contention";
    case format::MONITOR_DONE: return "done";
    case format::MONITOR_FAIL: return "fail";
    default: return {};
  }
}

std::string_view root_source_name(uint8_t s) {
  static constexpr std::string_view k[] = {
      "external", "stack",    "finalizer_queue", "static",  "thread_static", "context_static",
      "gc_handle", "jit",     "threading",       "domain",  "reflection",    "marshal",
      "thread_pool", "debugger", "handle",       "ephemeron", "toggleref"};
  return s < std::size(k) ? k[s] : std::string_view{};
}

std::string_view code_buffer_name(uint8_t t) {
  static constexpr std::string_view k[] = {
      "method",      "method_trampoline", "unbox_trampoline", "imt_trampoline",  "generics_trampoline",
      "specific_trampoline", "helper",    "monitor",          "delegate_invoke", "exception_handling"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view sync_point_name(uint8_t t) {
  static constexpr std::string_view k[] = {"periodic", "world_stop", "world_start"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view counter_type_name(uint64_t t) {
  static constexpr std::string_view k[] = {"int",  "uint",   "word",   "long",
                                           "ulong", "double", "string", "time_interval"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view counter_section_name(uint64_t s) {
  static constexpr std::string_view k[] = {"jit",     "gc",     "metadata",     "generics", "security",
                                           "runtime", "system", "perfcounters", "profiler", "interp"};
  for (unsigned i = 0; i < std::size(k); ++i)
    if (s == (uint64_t{1} << (8 + i))) return k[i];
  return {};
}

std::string_view counter_unit_name(uint64_t u) {
  static constexpr std::string_view k[] = {"raw", "bytes", "time", "count", "percentage"};
  for (unsigned i = 0; i < std::size(k); ++i)
    if (u == (uint64_t{i} << 24)) return k[i];
  return {};
}

std::string_view counter_variance_name(uint64_t v) {
  if (v == 0) return "none";
  if (v == format::COUNTER_VARIANCE_MONOTONIC) return "monotonic";
  if (v == format::COUNTER_VARIANCE_CONSTANT) return "constant";
  if (v == format::COUNTER_VARIANCE_VARIABLE) return "variable";
  return {};
}

bool counter_type_signed(uint64_t t) {
  return t == format::COUNTER_INT || t == format::COUNTER_WORD || t == format::COUNTER_LONG ||
         t == format::COUNTER_TIME_INTERVAL;
}

// "YYYY-MM-DDTHH:MM:SS.mmmZ" for milliseconds since the Unix epoch; empty when out of range.
std::string iso8601_utc(uint64_t ms) {
  constexpr uint64_t kMaxSeconds = 253402300799;  // 9999-12-31T23:59:59Z
  const uint64_t secs = ms / 1000;
  if (secs > kMaxSeconds) return {};
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return {};
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(ms % 1000));
  return buf;
}

}  // namespace mlpd
