// What has been described (runtime-hooks/src/mono/described.h): dependencies first, each pointer once
// (unless forced), the per-thread cache that skips the lock, and the queries of the heap walk and
// the sample drain. Mono is replaced by the fake of tests/support/fake_mono.h.
#include "mlpd_catch.h"
#include <string>
#include <thread>
#include <vector>

#include "described.h"
#include "fake_mono.h"
#include "mlpd/buffer_decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/rt/meta_log.h"
#include "state.h"

using namespace mlpd;
using namespace mlpd::hooks;

namespace {

template <class T>
T* fake(uint64_t address) {
  return reinterpret_cast<T*>(address);
}

// Fake metadata (tests/support/fake_mono.h): class 0x2000 "Inner" (in image 0x1000) is nested in class
// 0x2100 "Outer" of namespace N; vtable 0x3000 is of class 0x2000 in domain 0x4000; methods at 0x5000...
void make_fakes(test::FakeMono& m) {
  MonoImage* image = m.image("/app/a.dll", "GUID", 0x1000);
  MonoClass* outer = m.klass(image, "N", "Outer", nullptr, "N.Outer", 0x2100);
  MonoClass* inner = m.klass(image, "N", "Inner", outer, "N.Outer/Inner", 0x2000);
  m.vtable(inner, m.domain(1, 0x4000), 0x3000);
  using MethodSet = decltype(described::DescribedCache::methods);
  for (uint64_t at : {uint64_t{0x5000}, uint64_t{0x5100}, uint64_t{0x6000}, uint64_t{0x6800},
                      0x5000 + (uint64_t{MethodSet::kSlots} << MethodSet::kShift)})
    m.method("N.C:M ()", "M", at);
}

// A MetaLog, fake Mono and a fresh set of described pointers for one test; put back afterwards.
struct Fixture {
  test::FakeMono fake;
  rt::MetaLog meta{1, 0};
  state::State st;
  state::State* saved_g = state::g;

  Fixture() {
    st.env.meta = &meta;
    state::g = &st;
    make_fakes(fake);
    REQUIRE(described::init());
    described::reset_for_tests();
    described::release_thread_cache();
  }
  ~Fixture() {
    described::release_thread_cache();
    described::reset_for_tests();
    state::g = saved_g;
    CHECK(fake.problems == std::vector<std::string>{});
  }
  uint64_t count(EventKind k) {
    uint64_t c[kEventKindCount] = {};
    meta.add_counts_to(c);
    return c[static_cast<size_t>(k)];
  }
};

// The method_jit events the MetaLog holds now (taken out of it): (method, code start, code size).
struct Jitted {
  uint64_t method, code, size;
};
std::vector<Jitted> take_jitted(rt::MetaLog& meta) {
  std::vector<uint8_t> bytes;
  meta.take(bytes, 1);
  std::vector<Jitted> out;
  size_t at = 0;
  while (at + format::kBufferHeaderSize <= bytes.size()) {
    BufferHeader h;
    decode_buffer_header(bytes.data() + at, h);
    BufferDecoder dec(h, bytes.data() + at + format::kBufferHeaderSize, 0);
    Event e;
    std::string problem;
    uint64_t offset = 0;
    while (dec.next(e, problem, offset))
      if (e.kind == EventKind::method_jit) out.push_back({e.method, e.ptr, e.size});
    REQUIRE(problem.empty());
    at += format::kBufferHeaderSize + h.length;
  }
  return out;
}

}  // namespace

TEST_CASE("described: a vtable brings its class and image first, each once", "[hooks][described]") {
  Fixture f;
  described::ensure_vtable(fake<MonoVTable>(0x3000));
  CHECK(f.count(EventKind::image_load) == 1);
  CHECK(f.count(EventKind::class_load) == 1);
  CHECK(f.count(EventKind::vtable_load) == 1);
  described::ensure_vtable(fake<MonoVTable>(0x3000));
  described::ensure_class(fake<MonoClass>(0x2000));
  described::ensure_image(fake<MonoImage>(0x1000));
  CHECK(f.count(EventKind::image_load) == 1);
  CHECK(f.count(EventKind::class_load) == 1);
  CHECK(f.count(EventKind::vtable_load) == 1);
  // The runtime's own load callbacks describe again (addresses are reused after a domain unload),
  // without describing the dependencies again.
  described::ensure_vtable(fake<MonoVTable>(0x3000), true);
  CHECK(f.count(EventKind::vtable_load) == 2);
  CHECK(f.count(EventKind::class_load) == 1);
  described::ensure_class(fake<MonoClass>(0x2000), true);
  CHECK(f.count(EventKind::class_load) == 2);
  described::ensure_image(nullptr);
  described::ensure_class(nullptr);
  CHECK(f.count(EventKind::image_load) == 1);

  REQUIRE(described::try_lock());
  CHECK(described::vtable_known_locked(0x3000));
  CHECK(described::class_known_locked(0x2000));
  CHECK_FALSE(described::vtable_known_locked(0x3010));
  CHECK_FALSE(described::class_known_locked(0x2100));  // the outer class was only named
  CHECK_FALSE(described::try_lock());  // held: the heap walk would not wait
  described::unlock();
}

TEST_CASE("described: methods once by ensure_method, every time by describe_method", "[hooks][described]") {
  Fixture f;
  CHECK_FALSE(described::method_known(0x5000));
  described::ensure_method(fake<MonoMethod>(0x5000));
  described::ensure_method(fake<MonoMethod>(0x5000));
  CHECK(f.count(EventKind::method_jit) == 1);
  CHECK(described::method_known(0x5000));
  described::describe_method(fake<MonoMethod>(0x5000), 0x7000, 64);  // jit_done, with its code
  CHECK(f.count(EventKind::method_jit) == 2);
  described::ensure_method(nullptr);
  CHECK(f.count(EventKind::method_jit) == 2);
}

TEST_CASE("described: a repeated jit_done (same method and code range) is told apart", "[hooks][described]") {
  Fixture f;
  auto* m = fake<MonoMethod>(0x5000);
  CHECK_FALSE(described::jit_repeat(m, 0x7000, 64));
  CHECK(described::jit_repeat(m, 0x7000, 64));   // Mono 6.12: the same code found again
  CHECK_FALSE(described::jit_repeat(m, 0x9000, 64));  // new code (another domain): described again
  CHECK(described::jit_repeat(m, 0x9000, 64));
  CHECK_FALSE(described::jit_repeat(fake<MonoMethod>(0x5100), 0x9000, 64));  // another method
  CHECK_FALSE(described::jit_repeat(m, 0, 0));  // no code range: never a repeat
  described::method_freed(m);                   // its address may come back as another method's
  CHECK_FALSE(described::jit_repeat(m, 0x9000, 64));
}

TEST_CASE("described: the per-thread cache answers without the sets, and misses go to them", "[hooks][described]") {
  Fixture f;
  auto* m = fake<MonoMethod>(0x5000);
  using MethodSet = decltype(described::DescribedCache::methods);
  auto* same_slot = fake<MonoMethod>(0x5000 + (uint64_t{MethodSet::kSlots} << MethodSet::kShift));
  CHECK_FALSE(described::tls_cache->methods.contains(0x5000));
  described::ensure_method_cached(m);
  CHECK(f.count(EventKind::method_jit) == 1);
  CHECK(described::tls_cache->methods.contains(0x5000));
  // Forget the sets: only the cache remembers m now, so a cached check must not describe it again.
  described::reset_for_tests();
  described::ensure_method_cached(m);
  CHECK(f.count(EventKind::method_jit) == 1);
  // A method of the same slot evicts m; m's next check goes to the (forgotten) sets again.
  described::ensure_method_cached(same_slot);
  CHECK(f.count(EventKind::method_jit) == 2);
  described::ensure_method_cached(m);
  CHECK(f.count(EventKind::method_jit) == 3);

  auto* vt = fake<MonoVTable>(0x3000);
  described::ensure_vtable_cached(vt);
  CHECK(f.count(EventKind::vtable_load) == 1);
  described::reset_for_tests();
  described::ensure_vtable_cached(vt);
  CHECK(f.count(EventKind::vtable_load) == 1);

  // Another thread has a cache of its own, empty at first: its check goes to the sets (which know
  // m again now), so nothing new is described, and m is then in its cache.
  described::ensure_method(m);
  const uint64_t before = f.count(EventKind::method_jit);
  bool empty_at_first = false, cached_after = false;
  std::thread([&] {
    empty_at_first = !described::tls_cache->methods.contains(0x5000);
    described::ensure_method_cached(m);
    cached_after = described::tls_cache->methods.contains(0x5000);
  }).join();
  CHECK(empty_at_first);
  CHECK(cached_after);
  CHECK(f.count(EventKind::method_jit) == before);
  CHECK(described::tls_cache->methods.contains(0x5000));  // this thread's own cache is untouched
}

TEST_CASE("described: class names before the runtime is initialised are built from the nesting", "[hooks][described]") {
  Fixture f;
  REQUIRE_FALSE(state::runtime_ready());
  described::ensure_class(fake<MonoClass>(0x2000));
  std::vector<uint8_t> bytes;
  f.meta.take(bytes, 1);
  const std::string all(bytes.begin(), bytes.end());
  CHECK(all.find("N.Outer/Inner") != std::string::npos);
}

TEST_CASE("described: a deferred method is described at its first reference, with its code range", "[hooks][described]") {
  Fixture f;
  auto* m = fake<MonoMethod>(0x5000);
  REQUIRE(described::defer_method(m, 0x7000, 64));  // jit_done, lazily: nothing named yet
  CHECK(f.count(EventKind::method_jit) == 0);
  CHECK_FALSE(described::method_known(0x5000));
  described::ensure_method_cached(m);  // the first event that references it
  described::ensure_method(m);
  auto jitted = take_jitted(f.meta);
  REQUIRE(jitted.size() == 1);
  CHECK(jitted[0].method == 0x5000);
  CHECK(jitted[0].code == 0x7000);
  CHECK(jitted[0].size == 64);
  CHECK(described::method_known(0x5000));

  // Described already (an event came before its jit_done): not deferred; the caller describes it again.
  CHECK_FALSE(described::defer_method(m, 0x8000, 32));

  // Freed before any reference: never named, and a later reference (a new method at the same
  // address) is described without the freed one's range.
  auto* d = fake<MonoMethod>(0x6000);
  REQUIRE(described::defer_method(d, 0x9000, 16));
  described::method_freed(d);
  described::ensure_method(d);
  jitted = take_jitted(f.meta);
  REQUIRE(jitted.size() == 1);
  CHECK(jitted[0].method == 0x6000);
  CHECK(jitted[0].code == 0);

  // A reference that named the method while its jit_done deferred it still gets the range: here the
  // deferral comes between ensure_method's look-up and its describe (as another thread could do).
  auto* r = fake<MonoMethod>(0x6800);
  REQUIRE(described::defer_method(r, 0xa000, 8));
  described::describe_method(r, 0, 0);
  jitted = take_jitted(f.meta);
  REQUIRE(jitted.size() == 1);
  CHECK(jitted[0].code == 0xa000);
  CHECK(jitted[0].size == 8);
}
