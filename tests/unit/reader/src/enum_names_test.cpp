// enum_names: the names of the format's enum values, and no name for values outside the enums.
#include "mlpd_catch.h"

#include "mlpd/enum_names.h"
#include "mlpd/format.h"

using namespace mlpd;

TEST_CASE("enum names: known values have their Mono names", "[enum_names]") {
  CHECK(gc_event_name(format::GC_EVENT_START) == "start");
  CHECK(gc_event_name(format::GC_EVENT_POST_START_WORLD_UNLOCKED) == "post_start_world_unlocked");
  CHECK(handle_type_name(3) == "pinned");
  CHECK(clause_name(format::CLAUSE_FAULT) == "fault");
  CHECK(monitor_event_name(format::MONITOR_FAIL) == "fail");
  CHECK(root_source_name(0) == "external");
  CHECK(root_source_name(16) == "toggleref");
  CHECK(code_buffer_name(format::CODE_BUFFER_SPECIFIC_TRAMPOLINE) == "specific_trampoline");
  CHECK(code_buffer_name(format::CODE_BUFFER_EXCEPTION_HANDLING) == "exception_handling");
  CHECK(sync_point_name(2) == "world_start");
  CHECK(counter_type_name(format::COUNTER_TIME_INTERVAL) == "time_interval");
  CHECK(counter_section_name(format::COUNTER_SECTION_PERFCOUNTERS) == "perfcounters");
  CHECK(counter_section_name(format::COUNTER_SECTION_PROFILER) == "profiler");
  CHECK(counter_unit_name(format::COUNTER_UNIT_RAW) == "raw");
  CHECK(counter_unit_name(format::COUNTER_UNIT_PERCENTAGE) == "percentage");
  CHECK(counter_variance_name(0) == "none");
  CHECK(counter_variance_name(format::COUNTER_VARIANCE_VARIABLE) == "variable");
  CHECK(counter_type_signed(format::COUNTER_INT));
  CHECK(counter_type_signed(format::COUNTER_TIME_INTERVAL));
  CHECK_FALSE(counter_type_signed(format::COUNTER_UINT));
  CHECK_FALSE(counter_type_signed(format::COUNTER_DOUBLE));
}

TEST_CASE("enum names: values outside the enums have no name", "[enum_names]") {
  CHECK(gc_event_name(0xFF).empty());
  CHECK(handle_type_name(4).empty());
  CHECK(clause_name(3).empty());  // the gap between finally (2) and fault (4)
  CHECK(monitor_event_name(0).empty());
  CHECK(root_source_name(17).empty());
  CHECK(code_buffer_name(10).empty());
  CHECK(sync_point_name(3).empty());
  CHECK(counter_type_name(8).empty());
  CHECK(counter_section_name(0).empty());
  CHECK(counter_section_name(3u << 8).empty());  // two sections at once
  CHECK(counter_unit_name(5u << 24).empty());
  CHECK(counter_variance_name(3u << 28).empty());
}

TEST_CASE("enum names: iso8601_utc", "[enum_names]") {
  CHECK(iso8601_utc(0) == "1970-01-01T00:00:00.000Z");
  CHECK(iso8601_utc(1700000000123) == "2023-11-14T22:13:20.123Z");
  CHECK(iso8601_utc(253402300799999) == "9999-12-31T23:59:59.999Z");
  CHECK(iso8601_utc(253402300800000).empty());
}
