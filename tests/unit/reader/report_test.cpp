// The text report's CPU ranking (issue 22.2): waits, the runtime's unnamed code and the profiler's own
// frames each on one group line; the rate asked for and the rate delivered in the heading.
#include "mlpd_catch.h"

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
