// The heap graph of a heapshot (mlpd/heap_graph.h) and what is computed from it (mlpd/retention.h),
// on hand-made files: exact retained sizes (objects and MAT's class figure), root labels from the
// registered ranges, paths with offsets, unreached objects; and hostile input: references to no
// object, roots to no object, objects listed twice, cycles, continuation chunks away from their
// object, a heapshot without HEAP_END, a memory budget too small.
#include "mlpd_catch.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlpd/budget.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/heap_graph.h"
#include "mlpd/retention.h"

using namespace mlpd;
using namespace mlpd::views;

namespace {

constexpr uint64_t kThread = 0x1000;

struct FileBuilder {
  std::vector<uint8_t> out;
  BufferEncoder enc{kThread, 1000};
  uint64_t time = 1000;
  FileBuilder() {
    FileHeader h;
    h.arch = "x86-64";
    h.os = "linux";
    encode_file_header(h, out);
  }
  void add(Event e) {
    e.time = ++time;
    enc.add(e);
  }
  void klass(uint64_t vtable, uint64_t k, const std::string& name) {
    Event c;
    c.kind = EventKind::class_load;
    c.ptr = k;
    c.ptr2 = 0x10;
    c.name = name;
    add(c);
    Event v;
    v.kind = EventKind::vtable_load;
    v.ptr = vtable;
    v.ptr3 = k;
    add(v);
  }
  void range(uint64_t start, uint64_t size, uint8_t source, uint64_t key, const std::string& name) {
    Event e;
    e.kind = EventKind::heap_root_register;
    e.ptr = start;
    e.size = size;
    e.code = source;
    e.ptr2 = key;
    e.name = name;
    add(e);
  }
  void bare(EventKind k) {
    Event e;
    e.kind = k;
    add(e);
  }
  void object(uint64_t obj, uint64_t vtable, uint64_t size, std::vector<HeapRef> refs = {}) {
    Event e;
    e.kind = EventKind::heap_object;
    e.obj = obj;
    e.ptr = vtable;
    e.size = size;
    e.refs = std::move(refs);
    add(e);
  }
  void roots(std::vector<RootRef> r) {
    Event e;
    e.kind = EventKind::heap_root;
    e.roots = std::move(r);
    add(e);
  }
  std::vector<uint8_t> finish() {
    enc.finish_into(out);
    return out;
  }
};

struct Analysed {
  std::vector<std::unique_ptr<RetentionAnalysis>> shots;
  std::vector<Problem> problems;
};

Analysed analyse(const std::vector<uint8_t>& file, MemoryBudget* budget = nullptr) {
  std::vector<HeapGraph> graphs;
  HeapGraphCollector::Options o;
  o.offsets = true;
  o.budget = budget;
  o.done = [&graphs](HeapGraph&& g) { graphs.push_back(std::move(g)); };
  HeapGraphCollector c(std::move(o));
  std::unique_ptr<Input> in = Input::from_memory(file.data(), file.size());
  DecodeOptions d;
  d.budget = budget;
  decode(*in, c, d);
  c.finish();
  Analysed a;
  a.problems = c.problems();
  RetentionOptions ro;
  ro.budget = budget;
  for (HeapGraph& g : graphs) {
    c.label(g);
    a.shots.push_back(std::make_unique<RetentionAnalysis>(std::move(g), c.names(), ro));
  }
  return a;
}

const RetainedClass* find_class(const Retention& r, const std::string& name) {
  for (const RetainedClass& c : r.classes)
    if (c.name == name) return &c;
  return nullptr;
}

// Classes: Holder (vtable 0x100), Node (0x200), Leaf (0x300).
FileBuilder with_classes() {
  FileBuilder f;
  f.klass(0x100, 0x1100, "Holder");
  f.klass(0x200, 0x1200, "Node");
  f.klass(0x300, 0x1300, "Leaf");
  f.range(0x9000, 64, 3, 0x100, "Static Fields");
  f.range(0x7000, 4096, 1, kThread, "Thread Stack");
  return f;
}

}  // namespace

TEST_CASE("retention: exact retained sizes, MAT's class figure, roots, paths, unreached", "[retention]") {
  FileBuilder f = with_classes();
  f.bare(EventKind::heap_start);
  f.roots({{0x9008, 0xa000}, {0x7100, 0xb000}, {1, 0xc000}});
  // A static Holder -> Node -> Node -> Leaf (a chain: the inner Node is below a Node), and a Leaf
  // shared by the Holder's Node and a stack-held Node: nobody but the virtual root dominates it.
  f.object(0xa000, 0x100, 24, {{16, 0xa100}});
  f.object(0xa100, 0x200, 32, {{16, 0xa200}, {24, 0xd000}});
  f.object(0xa200, 0x200, 32, {{16, 0xa300}});
  f.object(0xa300, 0x300, 40);
  f.object(0xb000, 0x200, 32, {{16, 0xd000}});
  f.object(0xd000, 0x300, 40);
  f.object(0xc000, 0x300, 40);                     // held by the finalizer queue
  f.object(0xe000, 0x300, 40, {{16, 0xe000}});     // unreached, a self-reference
  f.bare(EventKind::heap_end);
  const Analysed a = analyse(f.finish());
  REQUIRE(a.problems.empty());
  REQUIRE(a.shots.size() == 1);
  const Retention& r = a.shots[0]->result();
  REQUIRE(r.error.empty());
  CHECK(r.objects == 8);
  CHECK(r.bytes == 24 + 32 * 3 + 40 * 4);
  CHECK(r.unreached_objects == 1);
  CHECK(r.unreached_bytes == 40);
  CHECK(r.root_objects == 3);
  // Holder retains itself, both chain Nodes and the chain's Leaf, not the shared Leaf.
  REQUIRE(r.classes.size() == 3);
  CHECK(find_class(r, "Holder")->retained == 24 + 32 + 32 + 40);
  // Node: the chain's first Node (retains the inner one) and the stack-held Node, each once.
  const RetainedClass* node = find_class(r, "Node");
  REQUIRE(node);
  CHECK(node->objects == 3);
  CHECK(node->shallow == 96);
  CHECK(node->retained == (32 + 32 + 40) + 32);
  CHECK(r.classes[0].name == "Node");  // 136 bytes, before Leaf's 120 and Holder's 128
  CHECK(r.classes[1].name == "Holder");
  // Leaf: reached instances at the top of their class: all three reached Leafs (the unreached one out).
  const RetainedClass* leaf = find_class(r, "Leaf");
  REQUIRE(leaf);
  CHECK(leaf->objects == 4);
  CHECK(leaf->retained == 3 * 40);
  // Folded tree: the static Holder first.
  REQUIRE(!r.folded.empty());
  CHECK(r.folded[0].parent == UINT32_MAX);
  CHECK(r.roots[r.folded[0].root].kind == "static");
  CHECK(r.roots[r.folded[0].root].name == "Static Fields: Holder");
  CHECK(r.classes[r.folded[0].klass].name == "Holder");
  CHECK(r.folded[0].retained == 128);
  // Paths.
  uint64_t instances = 0;
  std::vector<RootPath> p = a.shots[0]->paths("Leaf", 5, instances);
  CHECK(instances == 3);
  REQUIRE(p.size() == 3);
  bool chain = false, finalizer = false, shared = false;
  for (const RootPath& x : p) {
    CHECK(x.retained == 40);
    if (x.steps.size() == 4) {
      chain = x.root.kind == "static" && x.steps[0].klass == "Holder" && x.steps[0].offset == -1 &&
              x.steps[1].offset == 16 && x.steps[2].offset == 16 && x.steps[3].offset == 16;
    } else if (x.root.kind == "finalizer_queue") {
      finalizer = x.steps.size() == 1 && x.root.name == "Finalizer Queue";
    } else {
      // The shared Leaf: reached in two steps from the stack Node, in three from the Holder.
      shared = x.steps.size() == 2 && x.root.kind == "stack" && x.steps[1].offset == 16 &&
               x.root.name.rfind("Thread Stack: thread 0x1000", 0) == 0;
    }
  }
  CHECK(chain);
  CHECK(finalizer);
  CHECK(shared);
}

TEST_CASE("retention: hostile heapshots are analysed, what cannot be resolved is counted", "[retention]") {
  FileBuilder f = with_classes();
  f.bare(EventKind::heap_start);
  f.roots({{0x9000, 0xa000}, {0x9000, 0xdead0}, {0x5555, 0xb000}});  // a root to no object; one in no range
  f.object(0xa000, 0x100, 24, {{16, 0xa100}, {24, 0xbad00}});        // a dangling reference
  f.object(0xa100, 0x200, 32, {{16, 0xa000}, {24, 0xa100}});         // a cycle back, a self-reference
  f.object(0xa000, 0x300, 40);                                        // listed twice
  f.object(0xb000, 0x999, 16);                                        // an undescribed vtable
  f.object(0xa100, 0x200, 0, {{8, 0xb000}});                         // a chunk away from its object
  f.bare(EventKind::heap_end);
  f.bare(EventKind::heap_start);  // no heap_end: closed at the end of the file
  f.object(0xf000, 0x200, 32, {{16, 0xf000}});
  const Analysed a = analyse(f.finish());
  REQUIRE(a.shots.size() == 2);
  const Retention& r = a.shots[0]->result();
  REQUIRE(r.error.empty());
  CHECK(r.dangling_refs == 1);
  CHECK(r.dangling_roots == 1);
  CHECK(r.duplicate_objects == 1);
  CHECK(r.objects == 4);
  CHECK(r.unreached_objects == 1);  // the second listing of 0xa000
  CHECK(r.unreached_bytes == 40);
  // The Holder retains itself and its Node (the cycle back does not change that); the Node's stray
  // chunk adds a reference to the unknown-vtable object, which the stack-less root also holds.
  CHECK(find_class(r, "Holder")->retained == 24 + 32);
  const RetainedClass* unknown = find_class(r, "unresolved vtable 0x999");
  REQUIRE(unknown);
  CHECK(unknown->retained == 16);
  bool unknown_root = false;
  for (const RootName& n : r.roots) unknown_root = unknown_root || n.kind == "unknown";
  CHECK(unknown_root);
  uint64_t instances = 0;
  const std::vector<RootPath> p = a.shots[0]->paths("Node", 1, instances);
  REQUIRE(p.size() == 1);
  CHECK(p[0].steps.size() == 2);
  const Retention& open = a.shots[1]->result();
  CHECK_FALSE(open.complete);
  CHECK(open.objects == 1);
  CHECK(open.unreached_objects == 1);  // no roots at all
  CHECK(open.classes[0].retained == 0);
}

TEST_CASE("retention: a long chain needs no stack, a budget too small is a message", "[retention]") {
  FileBuilder f = with_classes();
  f.bare(EventKind::heap_start);
  f.roots({{0x7000, 0x100000}});
  const uint64_t n = 200000;
  for (uint64_t i = 0; i < n; ++i) {
    // Nodes, the last one a Leaf (for the longest path).
    f.object(0x100000 + i * 32, i + 1 == n ? 0x300 : 0x200, 32, {{16, 0x100000 + (i + 1) * 32}});
    if (f.enc.data_size() > 60000) {
      f.enc.finish_into(f.out);
      f.enc.reset(kThread, f.time);
    }
  }
  f.bare(EventKind::heap_end);
  const std::vector<uint8_t> file = f.finish();
  {
    const Analysed a = analyse(file);
    REQUIRE(a.shots.size() == 1);
    const Retention& r = a.shots[0]->result();
    CHECK(r.dangling_refs == 1);  // the last node points past the end
    CHECK(r.classes[0].name == "Node");
    CHECK(r.classes[0].retained == n * 32);
    CHECK(r.folded.size() == 6);  // one per level down to the default fold depth
    uint64_t instances = 0;
    std::vector<RootPath> p = a.shots[0]->paths("Node", 2, instances);
    CHECK(instances == n - 1);
    REQUIRE(p.size() == 2);
    CHECK(p[0].steps.size() == 1);
    CHECK(p[0].retained == n * 32);
    CHECK(p[1].steps.size() == 2);
    p = a.shots[0]->paths("Leaf", 2, instances);
    REQUIRE(p.size() == 1);
    CHECK(p[0].total_steps == n);
    CHECK(p[0].steps.size() == 64);
    CHECK(p[0].steps.back().klass == "Leaf");
    CHECK(p[0].retained == 32);
  }
  auto* probe = new char[1 << 20];
  probe[0] = 1;
  const bool measurable = MemoryBudget::in_use() != 0;
  delete[] probe;
  if (!measurable) return;  // a sanitizer's allocator: the budget is off
  MemoryBudget budget(MemoryBudget::in_use() + (3u << 20));
  const Analysed a = analyse(file, &budget);
  bool said = !a.problems.empty() && a.problems[0].message.find("memory budget") != std::string::npos;
  for (const auto& s : a.shots) said = said || s->result().error.find("memory budget") != std::string::npos;
  CHECK(said);
}

TEST_CASE("heap graph: last_only resolves only the last heapshot", "[retention]") {
  for (const bool last_complete : {true, false}) {
    FileBuilder f = with_classes();
    for (uint64_t shot = 0; shot < 3; ++shot) {
      f.bare(EventKind::heap_start);
      f.roots({{0x9000, 0xa000}});
      for (uint64_t i = 0; i <= shot; ++i) f.object(0xa000 + i * 32, 0x200, 32, {{16, 0xa000 + (i + 1) * 32}});
      if (shot < 2 || last_complete) f.bare(EventKind::heap_end);
    }
    const std::vector<uint8_t> file = f.finish();
    std::vector<HeapGraph> graphs;
    HeapGraphCollector::Options o;
    o.last_only = true;
    o.done = [&graphs](HeapGraph&& g) { graphs.push_back(std::move(g)); };
    HeapGraphCollector c(std::move(o));
    std::unique_ptr<Input> in = Input::from_memory(file.data(), file.size());
    decode(*in, c);
    CHECK(graphs.empty());  // nothing resolved before the end
    c.finish();
    REQUIRE(graphs.size() == 1);
    CHECK(graphs[0].index == 2);
    CHECK(graphs[0].complete == last_complete);
    CHECK(graphs[0].objects == 3);
    CHECK(graphs[0].edges.size() == 2);  // the last node's reference points past the heapshot
    CHECK(graphs[0].dangling_refs == 1);
    CHECK(c.heapshot_count() == 3);
  }
}
