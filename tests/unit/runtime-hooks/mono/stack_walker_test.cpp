// The stack walker's entry points (runtime-hooks/src/mono/stack_walker.cpp; stack_walker_off.cpp on
// machines without our walker): init, collect and summary, with Mono's walk a fake
// (mono_stack_walk_no_il answering the frames the test sets). The fast walk itself is tested on
// synthetic stacks in walker/; here collect() runs on the test's own (native) stack, where our walker
// can find no managed frame: every backtrace must be exactly Mono's, whether our walker is on or off,
// and be counted as Mono's in the summary.
#include "mlpd_catch.h"

#include <string>
#include <vector>

#include "mlpd/format.h"
#include "mlpd/hooks/stack_walker.h"
#include "mono/layouts.h"
#include "mono/v6_8/layouts.h"
#include "mono_heap_fakes.h"
#include "optional.h"

using namespace mlpd;
using namespace mlpd::hooks;
using namespace mlpd::test::monofake;

namespace {

std::vector<uint64_t> as_ints(MonoMethod* const* frames, uint32_t n) {
  std::vector<uint64_t> r;
  for (uint32_t i = 0; i < n; ++i) r.push_back(reinterpret_cast<uint64_t>(frames[i]));
  return r;
}

// "mlpd: backtraces: F by our stack walker, S by mono_stack_walk_no_il (...: a/b/c/d; ...": F, S, a.
struct Counts {
  uint64_t ours = 0, monos = 0, no_bottom = 0;
};
Counts parse(const std::string& s) {
  Counts c;
  const std::string head = "mlpd: backtraces: ";
  REQUIRE(s.rfind(head, 0) == 0);
  size_t at = head.size();
  c.ours = std::stoull(s.substr(at));
  at = s.find(" by our stack walker, ", at);
  REQUIRE(at != std::string::npos);
  c.monos = std::stoull(s.substr(at + 22));
  at = s.find("context: ", at);
  REQUIRE(at != std::string::npos);
  c.no_bottom = std::stoull(s.substr(at + 9));
  return c;
}

// Puts the walker back off (other tests' callbacks may take backtraces) and the layouts as found.
struct WalkerOff {
  const mono_layouts::MonoLayouts* saved_layouts = mono_layouts::g_selected;
  MonoOptional saved_optional = mono_optional;
  ~WalkerOff() {
    mono_layouts::select(saved_layouts);
    mono_optional = saved_optional;
    walker::init(false, false, false);
  }
};

}  // namespace

TEST_CASE("stack walker: off, every backtrace is Mono's walk, bounded by max", "[hooks][walker]") {
  MonoRoom room;
  WalkerOff off;
  walker::init(false, false, false);
  world().mono_frames = {0x5000, 0, 0x5100, 0x5200, 0x5300};  // 0: a frame without a method, skipped
  MonoMethod* frames[format::kMaxFrames] = {};
  uint32_t n = walker::collect(frames, format::kMaxFrames);
  CHECK(as_ints(frames, n) == std::vector<uint64_t>{0x5000, 0x5100, 0x5200, 0x5300});
  CHECK(world().mono_walks == 1);
  n = walker::collect(frames, 2, true);
  CHECK(as_ints(frames, n) == std::vector<uint64_t>{0x5000, 0x5100});
  world().mono_frames.clear();
  CHECK(walker::collect(frames, format::kMaxFrames) == 0);
  CHECK(world().mono_walks == 3);
  const std::string s = walker::summary();
  INFO(s);
  CHECK(s.find("our walker off") != std::string::npos);
}

TEST_CASE("stack walker: on, a stack it cannot walk goes to Mono's walk, counted as Mono's", "[hooks][walker]") {
  MonoRoom room;
  WalkerOff off;
  mono_optional.mono_method_get_context = [](MonoMethod*) -> void* { return nullptr; };
  mono_layouts::select(&mono_v6_8::kLayouts);  // the row hooks.cpp selects for Mono 6.8
  walker::init(true, true, false);
  const std::string before = walker::summary();
  INFO(before);
  REQUIRE(before.find("our walker on") != std::string::npos);
  const Counts c0 = parse(before);

  // The test's stack has no managed frame: our walk finds no learned native chain below (kNoBottom),
  // tries to learn one (libunwind finds no JIT'd code above it: nothing kept), and the backtrace is
  // Mono's, every time.
  world().mono_frames = {0x6000, 0x6100, 0x6200};
  MonoMethod* frames[format::kMaxFrames] = {};
  for (int i = 0; i < 3; ++i) {
    const uint32_t n = walker::collect(frames, format::kMaxFrames, i == 1);
    CHECK(as_ints(frames, n) == std::vector<uint64_t>{0x6000, 0x6100, 0x6200});
  }
  CHECK(world().mono_walks == 3);
  const std::string after = walker::summary();
  INFO(after);
  const Counts c1 = parse(after);
  CHECK(c1.ours == c0.ours);
  CHECK(c1.monos == c0.monos + 3);
  CHECK(c1.no_bottom == c0.no_bottom + 3);
  CHECK(after.find("our walker on") != std::string::npos);  // nothing disagreed: still on
  auto chains = [](const std::string& t) {  // "B+T native chains learned": nothing learned here
    const size_t e = t.find(" native chains learned");
    const size_t b = t.rfind("; ", e);
    return t.substr(b, e - b);
  };
  CHECK(chains(after) == chains(before));

  // MLPD_WALKER=mono: off again, whatever the layouts.
  walker::init(false, true, false);
  CHECK(walker::summary().find("our walker off") != std::string::npos);
}
