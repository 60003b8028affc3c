// The heap graph of a heapshot (mlpd/heap/heap_graph.h) and what is computed from it (mlpd/retention.h),
// on hand-made files: exact retained sizes (objects and MAT's class figure), root labels from the
// registered ranges, paths with offsets, unreached objects; and hostile input: references to no
// object, roots to no object, objects listed twice, cycles, continuation chunks away from their
// object, a heapshot without HEAP_END, a memory budget too small.
#include "mlpd_catch.h"

#include <algorithm>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlpd/budget.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/heap/heap_graph.h"
#include "mlpd/retention.h"

#include "event_makers.h"

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
    add(test::class_load(k, 0x10, name));
    add(test::vtable_load(vtable, k));
  }
  void range(uint64_t start, uint64_t size, uint8_t source, uint64_t key, const std::string& name) {
    add(test::heap_root_register(start, size, source, key, name));
  }
  void bare(EventKind k) { add(test::at(k, 0)); }
  void object(uint64_t obj, uint64_t vtable, uint64_t size, std::vector<HeapRef> refs = {}) {
    add(test::heap_object(obj, vtable, size, std::move(refs)));
  }
  void roots(std::vector<RootRef> r) { add(test::heap_root(std::move(r))); }
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
  // shared by the Holder's Node and a stack-held Node: the stack Node's reference is a transient copy
  // of a lasting one (docs/reports.md, "Lasting and transient roots"), so the Holder's Node holds it.
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
  CHECK(r.transient_refs == 1);
  CHECK(r.transient_roots == 0);
  // Holder retains itself, both chain Nodes, the chain's Leaf and the shared Leaf.
  REQUIRE(r.classes.size() == 3);
  CHECK(find_class(r, "Holder")->retained == 24 + 32 + 32 + 40 + 40);
  // Node: the chain's first Node (retains the inner one and both Leafs) and the stack-held Node.
  const RetainedClass* node = find_class(r, "Node");
  REQUIRE(node);
  CHECK(node->objects == 3);
  CHECK(node->shallow == 96);
  CHECK(node->retained == (32 + 32 + 40 + 40) + 32);
  CHECK(r.classes[0].name == "Node");  // 176 bytes, before Holder's 168 and Leaf's 120
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
  CHECK(r.folded[0].retained == 168);
  // As collapsed stacks (export --what retained): each frame weighs its own bytes, and they add up to
  // the reached bytes.
  const std::vector<mlpd::views::CollapsedStack> stacks = mlpd::views::retained_stacks(r);
  uint64_t sum = 0;
  for (const auto& s : stacks) {
    CHECK(s.weight > 0);
    CHECK(s.kinds.size() == static_cast<size_t>(std::count(s.stack.begin(), s.stack.end(), ';')) + 1);
    sum += s.weight;
  }
  CHECK(sum == r.bytes - r.unreached_bytes);
  REQUIRE(!stacks.empty());
  CHECK(stacks[0].stack == "static \"Static Fields: Holder\";Holder");
  CHECK(stacks[0].weight == 24);  // 168 retained less the Node below it
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
      // The shared Leaf: reached in two steps from the stack Node, in three from the Holder, whose
      // path is the one shown (a lasting root's).
      shared = x.steps.size() == 3 && x.root.kind == "static" && x.steps[1].offset == 16 &&
               x.steps[2].offset == 24 && x.root.name == "Static Fields: Holder";
    }
  }
  CHECK(chain);
  CHECK(finalizer);
  CHECK(shared);
}

namespace {

// The shape of issue 33's server: a static List whose backing array a request thread holds in a
// local (a stack root of its own) while another request is in a foreach over the list (its stack
// holds the List and an enumerator-like object that holds the List), and a third request's own object
// holds one of the list's items. Classes: List (0x100), Array (0x200), Item (0x300), Request (0x400).
FileBuilder request_shape(uint8_t list_root) {
  FileBuilder f;
  f.klass(0x100, 0x1100, "List");
  f.klass(0x200, 0x1200, "Array");
  f.klass(0x300, 0x1300, "Item");
  f.klass(0x400, 0x1400, "Request");
  f.range(0x9000, 64, list_root, 0x100, list_root == 3 ? "Static Fields" : "GC Handle Bucket");
  f.range(0x7000, 4096, 1, 0x2001, "Thread Stack");  // req-1
  f.range(0x6000, 4096, 1, 0x2002, "Thread Stack");  // req-2
  f.range(0x5000, 4096, 1, 0x2003, "Thread Stack");  // req-3
  f.bare(EventKind::heap_start);
  f.roots({{0x9008, 0xa000},                      // the static field: the List
           {0x7010, 0xa100},                      // req-1: the backing array, in a local
           {0x6010, 0xa000}, {0x6018, 0xb000},    // req-2: the List and its enumerator
           {0x5010, 0xc000}});                    // req-3: its Request
  f.object(0xa000, 0x100, 40, {{16, 0xa100}});
  f.object(0xa100, 0x200, 32 + 8 * 4, {{32, 0xa200}, {40, 0xa300}, {48, 0xa400}, {56, 0xa500}});
  for (uint64_t i = 0; i < 4; ++i) f.object(0xa200 + i * 0x100, 0x300, 100);
  f.object(0xb000, 0x400, 24, {{16, 0xa000}});                  // the enumerator: the List
  f.object(0xc000, 0x400, 24, {{16, 0xa300}, {24, 0xc100}});    // req-3's Request: an Item, its own
  f.object(0xc100, 0x300, 100);
  f.bare(EventKind::heap_end);
  return f;
}

const FoldedNode* top_subtree(const Retention& r, const std::string& klass) {
  for (const FoldedNode& x : r.folded)
    if (x.parent == UINT32_MAX && r.classes[x.klass].name == klass) return &x;
  return nullptr;
}

}  // namespace

TEST_CASE("retention: a static leak that request threads touch is held by the static field", "[retention]") {
  for (const uint8_t kind : {uint8_t{3}, uint8_t{6}}) {  // a static field, a GC handle: both lasting
    const std::string root = kind == 3 ? "static" : "gc_handle";
    const std::string name = kind == 3 ? "Static Fields: List" : "GC Handle Bucket";
    FileBuilder f = request_shape(kind);
    const Analysed a = analyse(f.finish());
    REQUIRE(a.shots.size() == 1);
    const Retention& r = a.shots[0]->result();
    REQUIRE(r.error.empty());
    CHECK(r.root_objects == 4);
    CHECK(r.transient_roots == 2);  // req-1's array and req-2's List: copies of the lasting root's
    CHECK(r.transient_refs == 2);   // the enumerator's List, req-3's Item
    // The List retains the array and every item (not req-3's own Item).
    const RetainedClass* list = find_class(r, "List");
    REQUIRE(list);
    CHECK(list->retained == 40 + 64 + 4 * 100);
    CHECK(r.classes[0].name == "List");
    CHECK(r.roots[list->held_by].kind == root);
    const RetainedClass* array = find_class(r, "Array");
    REQUIRE(array);
    CHECK(array->retained == 64 + 400);
    CHECK(r.roots[array->held_by].kind == root);  // the root of the subtree it is in
    // One top-level subtree for the list, held by the lasting root; the array is below it.
    const FoldedNode* top = top_subtree(r, "List");
    REQUIRE(top);
    CHECK(r.roots[top->root].kind == root);
    CHECK(r.roots[top->root].name == name);
    CHECK(top->retained == 504);
    CHECK(top_subtree(r, "Array") == nullptr);
    CHECK(&r.folded[0] == top);
    // The requests' own objects stay theirs: req-3's Request retains itself and its own Item only.
    const FoldedNode* request = nullptr;
    for (const FoldedNode& x : r.folded)
      if (x.parent == UINT32_MAX && r.classes[x.klass].name == "Request" && r.roots[x.root].name.find("0x2003") != std::string::npos)
        request = &x;
    REQUIRE(request);
    CHECK(r.roots[request->root].kind == "stack");
    CHECK(request->retained == 124);
    // The path to the array is the lasting root's, not req-1's stack slot.
    uint64_t instances = 0;
    std::vector<RootPath> p = a.shots[0]->paths("Array", 5, instances);
    REQUIRE(p.size() == 1);
    CHECK(p[0].root.kind == root);
    CHECK(p[0].root.name == name);
    REQUIRE(p[0].steps.size() == 2);
    CHECK(p[0].steps[0].klass == "List");
    CHECK(p[0].steps[1].klass == "Array");
    CHECK(p[0].steps[1].offset == 16);
    CHECK(p[0].retained == 464);
    // And the Item req-3 holds is reached from the lasting root too.
    p = a.shots[0]->paths("Item", 5, instances);
    CHECK(instances == 5);
    int lasting = 0, own = 0;
    for (const RootPath& x : p) {
      if (x.root.kind == root && x.steps.size() == 3) ++lasting;
      if (x.root.kind == "stack" && x.steps.size() == 2 && x.steps[0].klass == "Request") ++own;
    }
    CHECK(lasting == 4);
    CHECK(own == 1);
  }
}

TEST_CASE("retention: an object held directly by a root and reached through another is held by several",
          "[retention]") {
  // Without a lasting root: two request threads, one holding the List, the other its array.
  {
    FileBuilder f;
    f.klass(0x100, 0x1100, "List");
    f.klass(0x200, 0x1200, "Array");
    f.range(0x7000, 4096, 1, 0x2001, "Thread Stack");
    f.range(0x6000, 4096, 1, 0x2002, "Thread Stack");
    f.bare(EventKind::heap_start);
    f.roots({{0x7010, 0xa000}, {0x6010, 0xa100}});
    f.object(0xa000, 0x100, 40, {{16, 0xa100}});
    f.object(0xa100, 0x200, 64);
    f.bare(EventKind::heap_end);
    const Analysed a = analyse(f.finish());
    REQUIRE(a.shots.size() == 1);
    const Retention& r = a.shots[0]->result();
    CHECK(r.transient_roots == 0);
    const FoldedNode* array = top_subtree(r, "Array");
    REQUIRE(array);
    CHECK(r.roots[array->root].kind == "several");
    CHECK(find_class(r, "List")->retained == 40);
    CHECK(r.roots[top_subtree(r, "List")->root].kind == "stack");
  }
  // Two lasting roots: a static field holds the array, a GC handle holds the List that holds it.
  {
    FileBuilder f;
    f.klass(0x100, 0x1100, "List");
    f.klass(0x200, 0x1200, "Array");
    f.range(0x9000, 64, 3, 0x300, "Static Fields");
    f.range(0x8000, 64, 6, 0, "GC Handle Bucket");
    f.bare(EventKind::heap_start);
    f.roots({{0x9008, 0xa100}, {0x8008, 0xa000}});
    f.object(0xa000, 0x100, 40, {{16, 0xa100}});
    f.object(0xa100, 0x200, 64);
    f.bare(EventKind::heap_end);
    const Analysed a = analyse(f.finish());
    REQUIRE(a.shots.size() == 1);
    const Retention& r = a.shots[0]->result();
    const FoldedNode* array = top_subtree(r, "Array");
    REQUIRE(array);
    CHECK(r.roots[array->root].kind == "several");
    CHECK(r.roots[find_class(r, "Array")->held_by].kind == "several");
    // Its path: the shortest from a lasting root, the static field's.
    uint64_t instances = 0;
    const std::vector<RootPath> p = a.shots[0]->paths("Array", 1, instances);
    REQUIRE(p.size() == 1);
    CHECK(p[0].root.kind == "static");
    CHECK(p[0].steps.size() == 1);
  }
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

TEST_CASE("heap graph: a root range registered after the heapshot labels it once the file is read", "[retention]") {
  // A thread's buffer (with its stack's registration) written after the heapshot, as the agent
  // writes a request thread's buffer when it fills or the thread ends.
  FileBuilder f = with_classes();
  f.range(0x8000, 0, 6, 0, "GC Handles (SGen, Normal)");  // Mono's zero-size handle table range
  f.bare(EventKind::heap_start);
  f.roots({{0x9008, 0xa000}, {0x5010, 0xb000}});
  f.object(0xa000, 0x100, 24);
  f.object(0xb000, 0x200, 32);
  f.bare(EventKind::heap_end);
  f.range(0x5000, 4096, 1, 0x2003, "Thread Stack");
  std::vector<HeapGraph> graphs;
  std::vector<uint64_t> loose_then;
  HeapGraphCollector* self = nullptr;
  HeapGraphCollector::Options o;
  o.done = [&](HeapGraph&& g) {
    self->label(g, &loose_then);  // labelled as it closes: the stack is not known yet
    graphs.push_back(std::move(g));
  };
  HeapGraphCollector c(std::move(o));
  self = &c;
  const std::vector<uint8_t> file = f.finish();
  std::unique_ptr<Input> in = Input::from_memory(file.data(), file.size());
  decode(*in, c);
  c.finish();
  REQUIRE(graphs.size() == 1);
  CHECK(loose_then == std::vector<uint64_t>{0x5010});
  auto kind_of = [](const HeapGraph& g, uint32_t object) {
    for (const HeapGraph::Root& r : g.roots)
      if (r.object == object) return g.labels[r.label].kind;
    return kRootUnknown;
  };
  CHECK(kind_of(graphs[0], 1) == 6);  // counted with the GC handles, for want of its range
  std::vector<uint64_t> loose_now;
  c.label(graphs[0], &loose_now);
  CHECK(loose_now.empty());
  CHECK(kind_of(graphs[0], 1) == 1);  // the thread's stack
}

namespace {

// A heapshot's analysis by hand: one static root holding a List (top-level) with `items` bytes of
// Item below it, and a stack-held Buffer.
Retention shot(uint64_t list, uint64_t items, uint64_t buffer, uint64_t list_objects) {
  Retention r;
  r.classes = {{"List", list_objects, 40 * list_objects, list + items, 0},
               {"Item", 10, 1000, items, 0},
               {"Buffer", 1, buffer, buffer, 1}};
  r.roots = {{"static", "Cache"}, {"stack", "req-1"}};
  FoldedNode top;
  top.klass = 0;
  top.root = 0;
  top.retained = list + items;
  FoldedNode item;
  item.parent = 0;
  item.depth = 2;
  item.klass = 1;
  item.retained = items;
  FoldedNode held;
  held.klass = 2;
  held.root = 1;
  held.retained = buffer;
  r.folded = {top, item, held};
  return r;
}

}  // namespace

TEST_CASE("retention: growth by class and by subtree, leak suspects over heapshots", "[retention]") {
  const Retention a = shot(40, 1000, 500, 1), b = shot(40, 3000, 500, 1), c = shot(40, 3000, 100, 2);
  const std::vector<mlpd::views::Growth> classes = mlpd::views::class_growth(a, b);
  REQUIRE(classes.size() == 2);  // Buffer did not change
  CHECK(classes[0].name == "List");  // +2000 retained like Item, but retaining more
  CHECK(classes[0].retained == 2000);
  CHECK(classes[1].name == "Item");
  CHECK(classes[1].from == 1000);
  CHECK(classes[1].to == 3000);
  const auto objects = mlpd::views::class_growth(b, c);
  REQUIRE(objects.size() == 2);
  CHECK(objects[0].name == "List");  // one object more, no byte more
  CHECK(objects[0].objects == 1);
  CHECK(objects[1].name == "Buffer");
  CHECK(objects[1].retained == -400);
  const auto subtrees = mlpd::views::subtree_growth(a, b, 6);
  REQUIRE(subtrees.size() == 2);
  CHECK(subtrees[0].name == "static Cache > List");
  CHECK(subtrees[0].retained == 2000);
  CHECK(subtrees[1].name == "static Cache > List > Item");
  CHECK(mlpd::views::subtree_growth(a, b, 1).size() == 1);  // one level only
  // Suspects: grew at most steps and never shrank. The List grows, then stays (a, b, b, c): 1 of 3
  // steps is not "more than half"; a, b, c, then more: yes. The Buffer shrank: never.
  const std::vector<Retention> flat = {a, b, b, c};
  CHECK(mlpd::views::leak_suspects(flat, 6).empty());
  const std::vector<Retention> growing = {a, b, shot(40, 4000, 500, 1), shot(40, 5000, 600, 1)};
  const auto suspects = mlpd::views::leak_suspects(growing, 6);
  REQUIRE(suspects.size() == 2);
  CHECK(suspects[0].path == "static Cache > List");
  CHECK(suspects[0].retained == std::vector<uint64_t>{1040, 3040, 4040, 5040});
  CHECK(suspects[1].path == "static Cache > List > Item");
}
