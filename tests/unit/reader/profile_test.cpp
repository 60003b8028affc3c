// The profile model (reader/profile) on hand-built files: call-tree times with recursion, exception
// leaves, unwinding and calls left open at the end; names resolved after the pass; sample stacks
// merged leaf to root; backtrace order; weights and the collapsed export.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/input.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"

using namespace mlpd;
using namespace mlpd::profile;
using namespace mlpd::test;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000, kC = 0x3000;

Event jit(uint64_t method, uint64_t code, uint64_t size, const std::string& name, uint64_t t) {
  Event e;
  e.kind = EventKind::method_jit;
  e.time = t;
  e.method = method;
  e.ptr = code;
  e.size = size;
  e.name = name;
  return e;
}

Event call(EventKind k, uint64_t method, uint64_t t) {
  Event e;
  e.kind = k;
  e.time = t;
  e.method = method;
  return e;
}
Event enter(uint64_t m, uint64_t t) { return call(EventKind::method_enter, m, t); }
Event leave(uint64_t m, uint64_t t) { return call(EventKind::method_leave, m, t); }
Event exc_leave(uint64_t m, uint64_t t) { return call(EventKind::method_exc_leave, m, t); }

struct Recorder final : Listener {
  void on_event(const TimelineEvent& e) override {
    if (e.kind == TimelineKind::leave) leave_codes.push_back(e.code);
    if (e.kind == TimelineKind::enter) ++enters;
  }
  std::vector<int> leave_codes;
  int enters = 0;
};

Profile build(const std::vector<ThreadBuffer>& buffers, Listener* l = nullptr) {
  const std::vector<uint8_t> file = build_file(buffers);
  auto input = Input::from_memory(file.data(), file.size());
  Profile p;
  BuildOptions o;
  o.listener = l;
  build_profile(*input, p, o);
  return p;
}

const MethodStat& stat_of(const Profile& p, const std::string& name) {
  for (FrameId f = 0; f < p.frames().size(); ++f)
    if (p.frames()[f].name == name) return p.methods()[f];
  FAIL("no frame named " << name);
  static MethodStat none;
  return none;
}

std::vector<Event> names() {
  return {jit(kA, 0x10000, 0x100, "N:A ()", 1), jit(kB, 0x20000, 0x100, "N:B ()", 1),
          jit(kC, 0x30000, 0x100, "N:C ()", 1)};
}

}  // namespace

TEST_CASE("recursion is counted once in a method's inclusive time", "[profile]") {
  auto ev = names();
  for (const Event& e : {enter(kA, 100), enter(kA, 200), enter(kB, 300), leave(kB, 400), leave(kA, 500),
                         leave(kA, 1000)})
    ev.push_back(e);
  Recorder r;
  const Profile p = build({{0x77, 0, ev}}, &r);
  CHECK(p.problems().empty());
  CHECK(p.call_count() == 3);
  const MethodStat& a = stat_of(p, "N:A ()");
  CHECK(a.calls == 2);
  CHECK(a.total_ns == 900);  // not 900 + 300
  CHECK(a.self_ns == 800);   // 900 - B's 100
  const MethodStat& b = stat_of(p, "N:B ()");
  CHECK(b.calls == 1);
  CHECK(b.total_ns == 100);
  CHECK(p.total(What::calls) == 900);  // self times sum to the outermost call's duration
  CHECK(r.enters == 3);
  CHECK(r.leave_codes == std::vector<int>{0, 0, 0});
  // The collapsed export has the three call paths, weighted by self time.
  const auto stacks = views::collapse(p, What::calls, false);
  REQUIRE(stacks.size() == 3);
  CHECK(stacks[0].stack == "N:A ()");
  CHECK(stacks[0].weight == 600);
  CHECK(stacks[1].stack == "N:A ();N:A ()");
  CHECK(stacks[1].weight == 200);
  CHECK(stacks[2].stack == "N:A ();N:A ();N:B ()");
  CHECK(stacks[2].kinds == "mmm");
}

TEST_CASE("exception leaves, unwinding and calls open at the end", "[profile]") {
  auto ev = names();
  // A calls B calls C; C is unwound when B leaves by exception; A never leaves.
  for (const Event& e : {enter(kA, 0), enter(kB, 10), enter(kC, 20), exc_leave(kB, 50), leave(kC, 60)}) ev.push_back(e);
  Event alloc;
  alloc.kind = EventKind::alloc;
  alloc.time = 70;
  alloc.ptr = 0x5000;
  alloc.obj = 0x8000;
  alloc.size = 32;
  ev.push_back(alloc);
  Recorder r;
  const Profile p = build({{0x77, 0, ev}}, &r);
  CHECK(stat_of(p, "N:C ()").total_ns == 30);  // unwound at 50
  CHECK(stat_of(p, "N:B ()").total_ns == 40);
  CHECK(stat_of(p, "N:A ()").total_ns == 70);  // closed at the thread's last event
  CHECK(p.unclosed_calls() == 1);
  CHECK(p.unmatched_leaves() == 1);  // the leave of C after it was unwound
  CHECK(r.leave_codes == std::vector<int>{2, 1, 3});
  // The allocation happened inside A (the only open call): its stack is A's call path.
  const auto stacks = views::collapse(p, What::alloc_bytes, false);
  REQUIRE(stacks.size() == 1);
  CHECK(stacks[0].stack == "N:A ()");
  CHECK(stacks[0].weight == 32);
}

TEST_CASE("names are resolved after the pass; undescribed methods keep their weight", "[profile]") {
  std::vector<Event> ev{enter(kA, 10), enter(0xdead0, 20), leave(0xdead0, 30), leave(kA, 40)};
  ev.push_back(jit(kA, 0x10000, 0x100, "N:Late ()", 50));  // described after use (Mono does this)
  const Profile p = build({{0x77, 0, ev}});
  CHECK(stat_of(p, "N:Late ()").calls == 1);
  CHECK(stat_of(p, "[unknown method 0xdead0]").calls == 1);
  CHECK(stat_of(p, "[unknown method 0xdead0]").total_ns == 10);
}

TEST_CASE("sample stacks: native frames leaf first, then managed frames innermost first", "[profile]") {
  auto ev = names();
  Event usym;
  usym.kind = EventKind::sample_usym;
  usym.ptr = 0x7000;
  usym.size = 0x100;
  usym.name = "native_leaf";
  ev.push_back(usym);
  Event hit;
  hit.kind = EventKind::sample_hit;
  hit.time = 100;
  hit.ptr = 0x99;  // the sampled thread, not the buffer's
  hit.ips = {0x7010, 0xabcdef00};  // a symbol, then an address nothing describes
  hit.frames = {kB, kA};           // B called by A
  ev.push_back(hit);
  Event hit2 = hit;                // Mono's form: one IP inside the innermost managed method
  hit2.ips = {0x20010};
  ev.push_back(hit2);
  const Profile p = build({{0x77, 0, ev}});
  CHECK(p.sample_hits() == 2);
  const auto stacks = views::collapse(p, What::cpu, true);
  REQUIRE(stacks.size() == 2);
  CHECK(stacks[0].stack == "thread 0x99;N:A ();N:B ()");
  CHECK(stacks[1].stack == "thread 0x99;N:A ();N:B ();[unknown native 0xabcdef00];native_leaf");
  CHECK(stacks[1].kinds == "tmmnn");
  CHECK(stat_of(p, "N:B ()").samples_total == 2);
  CHECK(stat_of(p, "N:B ()").samples_self == 1);
  CHECK(stat_of(p, "native_leaf").samples_self == 1);
}

TEST_CASE("allocation backtraces are outermost first; --what weights sum to the totals", "[profile]") {
  auto ev = names();
  for (int i = 0; i < 3; ++i) {
    Event a;
    a.kind = EventKind::alloc;
    a.time = 10 + static_cast<uint64_t>(i);
    a.ptr = 0x5000;
    a.obj = 0x8000 + 8 * static_cast<uint64_t>(i);
    a.size = 24;
    a.has_backtrace = true;
    a.backtrace = i == 2 ? std::vector<uint64_t>{kA} : std::vector<uint64_t>{kA, kC};
    ev.push_back(a);
  }
  const Profile p = build({{0x77, 0, ev}});
  CHECK(p.alloc_objects() == 3);
  CHECK(p.total(What::alloc) == 3);
  CHECK(p.total(What::alloc_bytes) == 72);
  CHECK_FALSE(p.has(What::cpu));
  CHECK(views::missing_what_error(p, What::cpu).find("'sample'") != std::string::npos);
  const auto stacks = views::collapse(p, What::alloc, false);
  REQUIRE(stacks.size() == 2);
  CHECK(stacks[0].stack == "N:A ()");
  CHECK(stacks[0].weight == 1);
  CHECK(stacks[1].stack == "N:A ();N:C ()");
  CHECK(stacks[1].weight == 2);
  CHECK(stat_of(p, "N:C ()").alloc_bytes == 48);
}
