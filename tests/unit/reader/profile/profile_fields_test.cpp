// The profile model's field lists (Fields<T>, mlpd/profile.h), by which the one-thread and the parallel
// builds are compared whole (tests/support/profile_fingerprint.h): each list names as many fields as
// its struct has (a field added to a model struct and not to its list fails here, so the comparison
// covers every field by construction), and the fingerprint changes when any one field of a built
// Profile changes (none is visited and then left out).
#include "mlpd_catch.h"

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "event_gen.h"
#include "mlpd/input.h"
#include "mlpd/profile.h"
#include "profile_fingerprint.h"

using namespace mlpd;
using namespace mlpd::profile;
using namespace mlpd::test;

namespace {

// The number of fields of an aggregate: the most initializers T{...} takes, each of which converts to
// any field's type (C arrays would count their elements: the model has none, std::array instead).
struct AnyField {
  template <class T>
  operator T() const;  // never called: only in requires-expressions
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
template <class T, class... A>
constexpr size_t field_count() {
  if constexpr (requires { T{A{}..., AnyField{}}; })
    return field_count<T, A..., AnyField>();
  else
    return sizeof...(A);
}
#pragma GCC diagnostic pop

struct Counter {
  size_t n = 0;
  template <class F>
  void operator()(const char*, const F&) {
    ++n;
  }
};

template <class T>
size_t listed_count() {
  T x{};
  Counter c;
  Fields<T>::visit(x, c);
  return c.n;
}

template <class T>
void check_list() {
  static_assert(std::is_aggregate_v<T>);
  INFO(typeid(T).name());
  CHECK(listed_count<T>() == field_count<T>());
}

}  // namespace

// A struct of the model whose list forgot a field: what the check below catches.
struct Forgotten {
  uint64_t a = 0;
  std::string b;
  bool c = false;  // added later, not listed
};
template <>
struct mlpd::profile::Fields<Forgotten> {
  template <class S, class V>
  static void visit(S& f, V& v) {
    v("a", f.a), v("b", f.b);
  }
};

TEST_CASE("profile fields: each model struct's list names all its fields", "[profile][fields]") {
  static_assert(field_count<Forgotten>() == 3);
  CHECK(listed_count<Forgotten>() != field_count<Forgotten>());  // the check fails for it
  check_list<FileHeader>();
  check_list<Problem>();
  check_list<DecodeSummary>();
  check_list<Frame>();
  check_list<Node>();
  check_list<CallStat>();
  check_list<MethodStat>();
  check_list<TypeStat>();
  check_list<ThreadInfo>();
  check_list<GcPause>();
  check_list<CounterInfo>();
  check_list<RecordedInterval>();
  check_list<HeapshotInfo>();
  check_list<detail::ProfileFields>();
  // The Profile itself is its fields and nothing more (no member of its own outside the list).
  CHECK(sizeof(Profile) == sizeof(detail::ProfileFields));
  Counter c;
  Profile p;
  visit_fields(p, c);
  CHECK(c.n == field_count<detail::ProfileFields>());
}

namespace {

template <class T>
struct IsVec : std::false_type {};
template <class T, class A>
struct IsVec<std::vector<T, A>> : std::true_type {};
template <class T>
struct IsArr : std::false_type {};
template <class T, size_t N>
struct IsArr<std::array<T, N>> : std::true_type {};

// Walks a Profile down to its leaves (numbers, strings; a vector is a leaf too, as a whole: one more
// element), changing the one numbered `target` (or none: counting them).
struct Perturb {
  size_t target = SIZE_MAX, seen = 0;
  std::string path, changed;
  template <class F>
  void operator()(const char* name, F& x) {
    const size_t len = path.size();
    path += '.';
    path += name;
    walk(x);
    path.resize(len);
  }
  bool mine() {
    if (seen++ != target) return false;
    changed = path;
    return true;
  }
  template <class F>
  void walk(F& x) {
    if constexpr (std::is_same_v<F, std::string>) {
      if (mine()) x += '~';
    } else if constexpr (std::is_same_v<F, bool>) {
      if (mine()) x = !x;
    } else if constexpr (std::is_same_v<F, double>) {
      if (mine()) x += 1;
    } else if constexpr (std::is_enum_v<F>) {
      if (mine()) x = static_cast<F>(static_cast<std::underlying_type_t<F>>(x) + 1);
    } else if constexpr (std::is_integral_v<F>) {
      if (mine()) x ^= 1;
    } else if constexpr (IsVec<F>::value || IsArr<F>::value) {
      if constexpr (IsVec<F>::value)
        if (mine()) x.emplace_back();
      for (size_t i = 0; i < x.size(); ++i) {
        const size_t len = path.size();
        path += '[' + std::to_string(i) + ']';
        walk(x[i]);
        path.resize(len);
      }
    } else {
      visit_fields(x, *this);
    }
  }
};

Profile small_profile() {
  // Calls, an allocation with a backtrace, a throw, a monitor contention, a collection, a heapshot,
  // a counter, threads named, started and ended: most of the model's vectors have an element.
  auto ev = [](EventKind k, uint64_t t) {
    Event e;
    e.kind = k;
    e.time = t;
    return e;
  };
  std::vector<Event> es;
  Event jit = ev(EventKind::method_jit, 1001);
  jit.method = 0x1000;
  jit.ptr = 0xA000;
  jit.size = 64;
  jit.name = "A:Run ()";
  es.push_back(jit);
  Event en = ev(EventKind::method_enter, 1002);
  en.method = 0x1000;
  es.push_back(en);
  Event al = ev(EventKind::alloc, 1003);
  al.ptr = 0x5000;
  al.obj = 0x9000;
  al.size = 24;
  al.has_backtrace = true;
  al.backtrace = {0x1000};
  es.push_back(al);
  Event th = ev(EventKind::exception_throw, 1004);
  th.obj = 0x9000;
  es.push_back(th);
  Event mo = ev(EventKind::monitor, 1005);
  mo.code = 1;
  mo.obj = 0x8000;
  es.push_back(mo);
  Event gs = ev(EventKind::gc_event, 1006);
  gs.code = 1;
  es.push_back(gs);
  Event ge = ev(EventKind::gc_event, 1007);
  ge.code = 5;
  es.push_back(ge);
  es.push_back(ev(EventKind::heap_start, 1008));
  es.push_back(ev(EventKind::heap_end, 1009));
  Event lv = ev(EventKind::method_leave, 1010);
  lv.method = 0x1000;
  es.push_back(lv);
  Event tn = ev(EventKind::thread_name, 1011);
  tn.ptr = 0x7000;
  tn.name = "worker";
  es.push_back(tn);
  Event ts = ev(EventKind::thread_start, 1012);
  ts.ptr = 0x7000;
  es.push_back(ts);
  Event te = ev(EventKind::thread_end, 1013);
  te.ptr = 0x7000;
  es.push_back(te);
  const std::vector<uint8_t> file = build_file({ThreadBuffer{0x7000, 1000, es}});
  auto input = Input::from_memory(file.data(), file.size());
  Profile p;
  build_profile(*input, p, BuildOptions{});
  return p;
}

}  // namespace

TEST_CASE("profile fields: the fingerprint changes with every field of a built profile", "[profile][fields]") {
  const Profile base = small_profile();
  REQUIRE(base.call_count() == 1);
  REQUIRE(base.alloc_objects() == 1);
  const std::string print = profile_fingerprint(base);
  Perturb count;
  Profile scratch = base;
  visit_fields(scratch, count);
  REQUIRE(count.seen > 100);
  for (size_t i = 0; i < count.seen; ++i) {
    Profile q = base;
    Perturb one;
    one.target = i;
    visit_fields(q, one);
    INFO("field " << one.changed);
    REQUIRE(!one.changed.empty());
    CHECK(profile_fingerprint(q) != print);
  }
}
