// decode_heapshots() (the heapshots on every core, issue 25) must fill a HeapshotCollector exactly as
// decode() does: the same heapshots (index, thread, times, completeness, totals, roots, classes and
// their names), the same problems with their offsets, the same stray objects and summary -- over random
// files of several threads whose heapshots span buffers (a second heap_start on a thread replacing its
// open heapshot, objects outside any, continuation chunks, classes described before and after), and
// corrupted copies of them, with 2, 3 and 4 workers and a ring smaller than the file.
#include "mlpd_catch.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/decoder.h"
#include "mlpd/heap/heapshots.h"

using namespace mlpd;
using namespace mlpd::test;
using Bytes = std::vector<uint8_t>;

namespace {

std::string state(const HeapshotCollector& c, const DecodeSummary& s) {
  std::ostringstream o;
  o << "summary " << s.header_ok << ' ' << s.buffers << ' ' << s.events << ' ' << s.bytes << ' ' << s.problems << ' '
    << s.truncated << "\nstray " << c.stray_objects() << '\n';
  for (const HeapshotSummary& h : c.heapshots()) {
    o << "shot " << h.index << " thread " << h.thread << ' ' << h.start_time << ' ' << h.end_time << ' ' << h.time_ns
      << ' ' << h.complete << ' ' << h.objects << ' ' << h.bytes << ' ' << h.roots << '\n';
    for (const HeapshotClass& k : h.classes)
      o << "  " << k.klass << ' ' << k.vtable << ' ' << k.name << ' ' << k.objects << ' ' << k.bytes << '\n';
  }
  for (const Problem& p : c.problems()) o << "problem " << p.offset << ' ' << p.buffer << ' ' << p.message << '\n';
  return o.str();
}

std::string collect(const Bytes& file, unsigned jobs, size_t* shots = nullptr) {
  HeapshotCollector c;
  auto in = Input::from_memory(file.data(), file.size());
  const DecodeSummary s = jobs == 1 ? decode(*in, c) : decode_heapshots(*in, c, {}, jobs);
  c.finish();
  if (shots) *shots = c.heapshots().size();
  return state(c, s);
}

// A buffer of thread `thread`: heap events (objects of 12 vtables, 8 of them described), with now and
// then a heap_start, heap_end, class or vtable description, and other events.
ThreadBuffer heap_buffer(EventGen& gen, uint64_t thread, uint64_t time_base) {
  ThreadBuffer b{thread, time_base, {}};
  const size_t n = 1 + gen.below(60);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = gen.below(100);
    Event e;
    if (r < 3) {
      e = gen.make(EventKind::heap_start);
    } else if (r < 6) {
      e = gen.make(EventKind::heap_end);
    } else if (r < 70) {
      e = gen.make(EventKind::heap_object);
      e.ptr = 0x1000 * (1 + gen.below(12));
      e.size = gen.chance(15) ? 0 : 16 + gen.below(400);
    } else if (r < 80) {
      e = gen.make(EventKind::heap_root);
    } else if (r < 85) {
      e = gen.make(EventKind::vtable_load);
      e.ptr = 0x1000 * (1 + gen.below(8));
      e.ptr3 = 0x100 * (1 + gen.below(6));  // some vtables share a class
    } else if (r < 90) {
      e = gen.make(EventKind::class_load);
      e.ptr = 0x100 * (1 + gen.below(6));
      e.name = "Class" + std::to_string(gen.below(50));
    } else {
      e = gen.make_any();
    }
    b.events.push_back(std::move(e));
  }
  return b;
}

}  // namespace

TEST_CASE("decode_heapshots: the same as decode() on valid and corrupted files", "[heapshots][parallel]") {
  EventGen gen(2525);
  std::vector<ThreadBuffer> bufs;
  for (int i = 0; i < 90; ++i) bufs.push_back(heap_buffer(gen, 0x100 + gen.below(3), 1000u + i));
  const Bytes good = build_file(bufs);
  size_t shots = 0;
  const std::string want = collect(good, 1, &shots);
  REQUIRE(shots > 10);
  for (unsigned jobs : {2u, 3u, 4u}) {
    INFO("jobs " << jobs);
    CHECK(collect(good, jobs) == want);
  }
  for (int round = 0; round < 120; ++round) {
    INFO("round " << round);
    Bytes bad = good;
    const int changes = 1 + static_cast<int>(gen.below(4));
    for (int c = 0; c < changes; ++c) bad[gen.below(bad.size())] = static_cast<uint8_t>(gen.below(256));
    if (gen.chance(20)) bad.resize(gen.below(bad.size()));
    const std::string one = collect(bad, 1);
    CHECK(collect(bad, 2) == one);
    CHECK(collect(bad, 4) == one);
  }
}
