// The heap walk's events as the agent writes them into a thread's buffer (rt/events.h): heap objects
// with reference chunks, and the metadata (vtable, class) described inline just before first use.
// Written through a ThreadLog, flushed, decoded: every field must come back, and the strict
// reference check must pass (the inline descriptions count as "before use").
#include "mlpd_catch.h"

#include <string>
#include <vector>

#include "mlpd/agent/flusher.h"
#include "mlpd/checks.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/rt/events.h"

using namespace mlpd;

namespace {

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

}  // namespace

TEST_CASE("heap walk events and inline metadata decode as written", "[agent][heapshot]") {
  rt::BufferPool pool(65536, 64);
  rt::FlushQueue queue;
  rt::WriterShared shared;
  shared.pool = &pool;
  shared.queue = &queue;
  rt::ThreadRegistry registry{shared};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::Flusher flusher{shared, registry, meta};

  // The image is described in the shared MetaLog, as the image-load callback does.
  Event image;
  image.kind = EventKind::image_load;
  image.ptr = 0x5000;
  image.name = "/x/prog.exe";
  image.mvid = "00000000-0000-0000-0000-000000000000";
  meta.add(image, rt::now_ns);

  constexpr uint64_t kClass = 0x6000, kVtable = 0x7008, kObj = 0x7f0000001000;
  rt::ThreadLog* log = registry.get();
  REQUIRE(log);
  const std::string name = "Ns.Outer/Inner";
  rt::write_bare(*log, format::TYPE_HEAP | format::TYPE_HEAP_START, rt::now_ns());
  rt::write_class_load(*log, rt::now_ns(), kClass, image.ptr, name.data(), name.size());
  rt::write_vtable_load(*log, rt::now_ns(), kVtable, 0, kClass);
  // An object with 130 references, in two chunks as SGen hands them over: 128 with the size, 2 without.
  std::vector<uint64_t> offsets, refs;
  for (uint64_t i = 0; i < 130; ++i) {
    offsets.push_back(32 + 8 * i);
    refs.push_back(i % 7 == 0 ? 0 : kObj + 64 * (i + 1));  // NULLs included
  }
  rt::write_heap_object(*log, rt::now_ns(), kObj, kVtable, 1072, 1, offsets.data(), refs.data(), 128);
  rt::write_heap_object(*log, rt::now_ns(), kObj, kVtable, 0, 1, offsets.data() + 128, refs.data() + 128, 2);
  rt::write_heap_object(*log, rt::now_ns(), kObj + 0x2000, kVtable, 24, 0, nullptr, nullptr, 0);
  rt::write_bare(*log, format::TYPE_HEAP | format::TYPE_HEAP_END, rt::now_ns());
  registry.thread_exit();

  std::vector<uint8_t> file;
  encode_file_header(FileHeader{}, file);
  flusher.round(file, true, rt::now_ns());
  auto input = Input::from_memory(file.data(), file.size());
  Collector c;
  const DecodeSummary s = decode(*input, c);
  for (const std::string& p : c.problems) INFO(p);
  CHECK(c.problems.empty());
  CHECK(s.problems == 0);

  std::vector<const Event*> heap;
  for (const Event& e : c.events) {
    if (e.kind != EventKind::image_load) heap.push_back(&e);
  }
  REQUIRE(heap.size() == 7);
  CHECK(heap[0]->kind == EventKind::heap_start);
  CHECK(heap[1]->kind == EventKind::class_load);
  CHECK(heap[1]->ptr == kClass);
  CHECK(heap[1]->ptr2 == image.ptr);
  CHECK(heap[1]->name == name);
  CHECK(heap[2]->kind == EventKind::vtable_load);
  CHECK(heap[2]->ptr == kVtable);
  CHECK(heap[2]->ptr2 == 0);
  CHECK(heap[2]->ptr3 == kClass);
  for (int i = 3; i <= 4; ++i) {
    const Event& e = *heap[i];
    CHECK(e.kind == EventKind::heap_object);
    CHECK(e.obj == kObj);
    CHECK(e.ptr == kVtable);
    CHECK(e.generation == 1);
    const size_t first = i == 3 ? 0 : 128;
    CHECK(e.size == (i == 3 ? 1072u : 0u));
    REQUIRE(e.refs.size() == (i == 3 ? 128u : 2u));
    for (size_t k = 0; k < e.refs.size(); ++k) {
      CHECK(e.refs[k].offset == offsets[first + k]);  // offsets restart at the object in each chunk
      CHECK(e.refs[k].obj == refs[first + k]);
    }
  }
  CHECK(heap[5]->kind == EventKind::heap_object);
  CHECK(heap[5]->obj == kObj + 0x2000);
  CHECK(heap[5]->size == 24);
  CHECK(heap[5]->generation == 0);
  CHECK(heap[5]->refs.empty());
  CHECK(heap[6]->kind == EventKind::heap_end);
}
