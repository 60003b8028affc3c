// The profile model (reader/profile) on hand-built files: call-tree times with recursion, exception
// leaves, unwinding and calls left open at the end; names resolved after the pass; sample stacks
// merged leaf to root; backtrace order; weights and the collapsed export.
#include "mlpd_catch.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "event_gen.h"
#include "event_makers.h"
#include "mlpd/input.h"
#include "mlpd/live.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"

using namespace mlpd;
using namespace mlpd::profile;
using namespace mlpd::test;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000, kC = 0x3000;

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

TEST_CASE("names are resolved after the pass - undescribed methods keep their weight", "[profile]") {
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

TEST_CASE("native frames of a runtime are the runtime's, by the per-runtime table", "[profile]") {
  // issue 34: Mono's symbol prefixes and libraries, CoreCLR's libraries (libcoreclr.so, libclrjit.so);
  // anything else is native code.
  const std::vector<std::string> symbols = {
      "mono_jit_runtime_invoke",                 // Mono: a symbol prefix
      "?? (libmonosgen-2.0.so.1+0x10)",          // Mono: its library
      "MethodDesc::DoPrestub (libcoreclr.so+0x100)",  // CoreCLR: its runtime
      "?? (libclrjit.so+0x20)",                  // CoreCLR: its JIT
      "memcpy (libc.so.6+0x30)",                 // neither
  };
  auto ev = names();
  std::vector<uint64_t> ips;
  for (size_t i = 0; i < symbols.size(); ++i) {
    Event usym;
    usym.kind = EventKind::sample_usym;
    usym.ptr = 0x7000 + i * 0x100;
    usym.size = 0x100;
    usym.name = symbols[i];
    ev.push_back(usym);
    Event hit;
    hit.kind = EventKind::sample_hit;
    hit.time = 100 + i;
    hit.ptr = 0x99;
    hit.ips = {usym.ptr + 8};
    hit.frames = {kA};
    ev.push_back(hit);
  }
  const Profile p = build({{0x77, 0, ev}});
  const auto stacks = views::collapse(p, What::cpu, true);
  REQUIRE(stacks.size() == symbols.size());
  for (const auto& s : stacks) {
    const bool other = s.stack.find("memcpy") != std::string::npos;
    INFO(s.stack);
    CHECK(s.kinds == (other ? "tmn" : "tmr"));
  }
}

TEST_CASE("allocation backtraces are outermost first - --what weights sum to the totals", "[profile]") {
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

namespace {

// The report of a profile as text (views::write_report), to compare two models whole.
std::string report_text(const Profile& p) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  views::ReportOptions ro;
  std::string error;
  views::write_report(p, ro, f, error);
  std::fclose(f);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

// A file of several buffers on two threads, with calls open across buffers and names described late.
std::vector<uint8_t> growing_file(int calls_per_buffer = 50) {
  std::vector<ThreadBuffer> bufs;
  uint64_t t = 100;
  for (int i = 0; i < 12; ++i) {
    std::vector<Event> ev;
    if (i == 0) ev = {jit(kA, 0x10000, 0x100, "N:A ()", 1)};
    if (i == 7) ev = {jit(kB, 0x20000, 0x100, "N:B ()", t), jit(kC, 0x30000, 0x100, "N:C ()", t)};
    for (int k = 0; k < calls_per_buffer; ++k) {
      ev.push_back(enter(kA, t += 3));
      ev.push_back(enter(kB, t += 5));
      if (k % 7 == 0) ev.push_back(enter(kC, t += 1));
      if (k % 7 == 0) ev.push_back(leave(kC, t += 11));
      ev.push_back(leave(kB, t += 2));
      ev.push_back(leave(kA, t += 1));
    }
    if (i % 3 == 1) ev.push_back(enter(kA, t += 1));  // open at the buffer's end, closed in the next
    if (i % 3 == 2) ev.push_back(leave(kA, t += 40));
    bufs.push_back({i % 2 ? 0x77u : 0x88u, 0, ev});
  }
  return build_file(bufs);
}

Profile incremental(const std::vector<uint8_t>& file, size_t chunk, size_t cut = SIZE_MAX, bool* stayed_small = nullptr) {
  const size_t end = std::min(cut, file.size());
  LiveFile live;
  IncrementalBuilder b;
  Profile snap;
  uint64_t held = 0;
  for (size_t pos = 0; pos < end; pos += chunk) {
    live.add(file.data() + pos, std::min(chunk, end - pos));
    live.feed(b);
    held = std::max(held, live.held());
    b.snapshot(snap);  // a snapshot in between must not change what comes after
  }
  live.finish(b);
  b.snapshot(snap);
  if (stayed_small) *stayed_small = held < 64 * 1024 + chunk;
  return snap;
}

}  // namespace

TEST_CASE("incremental: any chunking gives the model build_profile gives", "[profile][live]") {
  const std::vector<uint8_t> file = growing_file();
  auto input = Input::from_memory(file.data(), file.size());
  Profile whole;
  build_profile(*input, whole);
  REQUIRE(whole.problems().empty());
  REQUIRE(whole.call_count() > 1000);
  const std::string expected = report_text(whole);
  for (const size_t chunk : {size_t{1}, size_t{7}, size_t{48}, size_t{1000}, size_t{1} << 20}) {
    INFO("chunk " << chunk);
    bool small = false;
    const Profile p = incremental(file, chunk, SIZE_MAX, &small);
    CHECK(p.problems().empty());
    CHECK(p.summary().events == whole.summary().events);
    CHECK(p.summary().buffers == whole.summary().buffers);
    CHECK(p.call_count() == whole.call_count());
    CHECK(p.unclosed_calls() == whole.unclosed_calls());
    CHECK(stat_of(p, "N:C ()").total_ns == stat_of(whole, "N:C ()").total_ns);
    CHECK(report_text(p) == expected);
    CHECK(small);
  }
  // gzip, one member per few buffers (the agent's zip writes one per flush round), fed in pieces.
  std::vector<uint8_t> gz;
  const size_t third = file.size() / 3;
  for (size_t from = 0; from < file.size(); from += third) {
    const std::vector<uint8_t> part(file.begin() + static_cast<ptrdiff_t>(from),
                                    file.begin() + static_cast<ptrdiff_t>(std::min(file.size(), from + third)));
    const std::vector<uint8_t> member = gzip(part);
    gz.insert(gz.end(), member.begin(), member.end());
  }
  const Profile zp = incremental(gz, 333);
  CHECK(zp.problems().empty());
  CHECK(report_text(zp) == expected);
  // A member that inflates to far more than one output chunk, given at once.
  const std::vector<uint8_t> big = growing_file(20000);
  REQUIRE(big.size() > 1000000);
  auto big_in = Input::from_memory(big.data(), big.size());
  Profile big_whole;
  build_profile(*big_in, big_whole);
  const Profile bz = incremental(gzip(big), big.size());
  CHECK(bz.problems().empty());
  CHECK(bz.summary().events == big_whole.summary().events);
  CHECK(report_text(bz) == report_text(big_whole));
}

TEST_CASE("incremental: a file cut inside a buffer ends with the problem build_profile reports", "[profile][live]") {
  const std::vector<uint8_t> file = growing_file();
  const size_t cut = file.size() - 10;
  auto input = Input::from_memory(file.data(), cut);
  Profile whole;
  build_profile(*input, whole);
  REQUIRE(whole.problems().size() == 1);
  const Profile p = incremental(file, 500, cut);
  REQUIRE(p.problems().size() == 1);
  CHECK(p.problems()[0].offset == whole.problems()[0].offset);
  CHECK(p.problems()[0].buffer == whole.problems()[0].buffer);
  CHECK(p.problems()[0].message == whole.problems()[0].message);
  CHECK(p.call_count() == whole.call_count());
  // Not an mlpd file: the header problem, and nothing more is read.
  std::vector<uint8_t> junk(200, 'x');
  const Profile j = incremental(junk, 50);
  REQUIRE(j.problem_count() == 1);
  CHECK(j.problems()[0].message.rfind("not an mlpd file", 0) == 0);
}
