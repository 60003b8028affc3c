// The late describer (runtime-hooks/src/mono/late_describer.cpp): the sample drain's hand-over of
// undescribed methods and code addresses, answered by a serving thread (the attach control thread's
// serve_descriptions, or the finalizer's describer_finalized with a preload), with the drain's
// bounded wait. Mono's JIT info table and method names are fakes (mono_heap_fakes.h); what was
// described is read back from the MetaLog.
#include "mlpd_catch.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "late_describer_hand_over.h"
#include "mlpd/capture/sampling.h"
#include "mlpd/hooks/late_describer.h"
#include "mono_heap_fakes.h"

using namespace mlpd;
using namespace mlpd::hooks;
using namespace mlpd::test::monofake;
using late_describer_detail::hand_over;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

namespace {

// The fake JIT info table: method 0x5000's code is [0x10000, 0x10100), 0x5200's [0x20000, 0x20080).
void jit_table() {
  world().jit = {{0x10000, 0x100, 0x5000}, {0x20000, 0x80, 0x5200}};
}

// The methods described in the MetaLog (method_jit events): (method, code start, code size).
struct Described {
  uint64_t method, code, size;
};
std::vector<Described> described_methods(MonoRoom& room) {
  std::vector<Described> out;
  for (const Event& e : room.decode_all().of(EventKind::method_jit)) out.push_back({e.method, e.ptr, e.size});
  return out;
}

// A serving thread (the attach control thread's loop) until `stop`.
struct Server {
  std::atomic<bool> stop{false};
  std::thread t;
  Server() {
    t = std::thread([this] {
      while (!stop.load()) serve_descriptions(20);
    });
  }
  ~Server() {
    stop.store(true);
    t.join();
  }
};

std::atomic<int> g_notifies{0};

}  // namespace

TEST_CASE("late describer: the drain's request is answered by the serving thread", "[hooks][late_describer]") {
  MonoRoom room;
  jit_table();
  start_describer();
  {
    Server server;
    // 0x5000 with an address in its code: described with its range. 0x5100, no address: described
    // without one. No method, an address in 0x5200's code: 0x5200 found and described with its range.
    // No method, an address no method covers (a trampoline): (address, 0). 0x5300 with an address in
    // another method's code: described without a range.
    const uint64_t methods[] = {0x5000, 0x5100, 0, 0, 0x5300};
    const uint64_t code[] = {0x10010, 0, 0x20040, 0x99999, 0x10020};
    uint64_t resolved[5] = {};
    Ranges ranges;
    hand_over(methods, code, resolved, 5, ranges);
    CHECK(resolved[0] == 0x5000);
    CHECK(resolved[1] == 0x5100);
    CHECK(resolved[2] == 0x5200);
    CHECK(resolved[3] == 0);
    CHECK(resolved[4] == 0x5300);
    CHECK(ranges == Ranges{{0x10000, 0x100}, {0x20000, 0x80}, {0x99999, 0}});

    // A second request: 0x5100 is described already (not again).
    const uint64_t methods2[] = {0x5100};
    const uint64_t code2[] = {0};
    uint64_t resolved2[1] = {};
    Ranges ranges2;
    hand_over(methods2, code2, resolved2, 1, ranges2);
    CHECK(resolved2[0] == 0x5100);
    CHECK(ranges2.empty());
  }
  stop_describer();
  const auto d = described_methods(room);
  REQUIRE(d.size() == 4);
  CHECK(d[0].method == 0x5000);
  CHECK(d[0].code == 0x10000);
  CHECK(d[0].size == 0x100);
  CHECK(d[1].method == 0x5100);
  CHECK(d[1].code == 0);
  CHECK(d[2].method == 0x5200);
  CHECK(d[2].code == 0x20000);
  CHECK(d[2].size == 0x80);
  CHECK(d[3].method == 0x5300);
  CHECK(d[3].code == 0);
}

TEST_CASE("late describer: nothing is waited for when nobody serves", "[hooks][late_describer]") {
  MonoRoom room;
  jit_table();
  const uint64_t methods[] = {0x5000};
  const uint64_t code[] = {0x10010};
  uint64_t resolved[1] = {};
  Ranges ranges;

  SECTION("not started, or stopped") {
    stop_describer();
    hand_over(methods, code, resolved, 1, ranges);
    CHECK(resolved[0] == kNotAnswered);
    CHECK(ranges.empty());
    start_describer();
    stop_describer();
    hand_over(methods, code, resolved, 1, ranges);
    CHECK(resolved[0] == kNotAnswered);
    CHECK(described_methods(room).empty());
  }
  SECTION("started, the serving thread held up: the wait times out, and the next request is not waited for") {
    start_describer();
    const auto t0 = std::chrono::steady_clock::now();
    hand_over(methods, code, resolved, 1, ranges);
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(150));  // waited (200 ms)
    CHECK(resolved[0] == kNotAnswered);
    // The previous one is still unserved: this one is not asked (nor waited for).
    const uint64_t other[] = {0x5100};
    const uint64_t no_code[] = {0};
    resolved[0] = 0;
    hand_over(other, no_code, resolved, 1, ranges);
    CHECK(resolved[0] == kNotAnswered);
    // The describer catches up: it serves the old request (nobody waits for it any more) ...
    serve_descriptions(0);
    // ... and the next one is asked and answered.
    {
      Server server;
      hand_over(methods, code, resolved, 1, ranges);
    }
    CHECK(resolved[0] == 0x5000);
    CHECK(ranges == Ranges{{0x10000, 0x100}});
    stop_describer();
    // Described twice: by the late serve of the first request, and again for the answered one; the
    // request that was not asked (0x5100) never was.
    const auto d = described_methods(room);
    REQUIRE(d.size() == 2);
    CHECK(d[0].method == 0x5000);
    CHECK(d[1].method == 0x5000);
    CHECK(d[1].code == 0x10000);
  }
  SECTION("serve_descriptions returns at its timeout without a request, and at once when stopped") {
    start_describer();
    serve_descriptions(10);  // nothing asked: returns after its wait
    std::thread t([] { serve_descriptions(120000); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // not for synchronisation: either order works
    const auto t0 = std::chrono::steady_clock::now();
    stop_describer();
    t.join();
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));
    hand_over(methods, code, resolved, 1, ranges);
    CHECK(resolved[0] == kNotAnswered);
  }
}

TEST_CASE("late describer: with a preload the finalizer thread serves, woken by the hand-over",
          "[hooks][late_describer]") {
  MonoRoom room;
  jit_table();
  g_notifies.store(0);
  mono.mono_gc_finalize_notify = [] { g_notifies.fetch_add(1); };
  const uint64_t methods[] = {0, 0x5100};
  const uint64_t code[] = {0x20010, 0};
  uint64_t resolved[2] = {};
  Ranges ranges;
  start_preload_describer();

  // Before the runtime is initialised there is no finalizer: nobody woken, and the request counts as
  // served (not waited for, and no reason to leave the next one unasked: the next one is answered).
  state::g_runtime_ready.store(false);
  hand_over(methods, code, resolved, 2, ranges);
  CHECK(resolved[0] == kNotAnswered);
  CHECK(g_notifies.load() == 0);
  describer_finalized();  // nothing pending: returns
  state::g_runtime_ready.store(true);

  // The finalizer thread: after each "finalizer pass" (here: each wake) its gc_finalized callback.
  std::atomic<bool> stop{false};
  std::thread finalizer([&] {
    int seen = 0;
    while (!stop.load()) {
      if (g_notifies.load() != seen) {
        seen = g_notifies.load();
        describer_finalized();
      } else {
        std::this_thread::yield();
      }
    }
  });
  hand_over(methods, code, resolved, 2, ranges);
  stop.store(true);
  finalizer.join();
  CHECK(g_notifies.load() == 1);
  CHECK(resolved[0] == 0x5200);
  CHECK(resolved[1] == 0x5100);
  CHECK(ranges == Ranges{{0x20000, 0x80}});
  stop_describer();

  // describer_finalized serves only the preload describer: the attach one's requests are the
  // control thread's.
  start_describer();
  describer_finalized();
  stop_describer();
  const auto d = described_methods(room);
  REQUIRE(d.size() == 2);
  CHECK(d[0].method == 0x5200);
  CHECK(d[1].method == 0x5100);
}
