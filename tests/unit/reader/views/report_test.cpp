// The text report's CPU ranking (issue 22.2): waits, the runtime's unnamed code and the profiler's own
// frames each on one group line; the rate asked for and the rate delivered in the heading.
#include "mlpd_catch.h"

#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/format.h"
#include "mlpd/input.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"

using namespace mlpd;
using namespace mlpd::test;

namespace {

Event usym(uint64_t at, const char* name) {
  Event e;
  e.kind = EventKind::sample_usym;
  e.ptr = at;
  e.size = 0x100;
  e.name = name;
  return e;
}

std::string report_text(const std::vector<uint8_t>& file) {
  auto in = Input::from_memory(file.data(), file.size());
  profile::Profile p;
  profile::build_profile(*in, p);
  std::FILE* f = std::tmpfile();
  std::string error;
  views::ReportOptions o;
  o.top = 20;
  REQUIRE(views::write_report(p, o, f, error));
  std::rewind(f);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

}  // namespace

TEST_CASE("the CPU ranking groups waits, unnamed runtime code and the profiler's own frames", "[report]") {
  std::vector<Event> ev;
  Event jit;
  jit.kind = EventKind::method_jit;
  jit.method = 0x1000;
  jit.ptr = 0x10000;
  jit.size = 0x100;
  jit.name = "N:Work ()";
  ev.push_back(jit);
  ev.push_back(usym(0x7000, "__futex_abstimed_wait_common"));
  ev.push_back(usym(0x7100, "__lll_lock_wait"));
  ev.push_back(usym(0x8000, "_ZN4mlpd5hooks13on_allocationEv"));
  ev.push_back(usym(0x9000, "?? (mono-sgen+0x10)"));
  Event desc;
  desc.kind = EventKind::counter_descriptors;
  CounterDesc d;
  d.section = format::COUNTER_SECTION_PROFILER;
  d.name = "Sample rate delivered (Hz)";
  d.type = format::COUNTER_ULONG;
  d.unit = format::COUNTER_UNIT_COUNT;
  d.variance = format::COUNTER_VARIANCE_VARIABLE;
  d.index = 1;
  desc.counter_descs.push_back(d);
  ev.push_back(desc);
  Event val;
  val.kind = EventKind::counter_samples;
  val.counter_values.push_back(CounterValue{1, format::COUNTER_ULONG, 180, false, {}});
  ev.push_back(val);
  auto hit = [&](uint64_t leaf, int n) {
    for (int i = 0; i < n; ++i) {
      Event h;
      h.kind = EventKind::sample_hit;
      h.time = 100 + static_cast<uint64_t>(ev.size());
      h.ptr = 0x77;
      h.ips = {leaf, 0x10010};
      h.frames = {0x1000};
      ev.push_back(h);
    }
  };
  hit(0x7010, 5);
  hit(0x7110, 2);
  hit(0x8010, 3);
  hit(0x9010, 2);
  hit(0x10010, 4);
  FileHeader h = default_header();
  h.args = "mlpd:sample=250";
  const std::string text = report_text(build_file(h, {{0x77, 0, ev}}));
  INFO(text);
  CHECK(text.find("== CPU samples: 16 hits, sample=250 Hz asked, delivered rate 180 Hz ==") != std::string::npos);
  CHECK(text.find("group    [waits]  (__futex_abstimed_wait_common, __lll_lock_wait)") != std::string::npos);
  CHECK(text.find("       7  ") != std::string::npos);  // 5 + 2 self hits on the waits line
  CHECK(text.find("group    [mlpd overhead]  (mlpd::hooks::on_allocation)") != std::string::npos);
  CHECK(text.find("group    [runtime, unnamed]  (?? (mono-sgen+0x10))") != std::string::npos);
  // None of the grouped frames has a line of its own.
  CHECK(text.find("native   __futex") == std::string::npos);
  CHECK(text.find("native   [mlpd]") == std::string::npos);
  CHECK(text.find("runtime  ??") == std::string::npos);
}

// ---- The report as sections of data (mlpd/report.h): one small hand-made file, one test per section ----

#include "mlpd/report.h"

namespace {

Event ev(EventKind k, uint64_t time) {
  Event e;
  e.kind = k;
  e.time = time;
  return e;
}

// Thread 0x77: Main calls Work; Work allocates a string, allocates and throws an exception, waits on a
// monitor for 50 ns; the run is paused at 1250 and resumed at 1750; one collection (100 ns); three CPU
// hits in Work; per-thread CPU counters; one heapshot of one object.
profile::Profile section_profile() {
  std::vector<Event> v;
  auto jit = [&](uint64_t m, uint64_t code, uint64_t size, const char* name) {
    Event e = ev(EventKind::method_jit, 1000);
    e.method = m, e.ptr = code, e.size = size, e.name = name;
    v.push_back(e);
  };
  jit(0x1000, 0x10000, 0x100, "N:Main ()");
  jit(0x2000, 0x20000, 0x80, "N:Work ()");
  auto klass = [&](uint64_t cls, uint64_t vtable, const char* name) {
    Event c = ev(EventKind::class_load, 1000);
    c.ptr = cls, c.ptr2 = 0x500, c.name = name;
    v.push_back(c);
    Event t = ev(EventKind::vtable_load, 1000);
    t.ptr = vtable, t.ptr2 = 1, t.ptr3 = cls;
    v.push_back(t);
  };
  klass(0xC10, 0xA10, "System.String");
  klass(0xC20, 0xA20, "System.InvalidOperationException");
  auto call = [&](EventKind k, uint64_t m, uint64_t t) {
    Event e = ev(k, t);
    e.method = m;
    v.push_back(e);
  };
  call(EventKind::method_enter, 0x1000, 1100);
  call(EventKind::method_enter, 0x2000, 1200);
  Event pause = ev(EventKind::sync_point, 1250);
  pause.code = format::SYNC_POINT_PERIODIC;
  v.push_back(pause);
  Event a1 = ev(EventKind::alloc, 1300);
  a1.ptr = 0xA10, a1.obj = 0x1000, a1.size = 32;
  v.push_back(a1);
  Event a2 = ev(EventKind::alloc, 1310);
  a2.ptr = 0xA20, a2.obj = 0x2000, a2.size = 64;
  v.push_back(a2);
  Event thr = ev(EventKind::exception_throw, 1320);
  thr.obj = 0x2000;
  v.push_back(thr);
  Event clause = ev(EventKind::exception_clause, 1330);
  clause.code = format::CLAUSE_CATCH, clause.method = 0x2000, clause.obj = 0x2000;
  v.push_back(clause);
  Event m1 = ev(EventKind::monitor, 1400);
  m1.code = format::MONITOR_CONTENTION, m1.obj = 0x3000;
  v.push_back(m1);
  Event m2 = ev(EventKind::monitor, 1450);
  m2.code = format::MONITOR_DONE, m2.obj = 0x3000;
  v.push_back(m2);
  call(EventKind::method_leave, 0x2000, 1500);
  Event g1 = ev(EventKind::gc_event, 1600);
  g1.code = format::GC_EVENT_START, g1.generation = 1;
  v.push_back(g1);
  Event g2 = ev(EventKind::gc_event, 1700);
  g2.code = format::GC_EVENT_END, g2.generation = 1;
  v.push_back(g2);
  Event resume = ev(EventKind::sync_point, 1750);
  resume.code = format::SYNC_POINT_PERIODIC;
  v.push_back(resume);
  for (uint64_t t = 1800; t < 1803; ++t) {
    Event h = ev(EventKind::sample_hit, t);
    h.ptr = 0x77;
    h.frames = {0x2000, 0x1000};
    v.push_back(h);
  }
  Event desc = ev(EventKind::counter_descriptors, 1850);
  const char* names[] = {"Thread CPU time (user): main [123]", "Thread CPU time (system): main [123]",
                         "CPU time (user)", "CPU time (system)", "Idle"};
  for (uint64_t i = 0; i < 5; ++i) {
    CounterDesc d;
    d.section = format::COUNTER_SECTION_PROFILER;
    d.name = names[i];
    d.type = format::COUNTER_ULONG;
    d.unit = format::COUNTER_UNIT_TIME;
    d.variance = format::COUNTER_VARIANCE_MONOTONIC;
    d.index = i + 1;
    desc.counter_descs.push_back(d);
  }
  v.push_back(desc);
  Event val = ev(EventKind::counter_samples, 1860);
  const uint64_t values[] = {20'000'000, 10'000'000, 30'000'000, 10'000'000, 0};  // 100 ns units
  for (uint64_t i = 0; i < 5; ++i) val.counter_values.push_back(CounterValue{i + 1, format::COUNTER_ULONG, values[i], false, {}});
  v.push_back(val);
  v.push_back(ev(EventKind::heap_start, 1900));
  Event obj = ev(EventKind::heap_object, 1910);
  obj.obj = 0x4000, obj.ptr = 0xA10, obj.size = 32;
  v.push_back(obj);
  v.push_back(ev(EventKind::heap_end, 1950));
  call(EventKind::method_leave, 0x1000, 2000);
  FileHeader h = default_header();
  h.args = "mlpd:calls,alloc,sample";
  const std::vector<uint8_t> file = build_file(h, {{0x77, 1000, v}});
  auto in = Input::from_memory(file.data(), file.size());
  profile::Profile p;
  profile::build_profile(*in, p);
  return p;
}

views::report::Report section_report(const profile::Profile& p, bool has_thread = false, const char* thread = "") {
  views::ReportOptions o;
  o.top = 5;
  o.input_name = "sections.mlpd";
  o.has_thread = has_thread;
  o.thread = thread;
  views::report::Report r;
  std::string error;
  REQUIRE(views::report::build_report(p, o, r, error));
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("report sections: header", "[report]") {
  const auto p = section_profile();
  const auto r = section_report(p);
  CHECK(r.header.file == "sections.mlpd");
  CHECK(r.header.options == "mlpd:calls,alloc,sample");
  CHECK(r.header.duration_ns == 1000);  // 1000 (the first JIT event) .. 2000
  CHECK(r.header.threads == 1);
  CHECK(r.header.problems == 0);
  CHECK_FALSE(r.header.has_thread);
  const std::string text = views::report::render_text(r), json = views::report::render_json(r);
  CHECK(text.rfind("== sections.mlpd ==\n", 0) == 0);
  CHECK(has(text, "options:  mlpd:calls,alloc,sample\n"));
  CHECK(json.rfind("{\"header\":{\"file\":\"sections.mlpd\",", 0) == 0);
  CHECK(has(json, "\"duration_ns\":1000,"));
  CHECK(json.back() == '\n');
  // With --thread, the header names the thread and the process-wide sections are left out.
  const auto t = section_report(p, true, "0x77");
  CHECK(t.header.thread_note == "thread 0x77");
  CHECK_FALSE(t.gc);
  CHECK_FALSE(t.jit);
  CHECK_FALSE(t.counters);
  CHECK_FALSE(t.heapshots);
  CHECK(has(views::report::render_text(t), "thread:   thread 0x77\n"));
  views::report::Report none;
  std::string error;
  views::ReportOptions o;
  o.has_thread = true;
  o.thread = "nobody";
  CHECK_FALSE(views::report::build_report(p, o, none, error));
  CHECK(has(error, "no thread named or numbered 'nobody'"));
}

TEST_CASE("report sections: recorded (pause/resume)", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.recorded);
  REQUIRE(r.recorded->intervals.size() == 2);
  CHECK(r.recorded->intervals[0].ns == 250);  // 1000 .. 1250
  CHECK(r.recorded->intervals[1].ns == 250);  // 1750 .. 2000
  CHECK(r.recorded->recorded_ns == 500);
  CHECK(has(views::report::render_text(r), "== Recorded (pause/resume): 2 intervals, 500 ns of 1.000 us ==\n"));
  CHECK(has(views::report::render_json(r), ",\"recorded\":{\"recorded_ns\":500,\"intervals\":[{\"start_s\":0.000000,"));
}

TEST_CASE("report sections: CPU samples", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.cpu);
  CHECK(r.cpu->hits == 3);
  REQUIRE(r.cpu->by_self.size() == 1);
  CHECK(r.cpu->by_self[0].name == "N:Work ()");
  CHECK(r.cpu->by_self[0].s.samples_self == 3);
  REQUIRE(r.cpu->by_total.size() == 2);  // Main and Work, 3 each (by name at a tie)
  CHECK(r.cpu->by_total[0].name == "N:Main ()");
  CHECK(r.cpu->threads == std::vector<std::pair<std::string, uint64_t>>{{"thread 0x77", 3}});
  CHECK(r.cpu->groups.empty());
  CHECK(r.cpu->asked_hz.empty());
  const std::string text = views::report::render_text(r);
  CHECK(has(text, "== CPU samples: 3 hits ==\n"));
  CHECK(has(text, "  100.00        3  100.00        3  managed  N:Work ()\n"));
  CHECK(has(text, "  by thread: thread 0x77 3\n"));
  CHECK(has(views::report::render_json(r),
            ",\"samples\":{\"total\":3,\"methods\":[{\"name\":\"N:Work ()\",\"kind\":\"managed\",\"self\":3,\"total\":3,"
            "\"self_percent\":100.00,\"total_percent\":100.00}],"));
}

TEST_CASE("report sections: calls", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.calls);
  CHECK(r.calls->total == 2);
  CHECK(r.calls->unclosed == 0);
  REQUIRE(r.calls->by_total.size() == 2);
  CHECK(r.calls->by_total[0].name == "N:Main ()");
  CHECK(r.calls->by_total[0].s.total_ns == 900);
  CHECK(r.calls->by_total[0].s.self_ns == 600);
  CHECK(r.calls->by_self[0].name == "N:Main ()");
  REQUIRE(r.calls->hot_path.size() == 2);
  CHECK(r.calls->hot_path[1].name == "N:Work ()");
  CHECK(r.calls->hot_path[1].cs.total_ns == 300);
  const std::string text = views::report::render_text(r);
  CHECK(has(text, "== Calls: 2 ==\n"));
  CHECK(has(text, "      900 ns     600 ns            1  N:Main ()\n"));
  CHECK(has(text, "      300 ns     300 ns    N:Work ()\n"));  // the hot path, indented one level
  CHECK(has(views::report::render_json(r), ",\"hot_path\":[{\"name\":\"N:Main ()\",\"calls\":1,\"self_ns\":600,\"total_ns\":900,\"busy_ns\":900},"));
}

TEST_CASE("report sections: allocations", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.alloc);
  CHECK(r.alloc->objects == 2);
  CHECK(r.alloc->bytes == 96);
  CHECK(r.alloc->sample_interval == 0);
  REQUIRE(r.alloc->types.size() == 2);
  CHECK(r.alloc->types[0].name == "System.InvalidOperationException");
  CHECK(r.alloc->types[0].bytes == 64);
  REQUIRE(r.alloc->sites.size() == 1);
  CHECK(r.alloc->sites[0].name == "N:Work ()");
  CHECK(r.alloc->sites[0].count == 2);
  CHECK(r.alloc->sites[0].bytes == 96);
  const std::string text = views::report::render_text(r);
  CHECK(has(text, "== Allocations: 2 objects, 96 B (96 bytes) ==\n"));
  CHECK(has(text, "        32 B          1  System.String\n"));
  CHECK(has(views::report::render_json(r), ",\"sites\":[{\"name\":\"N:Work ()\",\"objects\":2,\"bytes\":96}]}"));
  // Types are the whole process's: not listed for one thread.
  const auto t = section_report(section_profile(), true, "0x77");
  REQUIRE(t.alloc);
  CHECK(t.alloc->types.empty());
  CHECK_FALSE(has(views::report::render_text(t), "System.String"));
}

TEST_CASE("report sections: exceptions", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.exceptions);
  CHECK(r.exceptions->throws == 1);
  CHECK(r.exceptions->clauses == 1);
  REQUIRE(r.exceptions->types.size() == 1);
  CHECK(r.exceptions->types[0].name == "System.InvalidOperationException");  // from the recent allocation
  REQUIRE(r.exceptions->sites.size() == 1);
  CHECK(r.exceptions->sites[0].name == "N:Work ()");
  CHECK(has(views::report::render_text(r), "== Exceptions: 1 thrown, 1 clauses run ==\n"));
  CHECK(has(views::report::render_json(r), ",\"exceptions\":{\"throws\":1,\"clauses\":1,\"types\":[{\"name\":"
                                           "\"System.InvalidOperationException\",\"throws\":1}],"));
}

TEST_CASE("report sections: monitor contention", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.monitor);
  CHECK(r.monitor->contentions == 1);
  CHECK(r.monitor->acquired == 1);
  CHECK(r.monitor->failed == 0);
  CHECK(r.monitor->wait_ns == 50);
  REQUIRE(r.monitor->sites.size() == 1);
  CHECK(r.monitor->sites[0].name == "N:Work ()");
  CHECK(has(views::report::render_text(r), "== Monitor contention: 1 contentions, 1 acquired after waiting, 0 failed; "
                                           "waited 50 ns ==\n"));
  CHECK(has(views::report::render_json(r), ",\"monitor\":{\"contentions\":1,\"acquired\":1,\"failed\":0,\"wait_ns\":50,"));
}

TEST_CASE("report sections: GC", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.gc);
  CHECK(r.gc->collections == 1);
  REQUIRE(r.gc->generations.size() >= 2);
  CHECK(r.gc->generations[1] == 1);
  CHECK(r.gc->pauses == 1);
  CHECK(r.gc->total_ns == 100);
  CHECK(r.gc->max_ns == 100);
  const std::string text = views::report::render_text(r);
  CHECK(has(text, "== GC: 1 collections (1 gen1), 0 heap resizes ==\n"));
  CHECK(has(text, "  pauses: 1, total 100 ns, p50 100 ns, p99 100 ns, max 100 ns\n"));
  CHECK(has(views::report::render_json(r), "\"resizes\":0,\"pauses\":{\"count\":1,\"total_ns\":100,\"p50_ns\":100,"));
}

TEST_CASE("report sections: JIT", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.jit);
  CHECK(r.jit->methods == 2);
  CHECK(r.jit->code_bytes == 0x180);
  REQUIRE(r.jit->largest.size() == 2);
  CHECK(r.jit->largest[0].name == "N:Main ()");
  CHECK(r.jit->largest[0].s.jit_code_bytes == 0x100);
  CHECK(has(views::report::render_text(r), "== JIT: 2 methods compiled, 384 B of code, 0 helpers/trampolines ==\n"));
  CHECK(has(views::report::render_json(r), ",\"largest\":[{\"name\":\"N:Main ()\",\"code_bytes\":256},"));
}

TEST_CASE("report sections: counters", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.counters);
  REQUIRE(r.counters->values.size() == 5);
  CHECK(r.counters->values[0].name == "CPU time (system)");  // by name
  CHECK(r.counters->values[2].name == "Idle");
  const std::string text = views::report::render_text(r);
  CHECK(has(text, "== Counters (last values): 5 ==\n"));
  CHECK(has(text, "  CPU time (user) = 30000000\n"));
  CHECK_FALSE(has(text, "  Idle = "));  // zero: left out of the text
  CHECK(has(text, "  ... 1 more (zero, or beyond --top; --json lists all)\n"));
  CHECK(has(views::report::render_json(r), "{\"name\":\"Idle\",\"value\":0,\"samples\":1}"));
}

TEST_CASE("report sections: CPU time by thread", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.cpu_threads);
  CHECK(r.cpu_threads->process_user_s == 3.0);
  CHECK(r.cpu_threads->process_system_s == 1.0);
  REQUIRE(r.cpu_threads->threads.size() == 1);
  CHECK(r.cpu_threads->threads[0].name == "main [123]");
  CHECK(r.cpu_threads->threads[0].user_s == 2.0);
  CHECK(r.cpu_threads->threads[0].system_s == 1.0);
  const std::string text = views::report::render_text(r);
  CHECK(has(text, "== CPU time by thread (counters): process 4.000 s (user 3.000 s, system 1.000 s) ==\n"));
  CHECK(has(text, "    3.000 s   2.000 s   1.000 s  75.0%  main [123]\n"));
  CHECK(has(views::report::render_json(r), ",\"cpu_threads\":{\"process_user_s\":3.000,\"process_system_s\":1.000,"
                                           "\"threads\":[{\"name\":\"main [123]\",\"user_s\":2.000,\"system_s\":1.000}]}"));
}

TEST_CASE("report sections: heapshots", "[report]") {
  const auto r = section_report(section_profile());
  REQUIRE(r.heapshots);
  REQUIRE(r.heapshots->list.size() == 1);
  CHECK(r.heapshots->list[0].time_ns == 900);  // 1900 - 1000
  CHECK(r.heapshots->list[0].objects == 1);
  CHECK(r.heapshots->list[0].bytes == 32);
  CHECK(r.heapshots->list[0].complete);
  CHECK(has(views::report::render_text(r), "  heapshot 0 at 0.000 s: 1 objects, 32 B\n"));
  CHECK(has(views::report::render_json(r), ",\"heapshots\":{\"count\":1,\"list\":[{\"name\":\"heapshot 0\",\"time_ns\":900,"
                                           "\"objects\":1,\"bytes\":32,\"complete\":true}]}}\n"));
}

TEST_CASE("report sections: held by (set by the CLI), text and JSON the same rows", "[report]") {
  auto r = section_report(section_profile());
  const std::string before = views::report::render_text(r), before_json = views::report::render_json(r);
  views::report::HeldBySection h;
  h.index = 2;
  h.objects = 10;
  h.bytes = 400;
  h.unreached_objects = 1;
  h.unreached_bytes = 16;
  h.classes.push_back({"Cache", 1, 40, 320, true, "static", "Static Fields: P"});
  h.classes.push_back({"Bad\nName", 2, 32, 32, false, "", ""});
  r.held_by = h;
  const std::string text = views::report::render_text(r), json = views::report::render_json(r);
  // The text: the whole report as before, then the section (after the report's closing blank line).
  CHECK(text == before + "== Held by: heapshot 2, the last (mlpd heapshots --retained, --paths CLASS) ==\n"
                         "      retained    objects  class  <- held by (the root of its largest instance)\n"
                         "           320          1  Cache  <- static \"Static Fields: P\"\n"
                         "            32          2  Bad\\nName\n"
                         "  (unreached: 1 objects, 16 bytes)\n");
  CHECK(json == before_json.substr(0, before_json.size() - 2) +
                    ",\"held_by\":{\"index\":2,\"objects\":10,\"bytes\":400,\"unreached\":{\"objects\":1,\"bytes\":16},"
                    "\"classes\":[{\"name\":\"Cache\",\"objects\":1,\"shallow\":40,\"retained\":320,"
                    "\"root\":{\"kind\":\"static\",\"name\":\"Static Fields: P\"}},"
                    "{\"name\":\"Bad\\nName\",\"objects\":2,\"shallow\":32,\"retained\":32,\"root\":null}]}}\n");
  // Too large for the memory budget: the message, nothing else.
  r.held_by = views::report::HeldBySection{};
  r.held_by->index = 3;
  r.held_by->error = "heapshot 3 is too large for the memory budget: x";
  CHECK(views::report::render_text(r) ==
        before + "== Held by: heapshot 3, the last (mlpd heapshots --retained, --paths CLASS) ==\n"
                 "  heapshot 3 is too large for the memory budget: x\n");
  CHECK(has(views::report::render_json(r),
            ",\"held_by\":{\"index\":3,\"error\":\"heapshot 3 is too large for the memory budget: x\"}}\n"));
}

TEST_CASE("report sections: write_report is build_report then one renderer", "[report]") {
  const auto p = section_profile();
  for (bool json : {false, true}) {
    views::ReportOptions o;
    o.top = 5;
    o.json = json;
    o.input_name = "sections.mlpd";
    std::FILE* f = std::tmpfile();
    std::string error;
    REQUIRE(views::write_report(p, o, f, error));
    std::rewind(f);
    std::string written;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) written.append(buf, n);
    std::fclose(f);
    const auto r = section_report(p);
    CHECK(written == (json ? views::report::render_json(r) : views::report::render_text(r)));
  }
}

// ---- Issue 33: names never cut mid-token, threads counted as verify counts them, the hot path by busy
// time, a sampling file whose events are mostly Mono's defaults ----

TEST_CASE("elide_name: group and abbreviated lines never cut a name inside a token", "[report]") {
  using views::report::elide_name;
  CHECK(elide_name("N:Short", 48) == "N:Short");
  // The line that cut "describe_method[abi:c...": the ABI tag goes, the name stays whole.
  CHECK(elide_name("mlpd::cli::(anonymous)::describe_method[abi:cxx11]", 48) == "mlpd::cli::(anonymous)::describe_method");
  const std::string longer = "mlpd::views::report::detail::render_everything_now::describe_method[abi:cxx11]";
  const std::string e = elide_name(longer, 48);
  CHECK(e.size() <= 48);
  CHECK(e.find("...") != std::string::npos);
  CHECK(e.size() >= 15);
  CHECK(e.substr(e.size() - 15) == "describe_method");  // the end is kept
  // Every piece around the dots is a whole token sequence of the name: its start and its end.
  const size_t dots = e.find("...");
  CHECK(longer.rfind(e.substr(0, dots), 0) == 0);
  const std::string tail = e.substr(dots + 3), plain = "mlpd::views::report::detail::render_everything_now::describe_method";
  CHECK(plain.substr(plain.size() - tail.size()) == tail);
  auto token = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  CHECK((dots == 0 || !token(e[dots - 1]) || !token(plain[dots])));  // the head ends at a boundary
  const size_t from = plain.size() - tail.size();
  CHECK((from == 0 || !token(plain[from - 1]) || !token(plain[from])));  // the tail starts at one
  // A last token longer than the room is kept whole (the line is longer rather than cut).
  const std::string huge = "ns::" + std::string(60, 'x');
  CHECK(elide_name(huge, 48) == "..." + std::string(60, 'x'));
  // Managed names: "Namespace.Class:Method" cut at '.', ':' boundaries only.
  const std::string managed = "System.Collections.Generic.Dictionary`2/Enumerator:MoveNextWithSomething";
  const std::string m = elide_name(managed, 40);
  CHECK(m.size() <= 40);
  CHECK(m.find("MoveNextWithSomething") != std::string::npos);
  const size_t mdots = m.find("...");
  REQUIRE(mdots != std::string::npos);
  const std::string mhead = m.substr(0, mdots), mtail = m.substr(mdots + 3);
  CHECK(managed.rfind(mhead, 0) == 0);
  CHECK((mhead.empty() || !token(mhead.back()) || !token(managed[mhead.size()])));
  CHECK(managed.substr(managed.size() - mtail.size()) == mtail);
  CHECK((!token(mtail.front()) || !token(managed[managed.size() - mtail.size() - 1])));
}

namespace {

profile::Profile profile_of(const FileHeader& h, const std::vector<test::ThreadBuffer>& bufs) {
  const std::vector<uint8_t> file = build_file(h, bufs);
  auto in = Input::from_memory(file.data(), file.size());
  profile::Profile p;
  profile::build_profile(*in, p);
  return p;
}

Event named(EventKind k, uint64_t t, uint64_t m, const char* name) {
  Event e = ev(k, t);
  e.method = m, e.ptr = m * 16, e.size = 0x10, e.name = name;
  return e;
}

Event call_ev(EventKind k, uint64_t m, uint64_t t) {
  Event e = ev(k, t);
  e.method = m;
  return e;
}

}  // namespace

TEST_CASE("report header: threads, and those writing events (what verify counts)", "[report]") {
  // Thread 0x77 writes a buffer; its events name 0x88 (a sample hit's thread) and 0x99 (a name).
  std::vector<Event> v;
  v.push_back(named(EventKind::method_jit, 1000, 0x100, "N:Main ()"));
  Event hit = ev(EventKind::sample_hit, 1100);
  hit.ptr = 0x88;
  hit.frames = {0x1000};
  v.push_back(hit);
  Event name = ev(EventKind::thread_name, 1200);
  name.ptr = 0x99, name.name = "worker";
  v.push_back(name);
  std::vector<Event> w;
  w.push_back(call_ev(EventKind::method_enter, 0x100, 1300));
  w.push_back(call_ev(EventKind::method_leave, 0x100, 1400));
  const auto p = profile_of(default_header(), {{0x77, 1000, v}, {0x99, 1000, w}});
  const auto r = section_report(p);
  CHECK(r.header.threads == 3);
  CHECK(r.header.threads_writing == 2);
  CHECK(has(views::report::render_text(r), " events, 3 threads (2 writing events)\n"));
  CHECK(has(views::report::render_json(r), ",\"threads\":3,\"threads_writing\":2,"));
}

TEST_CASE("calls hot path: the busy thread, not the one that sleeps", "[report]") {
  // Thread 0x77: Main sleeps 10 000 ns in Thread.Sleep. Thread 0x88: Worker -> Handle, busy 3 000 ns.
  std::vector<Event> a, b;
  a.push_back(named(EventKind::method_jit, 1000, 0x100, "Server:Main (string[])"));
  a.push_back(named(EventKind::method_jit, 1000, 0x200, "System.Threading.Thread:Sleep (int)"));
  a.push_back(named(EventKind::method_jit, 1000, 0x300, "Server:Worker ()"));
  a.push_back(named(EventKind::method_jit, 1000, 0x400, "Server:Handle (Request)"));
  a.push_back(call_ev(EventKind::method_enter, 0x100, 1000));
  a.push_back(call_ev(EventKind::method_enter, 0x200, 1100));
  a.push_back(call_ev(EventKind::method_leave, 0x200, 11100));
  a.push_back(call_ev(EventKind::method_leave, 0x100, 11200));
  b.push_back(call_ev(EventKind::method_enter, 0x300, 2000));
  b.push_back(call_ev(EventKind::method_enter, 0x400, 2100));
  b.push_back(call_ev(EventKind::method_leave, 0x400, 5100));
  b.push_back(call_ev(EventKind::method_enter, 0x200, 5200));  // the worker naps a little too
  b.push_back(call_ev(EventKind::method_leave, 0x200, 5700));
  b.push_back(call_ev(EventKind::method_leave, 0x300, 5800));
  const auto p = profile_of(default_header(), {{0x77, 1000, a}, {0x88, 2000, b}});
  const auto r = section_report(p);
  REQUIRE(r.calls);
  REQUIRE(r.calls->hot_path.size() == 2);
  CHECK(r.calls->hot_path[0].name == "Server:Worker ()");
  CHECK(r.calls->hot_path[0].cs.total_ns == 3800);
  CHECK(r.calls->hot_path[0].busy_ns == 3300);
  CHECK(r.calls->hot_path[1].name == "Server:Handle (Request)");
  CHECK(r.calls->hot_path[1].busy_ns == 3000);
  CHECK(views::report::waiting_method("System.Threading.Thread:Sleep (int)"));
  CHECK(views::report::waiting_method("System.Threading.Tasks.Task`1:Wait ()"));
  CHECK(views::report::waiting_method("(wrapper managed-to-native) System.Threading.Thread:SleepInternal (int)"));
  CHECK_FALSE(views::report::waiting_method("(wrapper runtime-invoke) <Module>:runtime_invoke_int_object (object)"));
  CHECK(views::report::waiting_method("System.Net.HttpListener:GetContext ()"));
  CHECK_FALSE(views::report::waiting_method("Server:Sleep ()"));
  CHECK_FALSE(views::report::waiting_method("System.Threading.Thread:Start ()"));
  // Only waits: ranked by inclusive time as before (Main, then Sleep).
  std::vector<Event> c;
  c.push_back(named(EventKind::method_jit, 1000, 0x100, "Server:Main (string[])"));
  c.push_back(named(EventKind::method_jit, 1000, 0x200, "System.Threading.Thread:Sleep (int)"));
  c.push_back(call_ev(EventKind::method_enter, 0x200, 1100));
  c.push_back(call_ev(EventKind::method_leave, 0x200, 2100));
  const auto q = section_report(profile_of(default_header(), {{0x77, 1000, c}}));
  REQUIRE(q.calls);
  REQUIRE(q.calls->hot_path.size() == 1);
  CHECK(q.calls->hot_path[0].name == "System.Threading.Thread:Sleep (int)");
}

TEST_CASE("a sampling file whose events are mostly Mono's defaults says so", "[report]") {
  auto file = [](const char* args, int clauses, int hits) {
    std::vector<Event> v;
    v.push_back(named(EventKind::method_jit, 1000, 0x100, "N:Work ()"));
    for (int i = 0; i < clauses; ++i) {
      Event c = ev(EventKind::exception_clause, 1100 + static_cast<uint64_t>(i));
      c.code = format::CLAUSE_CATCH, c.method = 0x100, c.obj = 0x2000;
      v.push_back(c);
    }
    for (int i = 0; i < hits; ++i) {
      Event h = ev(EventKind::sample_hit, 2000 + static_cast<uint64_t>(i));
      h.ptr = 0x77;
      h.frames = {0x1000};
      v.push_back(h);
    }
    FileHeader h = default_header();
    h.args = args;
    return section_report(profile_of(h, {{0x77, 1000, v}}));
  };
  const auto noisy = file("mlpd:sample", 50, 3);
  CHECK(noisy.header.default_events == 50);
  const std::string text = views::report::render_text(noisy);
  CHECK(has(text, "note:     'sample' without 'nodefaults' first also recorded Mono's default events: 50 exception "
                  "throws and clauses beside 3 samples; 'nodefaults,sample' records the samples alone\n"));
  CHECK(has(views::report::render_json(noisy), ",\"default_events\":50"));
  CHECK(file("mlpd:nodefaults,sample", 50, 3).header.default_events == 0);     // asked for samples alone
  CHECK(file("mlpd:sample,exception", 50, 3).header.default_events == 0);      // asked for exceptions too
  CHECK(file("mlpd:sample", 3, 50).header.default_events == 0);                // samples dominate
  CHECK(file("mlpd:alloc", 50, 0).header.default_events == 0);                 // no sampling asked
  CHECK(!has(views::report::render_text(file("mlpd:sample", 3, 50)), "note:"));
}
