// The Mono room's install and callbacks (hooks.cpp, metadata_callbacks.cpp, call_callbacks.cpp,
// gc_callbacks.cpp) over a fake Mono (tests/support/fake_mono.h): the hooks are installed with a
// configuration into the agent's writer (a ThreadRegistry, a MetaLog, a Flusher), the callbacks they
// set are raised as the runtime would raise them, and what was written is flushed into a file and
// decoded back with the reader's decoder; verify --strict's reference check runs over every event
// (methods, classes and images described before the first event that references them).
#include "mlpd_catch.h"

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "callbacks.h"
#include "described.h"
#include "fake_mono.h"
#include "heapshot_engine.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/checks.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/hooks/control.h"
#include "mlpd/hooks/hooks.h"
#include "mlpd/rt/clock.h"
#include "mono/sampling_start.h"
#include "state.h"

using namespace mlpd;
using namespace mlpd::hooks;
using test::FakeMono;

namespace {

uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

struct Collector : Visitor {
  std::vector<Event> events;
  std::vector<std::string> problems;
  ReferenceChecker checker;
  void on_event(const Event& e, const EventInfo&) override {
    events.push_back(e);
    std::string r = checker.check(e);
    if (!r.empty()) problems.push_back(r);
  }
  void on_problem(const Problem& p) override { problems.push_back(p.message); }
};

struct Decoded {
  std::vector<Event> events;
  std::vector<const Event*> of(EventKind k) const {
    std::vector<const Event*> out;
    for (const Event& e : events)
      if (e.kind == k) out.push_back(&e);
    return out;
  }
  size_t count(EventKind k) const { return of(k).size(); }
  // The index of the first event of kind k with this method/ptr (events.size(): none).
  size_t first(EventKind k, uint64_t method_or_ptr) const {
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].kind == k && (events[i].method == method_or_ptr || events[i].ptr == method_or_ptr)) return i;
    return events.size();
  }
};

int g_initialized_calls = 0, g_shutdown_begin_calls = 0, g_shutdown_end_calls = 0;

// The agent's writer under the hooks, a fake Mono, and the hooks' global state put back afterwards.
struct Hooked {
  FakeMono fake;  // first: the hooks' teardown (detach) still calls its setters
  rt::BufferPool pool{65536, 64};
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::ThreadRegistry registry{init_shared()};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::Flusher flusher{shared, registry, meta};
  HookEnv env;

  rt::WriterShared& init_shared() {
    shared.pool = &pool;
    shared.queue = &queue;
    return shared;
  }

  Hooked() {
    env.shared = &shared;
    env.registry = &registry;
    env.meta = &meta;
    env.on_runtime_initialized = [] { ++g_initialized_calls; };
    env.on_shutdown_begin = [] { ++g_shutdown_begin_calls; };
    env.on_shutdown_end = [] { ++g_shutdown_end_calls; };
    described::release_thread_cache();
  }
  ~Hooked() {
    detach();
    registry.thread_exit();
    described::release_thread_cache();
    described::reset_for_tests();
    delete state::g;
    state::g = nullptr;
    delete cb::g_live_threads;
    cb::g_live_threads = nullptr;
    state::g_active.store(false);
    state::g_runtime_ready.store(false);
    state::g_mask.store(0);
    state::g_calldepth.store(100);
    state::g_maxframes.store(0);
    state::g_paused.store(false);
    state::g_saved_mask = 0;
    state::g_saved_calldepth = 0;
    cb::g_unloaded.store(false);
    cb::g_lazy_methods = cb::g_lazy_classes = false;
    cb::g_calls_min_ns = 0;
  }

  bool install(const HookConfig& c, std::string& error) { return cb::install_bound(c, env, error); }
  void install(const HookConfig& c) {
    std::string error;
    REQUIRE(install(c, error));
    CHECK(error.empty());
  }

  // Everything written so far (the calling thread's log retired first), decoded; no decoding problem,
  // every reference described before use, and the fake asked about nothing it did not make.
  Decoded flush() {
    registry.thread_exit();
    std::vector<uint8_t> file;
    encode_file_header(FileHeader{}, file);
    flusher.round(file, true, rt::now_ns());
    auto input = Input::from_memory(file.data(), file.size());
    Collector c;
    const DecodeSummary s = decode(*input, c);
    CHECK(c.problems == std::vector<std::string>{});
    CHECK(s.problems == 0);
    CHECK(fake.problems == std::vector<std::string>{});
    CHECK(fake.heap_walks == 0);  // no heapshot asked for
    return Decoded{std::move(c.events)};
  }
};

// Runs fn on a thread of its own (its own log and shadow call stack), as a runtime thread would.
template <class Fn>
void on_thread(Fn fn) {
  std::thread(fn).join();
}

}  // namespace

TEST_CASE("mono hooks: install sets its callbacks on the handle it created", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.mask = format::MASK_GC;
  h.install(c);
  REQUIRE(h.fake.handle != nullptr);
  CHECK(h.fake.handles_seen == std::set<MonoProfilerHandle>{h.fake.handle});
  const FakeMono::Callbacks& cbs = h.fake.callbacks;
  CHECK(cbs.runtime_initialized);
  CHECK(cbs.runtime_shutdown_begin);
  CHECK(cbs.runtime_shutdown_end);
  CHECK(cbs.thread_started);
  CHECK(cbs.thread_stopped);
  CHECK(cbs.thread_name);
  CHECK(cbs.domain_loaded);
  CHECK(cbs.image_loaded);
  CHECK(cbs.assembly_loaded);
  CHECK(cbs.class_loaded);
  CHECK(cbs.vtable_loaded);
  CHECK(cbs.jit_done);
  CHECK(cbs.method_free);
  CHECK(cbs.jit_code_buffer);
  CHECK(cbs.gc_event);
  CHECK(cbs.gc_root_register);
  CHECK(cbs.gc_root_unregister);
  CHECK(cbs.gc_finalized);  // always: the heapshot engine's requests
  CHECK(cbs.gc_resize);     // MASK_GC
  // Not asked for: no instrumentation, and the costly callbacks of masked-off events not installed.
  CHECK_FALSE(cbs.method_enter);
  CHECK_FALSE(cbs.method_leave);
  CHECK_FALSE(cbs.call_instrumentation_filter);
  CHECK_FALSE(cbs.gc_allocation);
  CHECK_FALSE(cbs.gc_moves);
  CHECK_FALSE(cbs.gc_handle_created);
  CHECK_FALSE(cbs.exception_throw);
  CHECK_FALSE(cbs.monitor_contention);
  CHECK_FALSE(cbs.gc_finalizing);
  CHECK(state::active());
  CHECK(event_mask() == format::MASK_GC);
}

TEST_CASE("mono hooks: install refuses a runtime started already, and a bad callspec", "[hooks][mono_hooks]") {
  SECTION("allocations can no longer be had") {
    Hooked h;
    h.fake.allocations_enabled = false;
    std::string error;
    CHECK_FALSE(h.install(HookConfig{}, error));
    CHECK(error.find("loaded after the Mono runtime started") != std::string::npos);
    CHECK_FALSE(state::active());
    CHECK_FALSE(h.fake.callbacks.thread_started);
  }
  SECTION("attached late, the same runtime is accepted") {
    Hooked h;
    h.fake.allocations_enabled = h.fake.clauses_enabled = false;
    HookConfig c;
    c.late = true;
    h.install(c);
    CHECK(state::active());
    CHECK(state::runtime_ready());
  }
  SECTION("a callspec Mono's parser refuses") {
    Hooked h;
    h.fake.callspec_error = "unknown token";
    HookConfig c;
    c.calls = true;
    c.callspec = "X:nonsense";
    std::string error;
    CHECK_FALSE(h.install(c, error));
    CHECK(error == "bad callspec 'X:nonsense': unknown token");
    CHECK(h.fake.callspecs_parsed == std::vector<std::string>{"X:nonsense"});
    CHECK_FALSE(state::active());
  }
}

TEST_CASE("mono hooks: threads, domains, contexts, images and assemblies are described", "[hooks][mono_hooks]") {
  Hooked h;
  h.install(HookConfig{});
  auto& cbs = h.fake.callbacks;
  MonoImage* img = h.fake.image("/app/lib.dll", "11111111-2222-3333-4444-555555555555");
  MonoAssembly* asm_ = h.fake.assembly(img, "lib, Version=1.0.0.0");
  MonoDomain* dom = h.fake.domain(3);
  MonoAppContext* ctx = h.fake.context(5, 3);

  cbs.thread_started(nullptr, 0x7001);
  cbs.thread_name(nullptr, 0x7001, "worker");
  cbs.thread_stopped(nullptr, 0x7001);
  cbs.thread_stopped(nullptr, 0x7001);  // stopped and exited both report: one end
  cbs.thread_started(nullptr, 0x7002);  // never ends: ended at shutdown
  cbs.domain_loaded(nullptr, dom);
  cbs.domain_name(nullptr, dom, "app.exe");
  cbs.context_loaded(nullptr, ctx);
  cbs.assembly_loaded(nullptr, asm_);  // describes its image first
  cbs.image_loaded(nullptr, img);      // the runtime's own load: described again
  cbs.assembly_unloading(nullptr, asm_);
  cbs.image_unloading(nullptr, img);
  cbs.context_unloaded(nullptr, ctx);
  cbs.domain_unloading(nullptr, dom);
  end_remaining_threads();

  const Decoded d = h.flush();
  auto starts = d.of(EventKind::thread_start);
  REQUIRE(starts.size() == 2);
  CHECK(starts[0]->ptr == 0x7001);
  CHECK(starts[1]->ptr == 0x7002);
  auto names = d.of(EventKind::thread_name);
  REQUIRE(names.size() == 1);
  CHECK(names[0]->ptr == 0x7001);
  CHECK(names[0]->name == "worker");
  auto ends = d.of(EventKind::thread_end);
  REQUIRE(ends.size() == 2);
  CHECK(ends[0]->ptr == 0x7001);
  CHECK(ends[1]->ptr == 0x7002);

  auto dl = d.of(EventKind::domain_load);
  REQUIRE(dl.size() == 1);
  CHECK(dl[0]->ptr == 3);
  auto dn = d.of(EventKind::domain_name);
  REQUIRE(dn.size() == 1);
  CHECK(dn[0]->ptr == 3);
  CHECK(dn[0]->name == "app.exe");
  REQUIRE(d.count(EventKind::domain_unload) == 1);
  CHECK(d.of(EventKind::domain_unload)[0]->ptr == 3);
  for (EventKind k : {EventKind::context_load, EventKind::context_unload}) {
    auto e = d.of(k);
    REQUIRE(e.size() == 1);
    CHECK(e[0]->ptr == 5);
    CHECK(e[0]->ptr2 == 3);
  }

  auto images = d.of(EventKind::image_load);
  REQUIRE(images.size() == 2);
  CHECK(images[0]->ptr == u(img));
  CHECK(images[0]->name == "/app/lib.dll");
  CHECK(images[0]->mvid == "11111111-2222-3333-4444-555555555555");
  CHECK(d.first(EventKind::image_load, u(img)) < d.first(EventKind::assembly_load, u(asm_)));
  for (EventKind k : {EventKind::assembly_load, EventKind::assembly_unload}) {
    auto e = d.of(k);
    REQUIRE(e.size() == 1);
    CHECK(e[0]->ptr == u(asm_));
    CHECK(e[0]->ptr2 == u(img));
    CHECK(e[0]->name == "lib, Version=1.0.0.0");
  }
  auto unl = d.of(EventKind::image_unload);
  REQUIRE(unl.size() == 1);
  CHECK(unl[0]->ptr == u(img));
  CHECK(unl[0]->name == "/app/lib.dll");
}

TEST_CASE("mono hooks: classes are named lazily through their vtables, or at load when eager", "[hooks][mono_hooks]") {
  for (const bool eager : {false, true}) {
    DYNAMIC_SECTION("eager-metadata " << eager) {
      Hooked h;
      HookConfig c;
      c.eager_metadata = eager;
      h.install(c);
      MonoImage* img = h.fake.image("/app/a.dll", "GUID");
      MonoClass* outer = h.fake.klass(img, "N", "Outer");
      MonoClass* inner = h.fake.klass(img, "", "Inner", outer);
      MonoDomain* dom = h.fake.domain(1);
      MonoVTable* vt = h.fake.vtable(inner, dom);
      h.fake.callbacks.class_loaded(nullptr, inner);
      uint64_t counts[kEventKindCount] = {};
      h.meta.add_counts_to(counts);
      // A heapshot asked for earlier in this process (heapshot_test's, when the whole binary runs as one
      // process) has every class described at its load from then on (metadata_callbacks.cpp:
      // heapshot::may_happen()); under ctest each case is a process of its own and lazy is checked.
      const bool at_load = eager || heapshot::may_happen();
      CHECK(counts[static_cast<size_t>(EventKind::class_load)] == (at_load ? 1u : 0u));
      h.fake.callbacks.vtable_loaded(nullptr, vt);
      const Decoded d = h.flush();
      auto classes = d.of(EventKind::class_load);
      // Lazy: the class is named by its vtable's description only; eager: at its load, and once.
      REQUIRE(classes.size() == 1);
      CHECK(classes[0]->ptr == u(inner));
      CHECK(classes[0]->ptr2 == u(img));
      CHECK(classes[0]->name == "N.Outer/Inner");  // before the runtime is initialised: from the nesting
      auto vts = d.of(EventKind::vtable_load);
      REQUIRE(vts.size() == 1);
      CHECK(vts[0]->ptr == u(vt));
      CHECK(vts[0]->ptr2 == 1);
      CHECK(vts[0]->ptr3 == u(inner));
      CHECK(d.first(EventKind::image_load, u(img)) < d.first(EventKind::class_load, u(inner)));
      CHECK(d.first(EventKind::class_load, u(inner)) < d.first(EventKind::vtable_load, u(vt)));
    }
  }
}

TEST_CASE("mono hooks: jit_done describes the method with its code, once per code range", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.mask = format::MASK_JIT;  // every JIT'd method recorded: nothing deferred
  h.install(c);
  auto& cbs = h.fake.callbacks;
  MonoMethod* m = h.fake.method("N.C:Run (int)");
  MonoJitInfo* ji = h.fake.jit_info(m, 0x7f0000010000, 0x120);
  MonoMethod* freed = h.fake.method("N.C:Gone ()");
  cbs.jit_done(nullptr, m, ji);
  cbs.jit_done(nullptr, m, ji);  // 6.12 raises it again for code it finds compiled: one event
  cbs.method_free(nullptr, freed);
  cbs.jit_code_buffer(nullptr, reinterpret_cast<const mono_byte*>(0x7f0000020000), 64,
                      MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE, "tramp_x");
  cbs.jit_code_buffer(nullptr, reinterpret_cast<const mono_byte*>(0x7f0000030000), 32, MONO_PROFILER_CODE_BUFFER_METHOD,
                      nullptr);
  const Decoded d = h.flush();
  auto jits = d.of(EventKind::method_jit);
  REQUIRE(jits.size() == 1);
  CHECK(jits[0]->method == u(m));
  CHECK(jits[0]->ptr == 0x7f0000010000);
  CHECK(jits[0]->size == 0x120);
  CHECK(jits[0]->name == "N.C:Run (int)");
  auto helpers = d.of(EventKind::jit_helper);
  REQUIRE(helpers.size() == 2);
  CHECK(helpers[0]->code == MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE);
  CHECK(helpers[0]->ptr == 0x7f0000020000);
  CHECK(helpers[0]->size == 64);
  CHECK(helpers[0]->name == "tramp_x");
  CHECK(helpers[1]->code == MONO_PROFILER_CODE_BUFFER_METHOD);
  CHECK(helpers[1]->name.empty());
}

TEST_CASE("mono hooks: without jit events a method is described at its first reference", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.calls = true;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  MonoMethod* m = h.fake.method("N.C:Lazy ()");
  MonoMethod* never = h.fake.method("N.C:NeverCalled ()");
  cbs.jit_done(nullptr, m, h.fake.jit_info(m, 0x7f0000040000, 48));
  cbs.jit_done(nullptr, never, h.fake.jit_info(never, 0x7f0000050000, 16));
  on_thread([&] {
    cbs.method_enter(nullptr, m, nullptr);
    cbs.method_leave(nullptr, m, nullptr);
  });
  const Decoded d = h.flush();
  auto jits = d.of(EventKind::method_jit);
  REQUIRE(jits.size() == 1);  // the method never called is never named
  CHECK(jits[0]->method == u(m));
  CHECK(jits[0]->ptr == 0x7f0000040000);  // with the range its jit_done gave
  CHECK(jits[0]->size == 48);
  CHECK(d.count(EventKind::method_enter) == 1);
}

TEST_CASE("mono hooks: calls are written as enter/leave pairs, with exceptional leaves", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.calls = true;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  REQUIRE(cbs.method_enter);
  REQUIRE(cbs.method_exception_leave);
  MonoMethod* a = h.fake.method("P:Main ()");
  MonoMethod* b = h.fake.method("P:B ()");
  MonoMethod* t = h.fake.method("P:Throws ()");
  MonoMethod* x = h.fake.method("P:Inner ()");
  MonoMethod* tail = h.fake.method("P:Tail ()");
  on_thread([&] {
    cbs.method_enter(nullptr, a, nullptr);
    cbs.method_enter(nullptr, b, nullptr);
    cbs.method_leave(nullptr, b, nullptr);
    cbs.method_enter(nullptr, t, nullptr);
    cbs.method_enter(nullptr, x, nullptr);
    // The exception leaves t; x above it had no leave event: closed as an exceptional leave first.
    cbs.method_exception_leave(nullptr, t, nullptr);
    cbs.method_enter(nullptr, tail, nullptr);
    cbs.method_tail_call(nullptr, tail, b);
    cbs.method_leave(nullptr, a, nullptr);
    cbs.method_leave(nullptr, a, nullptr);  // no frame left: dropped
  });
  const Decoded d = h.flush();
  // "<kind> <method's name>", in file order.
  std::vector<std::string> calls;
  for (const Event& e : d.events) {
    if (e.kind == EventKind::method_enter || e.kind == EventKind::method_leave || e.kind == EventKind::method_exc_leave)
      calls.push_back(std::string(event_kind_name(e.kind)) + " " + h.fake.methods.at(e.method).name);
  }
  const std::vector<std::string> expected = {
      "method_enter Main",      "method_enter B",         "method_leave B",   "method_enter Throws",
      "method_enter Inner",     "method_exc_leave Inner", "method_exc_leave Throws",
      "method_enter Tail",      "method_leave Tail",      "method_leave Main"};
  CHECK(calls == expected);
  using K = EventKind;
  // Each method described once, before its first enter (the reference check of flush()).
  auto jits = d.of(EventKind::method_jit);
  CHECK(jits.size() == 5);
  for (MonoMethod* m : {a, b, t, x, tail}) CHECK(d.first(K::method_jit, u(m)) < d.first(K::method_enter, u(m)));
  CHECK(d.of(K::method_jit)[0]->name == "P:Main ()");
}

TEST_CASE("mono hooks: repeated calls of described methods are all written (the hot path)", "[hooks][mono_hooks]") {
  // The inline enter and leave need the TSC as the clock (the agent's usual one): chosen before the
  // writer is made, CLOCK_MONOTONIC again afterwards (the slow path takes every call where there is
  // no invariant TSC, qemu-user's arm64 among them).
  struct TscClock {
    const bool tsc = std::string(rt::init_clock(true)) == "tsc";
    ~TscClock() { rt::init_clock(false); }
  } clock;
  INFO("clock: " << (clock.tsc ? "tsc" : "monotonic"));
  Hooked h;
  HookConfig c;
  c.calls = true;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  MonoMethod* outer = h.fake.method("P:Loop ()");
  MonoMethod* callee = h.fake.method("P:Step (int)");
  constexpr int kCalls = 5000;  // more than one buffer's worth: the slow path takes the next one
  on_thread([&] {
    cbs.method_enter(nullptr, outer, nullptr);
    for (int i = 0; i < kCalls; ++i) {
      cbs.method_enter(nullptr, callee, nullptr);
      cbs.method_leave(nullptr, callee, nullptr);
    }
    cbs.method_leave(nullptr, outer, nullptr);
  });
  const Decoded d = h.flush();
  CHECK(d.count(EventKind::method_jit) == 2);  // each described once, at its first enter
  std::vector<uint64_t> seq;
  for (const Event& e : d.events)
    if (e.kind == EventKind::method_enter || e.kind == EventKind::method_leave) seq.push_back(e.method);
  REQUIRE(seq.size() == 2 * kCalls + 2);
  CHECK(seq.front() == u(outer));
  CHECK(seq.back() == u(outer));
  size_t callee_events = 0, enters = 0;
  for (const Event& e : d.events) {
    if (e.method == u(callee) && (e.kind == EventKind::method_enter || e.kind == EventKind::method_leave)) {
      ++callee_events;
      if (e.kind == EventKind::method_enter) ++enters;
    }
  }
  CHECK(callee_events == 2 * kCalls);
  CHECK(enters == kCalls);
  uint64_t last = 0;
  bool ordered = true;
  for (const Event& e : d.events) {
    if (e.kind != EventKind::method_enter && e.kind != EventKind::method_leave) continue;
    ordered = ordered && e.time >= last;
    last = e.time;
  }
  CHECK(ordered);
}

TEST_CASE("mono hooks: after an unload a class is described at every load (its address may be reused)",
          "[hooks][mono_hooks]") {
  Hooked h;
  h.install(HookConfig{});  // lazy classes: none described at load before the unload
  auto& cbs = h.fake.callbacks;
  MonoImage* img = h.fake.image("/app/plugin.dll", "GUID-PLUGIN");
  MonoClass* k = h.fake.klass(img, "P", "C");
  cbs.class_loaded(nullptr, k);
  cbs.domain_unloading(nullptr, h.fake.domain(2));
  cbs.class_loaded(nullptr, k);
  h.fake.classes[reinterpret_cast<uint64_t>(k)].name = "D";  // another class at the same address
  cbs.class_loaded(nullptr, k);
  const Decoded d = h.flush();
  auto classes = d.of(EventKind::class_load);
  // The first load is described too when a heapshot was asked for earlier in this process (the whole
  // binary as one process: heapshot_test; heapshot::may_happen()).
  const bool first_described = heapshot::may_happen();
  REQUIRE(classes.size() == (first_described ? 3u : 2u));
  CHECK(classes[classes.size() - 2]->name == "P.C");
  CHECK(classes[classes.size() - 1]->name == "P.D");
  CHECK(d.count(EventKind::image_load) == 1);
  REQUIRE(d.count(EventKind::domain_unload) == 1);
  CHECK(d.of(EventKind::domain_unload)[0]->ptr == 2);
}

TEST_CASE("mono hooks: calldepth bounds the calls written, and leaves stay matched", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.calls = true;
  c.calldepth = 1;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  MonoMethod* a = h.fake.method("P:Outer ()");
  MonoMethod* b = h.fake.method("P:Deep ()");
  on_thread([&] {
    cbs.method_enter(nullptr, a, nullptr);
    cbs.method_enter(nullptr, b, nullptr);  // beyond calldepth: kept unrecorded
    cbs.method_enter(nullptr, a, nullptr);  // (recursion) also beyond
    cbs.method_leave(nullptr, a, nullptr);  // matched with the unrecorded frame, not the outer one
    cbs.method_leave(nullptr, b, nullptr);
    cbs.method_leave(nullptr, a, nullptr);
  });
  const Decoded d = h.flush();
  auto enters = d.of(EventKind::method_enter);
  auto leaves = d.of(EventKind::method_leave);
  REQUIRE(enters.size() == 1);
  REQUIRE(leaves.size() == 1);
  CHECK(enters[0]->method == u(a));
  CHECK(leaves[0]->method == u(a));
  CHECK(d.count(EventKind::method_exc_leave) == 0);
  CHECK(d.count(EventKind::method_jit) == 1);  // the deep method is never referenced
}

TEST_CASE("mono hooks: calls-min elides a short call", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.calls = true;
  c.calls_min_ns = 3600ull * 1000 * 1000 * 1000;  // an hour: every call here is shorter
  h.install(c);
  auto& cbs = h.fake.callbacks;
  MonoMethod* a = h.fake.method("P:Short ()");
  MonoMethod* b = h.fake.method("P:Other ()");
  on_thread([&] {
    cbs.method_enter(nullptr, a, nullptr);
    cbs.method_leave(nullptr, a, nullptr);  // elided: neither enter nor leave
    cbs.method_enter(nullptr, b, nullptr);
    cbs.method_enter(nullptr, a, nullptr);
    cbs.method_exception_leave(nullptr, b, nullptr);  // not the usual leave: written, a closed too
  });
  const Decoded d = h.flush();
  CHECK(h.registry.elided_calls() == 1);
  auto enters = d.of(EventKind::method_enter);
  REQUIRE(enters.size() == 2);
  CHECK(enters[0]->method == u(b));
  CHECK(enters[1]->method == u(a));
  auto exc = d.of(EventKind::method_exc_leave);
  REQUIRE(exc.size() == 2);
  CHECK(exc[0]->method == u(a));
  CHECK(exc[1]->method == u(b));
  CHECK(d.count(EventKind::method_leave) == 0);
}

TEST_CASE("mono hooks: the instrumentation filter skips the state poll and what the callspec leaves out",
          "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.calls = true;
  c.callspec = "T:N.Wanted";
  h.install(c);
  REQUIRE(h.fake.callbacks.call_instrumentation_filter);
  auto filter = h.fake.callbacks.call_instrumentation_filter;
  CHECK(h.fake.callspecs_parsed == std::vector<std::string>{"T:N.Wanted"});
  MonoMethod* wanted = h.fake.method("N.Wanted:Run ()");
  MonoMethod* other = h.fake.method("N.Other:Run ()");
  MonoMethod* poll = h.fake.method("(wrapper) __icall_wrapper_mono_threads_state_poll",
                                   "__icall_wrapper_mono_threads_state_poll");
  h.fake.callspec_matches = {wanted, poll};
  const auto all = MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE |
                   MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE;
  CHECK(static_cast<int>(filter(nullptr, wanted)) == static_cast<int>(all));
  CHECK(static_cast<int>(filter(nullptr, other)) == MONO_PROFILER_CALL_INSTRUMENTATION_NONE);
  CHECK(static_cast<int>(filter(nullptr, poll)) == MONO_PROFILER_CALL_INSTRUMENTATION_NONE);
  CHECK(h.fake.problems == std::vector<std::string>{});
}

TEST_CASE("mono hooks: collections, moves, resizes and roots are written", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.mask = format::MASK_GC | format::MASK_GC_MOVE | format::MASK_GC_ROOT;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  REQUIRE(cbs.gc_moves);
  runtime::GcPauses before;
  gc_pauses(before);
  on_thread([&] {
    const MonoProfilerGCEvent seq[] = {MONO_GC_EVENT_PRE_STOP_WORLD,   MONO_GC_EVENT_PRE_STOP_WORLD_LOCKED,
                                       MONO_GC_EVENT_POST_STOP_WORLD,  MONO_GC_EVENT_START,
                                       MONO_GC_EVENT_END,              MONO_GC_EVENT_PRE_START_WORLD,
                                       MONO_GC_EVENT_POST_START_WORLD, MONO_GC_EVENT_POST_START_WORLD_UNLOCKED};
    for (MonoProfilerGCEvent e : seq) {
      cbs.gc_event(nullptr, e, 1, 1);
      if (e == MONO_GC_EVENT_END) {
        std::vector<MonoObject*> moved;
        for (uint64_t i = 0; i < 70; ++i) moved.push_back(reinterpret_cast<MonoObject*>(0x10000 + 16 * i));
        cbs.gc_moves(nullptr, moved.data(), moved.size());  // 64 + 6 addresses: two events
        cbs.gc_resize(nullptr, 1 << 20);
      }
    }
    cbs.gc_root_register(nullptr, reinterpret_cast<const mono_byte*>(0x9000), 256, MONO_ROOT_SOURCE_STATIC,
                         reinterpret_cast<const void*>(0x9100), "static fields");
    cbs.gc_root_unregister(nullptr, reinterpret_cast<const mono_byte*>(0x9000));
  });
  const Decoded d = h.flush();
  // "<event> gen <generation>", in file order.
  std::vector<std::string> gcs;
  for (const Event* e : d.of(EventKind::gc_event))
    gcs.push_back(std::to_string(e->code) + " gen " + std::to_string(e->generation));
  using namespace format;
  std::vector<std::string> expected;
  for (uint8_t code : {GC_EVENT_PRE_STOP_WORLD, GC_EVENT_PRE_STOP_WORLD_LOCKED, GC_EVENT_POST_STOP_WORLD,
                       GC_EVENT_START, GC_EVENT_END, GC_EVENT_PRE_START_WORLD, GC_EVENT_POST_START_WORLD,
                       GC_EVENT_POST_START_WORLD_UNLOCKED})
    expected.push_back(std::to_string(code) + " gen 1");
  CHECK(gcs == expected);
  auto syncs = d.of(EventKind::sync_point);
  REQUIRE(syncs.size() == 2);
  CHECK(syncs[0]->code == SYNC_POINT_WORLD_STOP);
  CHECK(syncs[1]->code == SYNC_POINT_WORLD_START);
  auto moves = d.of(EventKind::gc_move);
  REQUIRE(moves.size() == 2);
  REQUIRE(moves[0]->objects.size() == 64);
  REQUIRE(moves[1]->objects.size() == 6);
  CHECK(moves[0]->objects[0] == 0x10000);
  CHECK(moves[0]->objects[1] == 0x10010);
  CHECK(moves[1]->objects[5] == 0x10000 + 16 * 69);
  auto resize = d.of(EventKind::gc_resize);
  REQUIRE(resize.size() == 1);
  CHECK(resize[0]->size == (1u << 20));
  auto reg = d.of(EventKind::heap_root_register);
  REQUIRE(reg.size() == 1);
  CHECK(reg[0]->ptr == 0x9000);
  CHECK(reg[0]->size == 256);
  CHECK(reg[0]->code == MONO_ROOT_SOURCE_STATIC);
  CHECK(reg[0]->ptr2 == 0x9100);
  CHECK(reg[0]->name == "static fields");
  auto unreg = d.of(EventKind::heap_root_unregister);
  REQUIRE(unreg.size() == 1);
  CHECK(unreg[0]->ptr == 0x9000);
  // The stop of the world was timed into the pause histogram.
  runtime::GcPauses after;
  gc_pauses(after);
  uint64_t n_before = 0, n_after = 0;
  for (size_t i = 0; i <= runtime::GcPauses::kBounds; ++i) {
    n_before += before.buckets[i];
    n_after += after.buckets[i];
  }
  CHECK(n_after == n_before + 1);
}

TEST_CASE("mono hooks: GC handles carry their backtrace, its methods described first", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.mask = format::MASK_GC_HANDLE | format::MASK_GC_FINALIZATION;
  c.maxframes = 8;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  REQUIRE(cbs.gc_handle_created);
  MonoMethod* outer = h.fake.method("P:Main ()");
  MonoMethod* inner = h.fake.method("P:Pin (object)");
  h.fake.stack = {inner, outer};  // innermost first, as Mono's walk gives them
  auto* obj = reinterpret_cast<MonoObject*>(0x7f0000abc000);
  on_thread([&] {
    cbs.gc_handle_created(nullptr, 42, MONO_GC_HANDLE_PINNED, obj);
    cbs.gc_handle_deleted(nullptr, 42, MONO_GC_HANDLE_PINNED);
    // A handle made by the collecting thread during its own collection: no backtrace then.
    cbs.gc_event(nullptr, MONO_GC_EVENT_PRE_STOP_WORLD_LOCKED, 0, 1);
    cbs.gc_handle_created(nullptr, 43, MONO_GC_HANDLE_WEAK, obj);
    cbs.gc_event(nullptr, MONO_GC_EVENT_POST_START_WORLD_UNLOCKED, 0, 1);
    cbs.gc_finalizing(nullptr);
    cbs.gc_finalizing_object(nullptr, obj);
    cbs.gc_finalized_object(nullptr, obj);
    cbs.gc_finalized(nullptr);
  });
  const Decoded d = h.flush();
  auto created = d.of(EventKind::gc_handle_created);
  REQUIRE(created.size() == 2);
  CHECK(created[0]->handle == 42);
  CHECK(created[0]->handle_type == MONO_GC_HANDLE_PINNED);
  CHECK(created[0]->obj == u(obj));
  CHECK(created[0]->has_backtrace);
  CHECK(created[0]->backtrace == std::vector<uint64_t>{u(outer), u(inner)});  // outermost first
  CHECK(created[1]->handle == 43);
  CHECK_FALSE(created[1]->has_backtrace);
  auto deleted = d.of(EventKind::gc_handle_destroyed);
  REQUIRE(deleted.size() == 1);
  CHECK(deleted[0]->handle == 42);
  CHECK(deleted[0]->handle_type == MONO_GC_HANDLE_PINNED);
  CHECK(deleted[0]->backtrace == std::vector<uint64_t>{u(outer), u(inner)});
  CHECK(d.count(EventKind::method_jit) == 2);  // each frame's method once, before the first backtrace
  CHECK(d.count(EventKind::gc_event) == 0);    // GC events masked off
  CHECK(d.count(EventKind::gc_finalize_start) == 1);
  CHECK(d.count(EventKind::gc_finalize_end) == 1);
  auto fo = d.of(EventKind::gc_finalize_object_start);
  REQUIRE(fo.size() == 1);
  CHECK(fo[0]->obj == u(obj));
  REQUIRE(d.count(EventKind::gc_finalize_object_end) == 1);
  CHECK(d.of(EventKind::gc_finalize_object_end)[0]->obj == u(obj));
}

TEST_CASE("mono hooks: a masked-off event is neither installed nor written", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.mask = format::MASK_GC | format::MASK_GC_MOVE | format::MASK_GC_FINALIZATION;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  REQUIRE(cbs.gc_moves);
  REQUIRE(cbs.gc_finalizing);
  MonoObject* pair[2] = {reinterpret_cast<MonoObject*>(0x1000), reinterpret_cast<MonoObject*>(0x2000)};
  auto moves = cbs.gc_moves;
  auto finalized = cbs.gc_finalized;
  on_thread([&] {
    cbs.gc_event(nullptr, MONO_GC_EVENT_START, 0, 1);
    moves(nullptr, pair, 2);
    finalized(nullptr);
  });
  set_event_mask(format::MASK_GC_ALLOC | format::MASK_EXCEPTION | format::MASK_MONITOR | format::MASK_GC_HANDLE);
  // The costly callbacks follow the mask: the moves' and finalization's out, the others' in.
  CHECK_FALSE(cbs.gc_moves);
  CHECK_FALSE(cbs.gc_finalizing);
  CHECK_FALSE(cbs.gc_finalizing_object);
  CHECK_FALSE(cbs.gc_resize);
  CHECK(cbs.gc_finalized);  // always (heapshot requests)
  CHECK(cbs.gc_allocation);
  CHECK(cbs.exception_throw);
  CHECK(cbs.exception_clause);
  CHECK(cbs.monitor_contention);
  CHECK(cbs.monitor_acquired);
  CHECK(cbs.monitor_failed);
  CHECK(cbs.gc_handle_created);
  CHECK(cbs.gc_handle_deleted);
  on_thread([&] {
    // The callbacks installed for good check the mask; one held from before (a runtime thread inside
    // the callback while the mask changes) writes nothing either.
    cbs.gc_event(nullptr, MONO_GC_EVENT_END, 0, 1);
    moves(nullptr, pair, 2);
    cbs.gc_finalized(nullptr);
  });
  const Decoded d = h.flush();
  auto gcs = d.of(EventKind::gc_event);
  REQUIRE(gcs.size() == 1);
  CHECK(gcs[0]->code == format::GC_EVENT_START);
  auto mv = d.of(EventKind::gc_move);
  REQUIRE(mv.size() == 1);
  CHECK(mv[0]->objects == std::vector<uint64_t>{0x1000, 0x2000});
  CHECK(d.count(EventKind::gc_finalize_end) == 1);
}

TEST_CASE("mono hooks: paused from the start, nothing is written until resumed", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.mask = format::MASK_GC;
  c.start_paused = true;
  h.install(c);
  auto& cbs = h.fake.callbacks;
  on_thread([&] { cbs.gc_event(nullptr, MONO_GC_EVENT_START, 0, 1); });
  CHECK(paused());
  CHECK(event_mask() == format::MASK_GC);  // the mask asked for, kept aside
  REQUIRE(resume());
  on_thread([&] { cbs.gc_event(nullptr, MONO_GC_EVENT_END, 0, 1); });
  const Decoded d = h.flush();
  auto gcs = d.of(EventKind::gc_event);
  REQUIRE(gcs.size() == 1);
  CHECK(gcs[0]->code == format::GC_EVENT_END);
}

TEST_CASE("mono hooks: the runtime's start and shutdown reach the agent - the AOT id is written", "[hooks][mono_hooks]") {
  Hooked h;
  h.fake.aotid = "aot-1234";
  h.install(HookConfig{});
  auto& cbs = h.fake.callbacks;
  const int init0 = g_initialized_calls, begin0 = g_shutdown_begin_calls, end0 = g_shutdown_end_calls;
  CHECK_FALSE(state::runtime_ready());
  cbs.runtime_initialized(nullptr);
  CHECK(state::runtime_ready());
  CHECK(g_initialized_calls == init0 + 1);
  // Once initialised, a class is named by the runtime's own type name.
  MonoImage* img = h.fake.image("/app/a.dll", "GUID");
  MonoClass* k = h.fake.klass(img, "N", "G`1", nullptr, "N.G<int>");
  h.fake.callbacks.vtable_loaded(nullptr, h.fake.vtable(k, h.fake.domain(1)));
  cbs.runtime_shutdown_begin(nullptr);
  CHECK(g_shutdown_begin_calls == begin0 + 1);
  cbs.runtime_shutdown_end(nullptr);
  CHECK(g_shutdown_end_calls == end0 + 1);
  const Decoded d = h.flush();
  auto aot = d.of(EventKind::aot_id);
  REQUIRE(aot.size() == 1);
  CHECK(aot[0]->name == "aot-1234");
  auto classes = d.of(EventKind::class_load);
  REQUIRE(classes.size() == 1);
  CHECK(classes[0]->name == "N.G<int>");
}

TEST_CASE("mono hooks: attached late, what was loaded already is described at install", "[hooks][mono_hooks]") {
  Hooked h;
  MonoImage* img = h.fake.image("/app/prog.exe", "GUID-P");
  MonoAssembly* a = h.fake.assembly(img, "prog");
  h.fake.domain(1);
  h.fake.allocations_enabled = h.fake.clauses_enabled = false;  // too late for those
  HookConfig c;
  c.late = true;
  h.install(c);
  const Decoded d = h.flush();
  auto dl = d.of(EventKind::domain_load);
  REQUIRE(dl.size() == 1);
  CHECK(dl[0]->ptr == 1);
  auto al = d.of(EventKind::assembly_load);
  REQUIRE(al.size() == 1);
  CHECK(al[0]->ptr == u(a));
  CHECK(al[0]->ptr2 == u(img));
  CHECK(al[0]->name == "prog");
  REQUIRE(d.count(EventKind::image_load) == 1);
  CHECK(d.of(EventKind::image_load)[0]->name == "/app/prog.exe");
}

TEST_CASE("mono hooks: detach takes every callback out, and nothing is written after", "[hooks][mono_hooks]") {
  Hooked h;
  HookConfig c;
  c.calls = true;
  using namespace format;
  c.mask = MASK_EXCEPTION | MASK_MONITOR | MASK_GC | MASK_GC_ALLOC | MASK_GC_MOVE | MASK_GC_ROOT | MASK_GC_HANDLE |
           MASK_GC_FINALIZATION | MASK_JIT;
  c.roots_every_gc = true;
  h.install(c);
  CHECK(h.fake.callbacks.method_enter);
  CHECK(h.fake.callbacks.gc_allocation);
  CHECK(h.fake.callbacks.gc_roots);  // roots-every-gc with root events
  auto thread_started = h.fake.callbacks.thread_started;
  auto gc_event = h.fake.callbacks.gc_event;
  detach();
  CHECK_FALSE(state::active());
  std::vector<std::string> left;
#define MLPD_LEFT(name) \
  if (h.fake.callbacks.name) left.push_back(#name);
  MLPD_FAKE_MONO_CALLBACKS(MLPD_LEFT)
#undef MLPD_LEFT
  CHECK(left == std::vector<std::string>{});
  // A runtime thread already inside a callback of ours when the agent detached: it returns at once.
  on_thread([&] {
    thread_started(nullptr, 0x7001);
    gc_event(nullptr, MONO_GC_EVENT_START, 0, 1);
  });
  const Decoded d = h.flush();
  CHECK(d.count(EventKind::thread_start) == 0);
  CHECK(d.count(EventKind::gc_event) == 0);
}
