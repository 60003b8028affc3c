// The stack walker's entry points (runtime-hooks/src/mono/stack_walker.cpp; stack_walker_off.cpp on
// machines without our walker): init, collect and summary, with Mono's walk a fake
// (mono_stack_walk_no_il answering the frames the test sets). The fast walk itself is tested on
// synthetic stacks in walker/; here collect() runs on the test's own (native) stack, where our walker
// can find no managed frame: every backtrace must be exactly Mono's, whether our walker is on or off,
// and be counted as Mono's in the summary.
#include "mlpd_catch.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "mlpd/format.h"
#include "mlpd/hooks/stack_walker.h"
#include "mono/layouts.h"
#include "mono/v6_8/layouts.h"
#include "mono_heap_fakes.h"
#include "optional.h"
#include "stderr_capture.h"
#include "temp_dir.h"
#include "walker/thread_state.h"

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

TEST_CASE("stack walker: our backtrace cross-checked against Mono's - a difference switches ours off, verbosely",
          "[hooks][walker]") {
  MonoRoom room;
  WalkerOff off;
  mono_optional.mono_method_get_context = [](MonoMethod*) -> void* { return nullptr; };
  mono_layouts::select(&mono_v6_8::kLayouts);
  walker::init(true, true, true);  // every backtrace of ours checked (MLPD_WALKER=check), verbose
  REQUIRE(walker::summary().find("our walker on") != std::string::npos);

  // This thread's MonoJitTlsData (a fake): its last LMF is its first, the zeroed top entry. An
  // allocation's walk then starts from the LMF and finds no managed frame, as Mono's walk would on a
  // thread that never called native code from managed code: a backtrace of ours, with no frame.
  walker::ThreadWalk* t = walker::thread_walk();
  REQUIRE(t != nullptr);
  REQUIRE(t->bounds_ok);
  alignas(64) static uint64_t top_lmf[64] = {};
  alignas(64) static uint64_t jit_tls[1024] = {};
  const mono_layouts::MonoLayouts& L = mono_v6_8::kLayouts;
  REQUIRE(L.jit_tls_lmf / 8 < 1024);
  REQUIRE(L.jit_tls_first_lmf / 8 < 1024);
  jit_tls[L.jit_tls_lmf / 8] = reinterpret_cast<uint64_t>(top_lmf);
  jit_tls[L.jit_tls_first_lmf / 8] = reinterpret_cast<uint64_t>(top_lmf);
  const uint64_t saved_jit_tls = t->jit_tls;
  t->jit_tls = reinterpret_cast<uint64_t>(jit_tls);
  struct Restore {
    walker::ThreadWalk* t;
    uint64_t v;
    ~Restore() { t->jit_tls = v; }
  } restore{t, saved_jit_tls};

  const Counts c0 = parse(walker::summary());
  MonoMethod* frames[format::kMaxFrames] = {};
  world().mono_frames.clear();
  CHECK(walker::collect(frames, format::kMaxFrames, true) == 0);  // ours; Mono's agrees (checked)
  CHECK(world().mono_walks == 1);
  const std::string s1 = walker::summary();
  INFO(s1);
  const Counts c1 = parse(s1);
  CHECK(c1.ours == c0.ours + 1);
  CHECK(c1.monos == c0.monos);
  CHECK(s1.find("our walker on") != std::string::npos);

  // Mono's walk disagrees: its frames are the backtrace, ours is off for good, said once on stderr.
  world().mono_frames = {0x7000, 0x7100};
  mlpd::test::StderrCapture err;
  const uint32_t n = walker::collect(frames, format::kMaxFrames, true);
  const uint32_t n2 = walker::collect(frames, format::kMaxFrames, true);  // off now: Mono's walk only
  const std::string text = err.text();
  CHECK(as_ints(frames, n) == std::vector<uint64_t>{0x7000, 0x7100});
  CHECK(n2 == 2);
  CHECK(world().mono_walks == 3);
  CHECK(text ==
        "mlpd: our stack walker disagreed with Mono's (a backtrace); backtraces use mono_stack_walk_no_il from now on\n");
  const std::string s2 = walker::summary();
  INFO(s2);
  CHECK(s2.find("our walker off") != std::string::npos);
  CHECK(parse(s2).ours == c1.ours + 1);  // the disagreeing one was a walk of ours (then replaced)
}
