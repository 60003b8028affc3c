// The heap views (mlpd/heap_views.h) rendered from small hand-built heap models: heapshot summaries
// and diffs, retention results (classes, the folded dominator tree, paths), growth and suspects, the
// collapsed stacks of retained bytes and the report's "Held by" section -- the exact text and JSON the
// commands print -- and HeldByTap fed the events of a hand-made heapshot as the profile build hands
// them over (restart included).
#include "mlpd_catch.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/decoder.h"
#include "mlpd/heap_views.h"

using namespace mlpd;
using namespace mlpd::views;

namespace {

HeapshotSummary shot(size_t index, int64_t time_ns, bool complete, std::vector<HeapshotClass> classes) {
  HeapshotSummary s;
  s.index = index;
  s.time_ns = time_ns;
  s.complete = complete;
  for (const HeapshotClass& c : classes) {
    s.objects += c.objects;
    s.bytes += c.bytes;
  }
  s.roots = 3;
  s.classes = std::move(classes);
  return s;
}

HeapshotClass cls(uint64_t klass, std::string name, uint64_t objects, uint64_t bytes) {
  HeapshotClass c;
  c.klass = klass;
  c.name = std::move(name);
  c.objects = objects;
  c.bytes = bytes;
  return c;
}

// Two classes, one holding the other from a static field; 100 bytes in all, 10 unreached.
Retention retention() {
  Retention r;
  r.index = 2;
  r.time_ns = 1500000000;
  r.complete = true;
  r.objects = 5;
  r.bytes = 100;
  r.unreached_objects = 1;
  r.unreached_bytes = 10;
  r.root_objects = 1;
  r.roots = {{"static", "Static Fields: Cache"}, {"stack", ""}};
  RetainedClass a;
  a.name = "Cache";
  a.objects = 1;
  a.shallow = 30;
  a.retained = 90;
  a.held_by = 0;
  RetainedClass b;
  b.name = "Entry\tx";  // a tab: escaped in text and JSON
  b.objects = 4;
  b.shallow = 70;
  b.retained = 60;
  b.held_by = 0;
  RetainedClass c;
  c.name = "Idle";
  c.objects = 0;
  r.classes = {a, b, c};
  FoldedNode top;
  top.klass = 0;
  top.root = 0;
  top.instances = 1;
  top.retained = 90;
  top.objects = 4;
  FoldedNode child;
  child.parent = 0;
  child.depth = 2;
  child.klass = 1;
  child.instances = 3;
  child.retained = 60;
  child.objects = 3;
  FoldedNode small;
  small.klass = 1;
  small.root = 1;
  small.instances = 1;
  small.retained = 5;
  small.objects = 1;
  r.folded = {top, child, small};
  return r;
}

}  // namespace

TEST_CASE("heap views: heapshot lists as text and JSON, --top, no heapshots", "[heap_views]") {
  const std::vector<HeapshotSummary> shots = {
      shot(0, 250000000, true, {cls(1, "System.String", 10, 400), cls(2, "Foo", 2, 48)}),
      shot(1, 1250000000, false, {cls(1, "System.String", 12, 480)})};
  std::string t;
  heapshots_text(t, "f.mlpd", shots, 1);
  CHECK(t ==
        "heapshot 0 at 0.250 s: 12 objects, 448 bytes, 2 classes, 3 roots\n"
        "         bytes    objects  class\n"
        "           400         10  System.String\n"
        "  (1 more classes)\n"
        "\n"
        "heapshot 1 at 1.250 s: 12 objects, 480 bytes, 1 classes, 3 roots (incomplete: no heap_end)\n"
        "         bytes    objects  class\n"
        "           480         12  System.String\n");
  std::string j;
  heapshots_json(j, shots, UINT64_MAX);
  CHECK(j ==
        "{\"index\":0,\"time\":0.250000000,\"objects\":12,\"bytes\":448,\"roots\":3,\"complete\":true,"
        "\"class_count\":2,\"classes\":[{\"name\":\"System.String\",\"objects\":10,\"bytes\":400},"
        "{\"name\":\"Foo\",\"objects\":2,\"bytes\":48}]}\n"
        "{\"index\":1,\"time\":1.250000000,\"objects\":12,\"bytes\":480,\"roots\":3,\"complete\":false,"
        "\"class_count\":1,\"classes\":[{\"name\":\"System.String\",\"objects\":12,\"bytes\":480}]}\n");
  std::string none;
  heapshots_text(none, "a\nb", {}, UINT64_MAX);
  CHECK(none == "a\\nb: no heapshots\n");
  std::string none_json;
  heapshots_json(none_json, {}, UINT64_MAX);
  CHECK(none_json.empty());
}

TEST_CASE("heap views: heapshot diffs, changed classes only or --all, --top", "[heap_views]") {
  const HeapshotSummary a = shot(0, 0, true, {cls(1, "A", 1, 10), cls(2, "B", 2, 20), cls(3, "C", 1, 8)});
  const HeapshotSummary b = shot(1, 2000000000, true, {cls(1, "A", 3, 30), cls(2, "B", 2, 20)});
  const HeapshotDiff d = diff_heapshots(a, b);
  std::string t;
  heapshot_diff_text(t, d, a, b, false, UINT64_MAX);
  CHECK(t ==
        "heapshot 0 -> 1 (0.000 s -> 2.000 s)\n"
        "         bytes    objects  class\n"
        "           +20         +2  A\n"
        "            -8         -1  C\n"
        "  (1 unchanged classes; --all lists them)\n"
        "total: +12 bytes, +1 objects (38 -> 50 bytes, 4 -> 5 objects)\n");
  std::string all;
  heapshot_diff_text(all, d, a, b, true, 1);
  CHECK(all ==
        "heapshot 0 -> 1 (0.000 s -> 2.000 s)\n"
        "         bytes    objects  class\n"
        "           +20         +2  A\n"
        "  (2 more classes)\n"
        "total: +12 bytes, +1 objects (38 -> 50 bytes, 4 -> 5 objects)\n");
  std::string j;
  heapshot_diff_json(j, d, false, UINT64_MAX);
  CHECK(j ==
        "{\"from\":0,\"to\":1,\"objects\":1,\"bytes\":12,\"classes\":[{\"name\":\"A\",\"objects\":2,\"bytes\":20},"
        "{\"name\":\"C\",\"objects\":-1,\"bytes\":-8}]}\n");
  const HeapshotDiff same = diff_heapshots(a, a);
  std::string s;
  heapshot_diff_text(s, same, a, a, false, UINT64_MAX);
  CHECK(s ==
        "heapshot 0 -> 0 (0.000 s -> 0.000 s)\n"
        "         bytes    objects  class\n"
        "  (no class changed)\n"
        "  (3 unchanged classes; --all lists them)\n"
        "total: +0 bytes, +0 objects (38 -> 38 bytes, 4 -> 4 objects)\n");
}

TEST_CASE("heap views: retained classes as text and JSON", "[heap_views]") {
  Retention r = retention();
  std::string t;
  retained_text(t, r, 2);
  CHECK(t ==
        "heapshot 2 at 1.500 s: 5 objects, 100 bytes, 1 held by GC roots; unreached: 1 objects, 10 bytes\n"
        "      retained    objects      shallow  class\n"
        "            90          1           30  Cache\n"
        "            60          4           70  Entry\\tx\n"
        "  (1 more classes)\n");
  std::string j;
  retained_json(j, r, UINT64_MAX);
  CHECK(j ==
        "{\"index\":2,\"time\":1.500000000,\"objects\":5,\"bytes\":100,\"unreached\":{\"objects\":1,\"bytes\":10},"
        "\"classes\":[{\"name\":\"Cache\",\"objects\":1,\"shallow\":30,\"retained\":90},"
        "{\"name\":\"Entry\\tx\",\"objects\":4,\"shallow\":70,\"retained\":60},"
        "{\"name\":\"Idle\",\"objects\":0,\"shallow\":0,\"retained\":0}]}\n");
  r.complete = false;
  r.dangling_refs = 2;
  r.duplicate_objects = 1;
  std::string dropped;
  retained_text(dropped, r, 0);
  CHECK(dropped ==
        "heapshot 2 at 1.500 s: 5 objects, 100 bytes, 1 held by GC roots; unreached: 1 objects, 10 bytes "
        "(incomplete: no heap_end)\n"
        "  (dropped: 2 references and 0 roots to objects not in the heapshot, 1 objects listed twice)\n"
        "      retained    objects      shallow  class\n"
        "  (3 more classes)\n");
}

TEST_CASE("heap views: the folded dominator tree, --depth, --min-bytes and --top", "[heap_views]") {
  const Retention r = retention();
  std::string t;
  dominators_text(t, r, 20, 4, 1);
  CHECK(t ==
        "heapshot 2 at 1.500 s: 5 objects, 100 bytes, 1 held by GC roots; unreached: 1 objects, 10 bytes\n"
        "  subtrees of the dominator tree of at least 1 bytes, 4 levels, folded by class:\n"
        "      retained    objects  instances  held by / class\n"
        "            90          4          1  static \"Static Fields: Cache\" -> Cache\n"
        "            60          3          3    Entry\\tx\n"
        "             5          1          1  stack -> Entry\\tx\n");
  std::string shallow;
  dominators_text(shallow, r, 1, 1, 10);  // one top-level subtree, one level, 10 bytes or more
  CHECK(shallow.substr(shallow.find("held by / class\n") + 16) ==
        "            90          4          1  static \"Static Fields: Cache\" -> Cache\n");
  std::string j;
  dominators_json(j, r, 20, 4, 1);
  CHECK(j ==
        "{\"index\":2,\"time\":1.500000000,\"objects\":5,\"bytes\":100,\"unreached\":{\"objects\":1,\"bytes\":10},"
        "\"subtrees\":[{\"root\":{\"kind\":\"static\",\"name\":\"Static Fields: Cache\"},\"class\":\"Cache\","
        "\"instances\":1,\"objects\":4,\"retained\":90,\"children\":[{\"class\":\"Entry\\tx\",\"instances\":3,"
        "\"objects\":3,\"retained\":60,\"children\":[]}]},{\"root\":{\"kind\":\"stack\",\"name\":\"\"},"
        "\"class\":\"Entry\\tx\",\"instances\":1,\"objects\":1,\"retained\":5,\"children\":[]}]}\n");
}

TEST_CASE("heap views: paths from a GC root, long paths cut in the middle", "[heap_views]") {
  const Retention r = retention();
  RootPath p;
  p.retained = 60;
  p.root = {"static", "Static Fields: Cache"};
  p.steps = {{"Cache", -1}, {"Entry[]", 16}, {"Entry", 24}};
  p.total_steps = 3;
  RootPath longp;
  longp.retained = 8;
  longp.root = {"stack", ""};
  longp.steps = {{"Node", -1}, {"Node", 8}, {"Node", 8}, {"Node", 8}};
  longp.total_steps = 70;
  std::string t;
  paths_text(t, r, "Entry", 4, {p, longp});
  CHECK(t.substr(t.find('\n') + 1) ==
        "  4 reached instances of Entry, shortest paths from a GC root to the largest:\n"
        "  retained 60: root static \"Static Fields: Cache\" -> Cache -> Entry[] (+16) -> Entry (+24)\n"
        "  retained 8: root stack -> Node -> Node (+8) -> ... (66 steps) -> Node (+8) -> Node (+8)\n");
  std::string none;
  paths_text(none, r, "Nope", 0, {});
  CHECK(none.substr(none.find('\n') + 1) == "  0 reached instances of Nope\n");
  std::string j;
  paths_json(j, "Entry", {p});
  CHECK(j ==
        "{\"class\":\"Entry\",\"paths\":[{\"retained\":60,\"root\":{\"kind\":\"static\",\"name\":\"Static Fields: "
        "Cache\"},\"length\":3,\"steps\":[{\"class\":\"Cache\",\"offset\":null},{\"class\":\"Entry[]\",\"offset\":16},"
        "{\"class\":\"Entry\",\"offset\":24}]}]}\n");
}

TEST_CASE("heap views: growth of retained bytes and leak suspects", "[heap_views]") {
  Retention a = retention();
  a.index = 0;
  a.time_ns = 0;
  Retention b = retention();
  b.index = 3;
  b.bytes = 160;
  const std::vector<Growth> classes = {{"Entry", 60, 4, 60, 120}, {"Cache", -5, 0, 90, 85}};
  const std::vector<Growth> subtrees = {{"static Static Fields: Cache/Cache", 55, 0, 90, 145}};
  std::string t;
  growth_text(t, a, b, classes, subtrees, 1);
  CHECK(t ==
        "heapshot 0 -> 3 (0.000 s -> 1.500 s), growth of retained bytes\n"
        "  by class:\n"
        "      retained    objects  class\n"
        "           +60         +4  Entry\n"
        "  (1 more)\n"
        "  by dominator subtree (held by > class path):\n"
        "      retained  subtree\n"
        "           +55  static Static Fields: Cache/Cache\n");
  std::string j;
  growth_json(j, a, b, classes, subtrees, UINT64_MAX);
  CHECK(j ==
        "{\"from\":0,\"to\":3,\"retained\":60,\"classes\":[{\"name\":\"Entry\",\"retained\":60,\"objects\":4,"
        "\"from\":60,\"to\":120},{\"name\":\"Cache\",\"retained\":-5,\"objects\":0,\"from\":90,\"to\":85}],"
        "\"subtrees\":[{\"path\":\"static Static Fields: Cache/Cache\",\"retained\":55,\"from\":90,\"to\":145}]}\n");

  const std::vector<Suspect> suspects = {{"static S/List", {10, 20, 40}}, {"stack/Buf", {1, 1, 2}}};
  std::string s;
  suspects_text(s, 3, suspects, 1);
  CHECK(s ==
        "subtrees whose retained bytes grew over the 3 heapshots (never shrank, grew at most steps):\n"
        "        growth  first -> last  subtree\n"
        "           +30  10 -> 40  static S/List\n");
  std::string none;
  suspects_text(none, 4, {}, UINT64_MAX);
  CHECK(none.substr(none.rfind("subtree\n") + 8) == "  (none)\n");
  std::string sj;
  suspects_json(sj, 3, suspects, UINT64_MAX);
  CHECK(sj ==
        "{\"heapshots\":3,\"suspects\":[{\"path\":\"static S/List\",\"growth\":30,\"retained\":[10,20,40]},"
        "{\"path\":\"stack/Buf\",\"growth\":1,\"retained\":[1,1,2]}]}\n");
}

TEST_CASE("heap views: collapsed stacks and the report's Held by section", "[heap_views]") {
  CHECK(retained_collapsed({{"static \"S\";Cache", "", 30}, {"static \"S\";Cache;Entry", "", 60}}) ==
        "static \"S\";Cache 30\nstatic \"S\";Cache;Entry 60\n");
  const Retention r = retention();
  const report::HeldBySection h = held_by_section(r, 10);
  CHECK(h.index == 2);
  CHECK(h.objects == 5);
  CHECK(h.bytes == 100);
  CHECK(h.unreached_objects == 1);
  CHECK(h.unreached_bytes == 10);
  REQUIRE(h.classes.size() == 2);  // Idle retains nothing: left out
  CHECK(h.classes[0].name == "Cache");
  CHECK(h.classes[0].retained == 90);
  CHECK(h.classes[0].has_root);
  CHECK(h.classes[0].root_kind == "static");
  CHECK(h.classes[0].root_name == "Static Fields: Cache");
  CHECK(held_by_section(r, 1).classes.size() == 1);
  Retention too_large;
  too_large.index = 4;
  too_large.error = "too large";
  const report::HeldBySection e = held_by_section(too_large, 10);
  CHECK(e.index == 4);
  CHECK(e.error == "too large");
  CHECK(e.classes.empty());
}

namespace {

// A heapshot on thread 7: a static field holding `holder`, which holds `held`.
void feed_heapshot(HeldByTap& tap, uint64_t time) {
  BufferInfo b;
  b.header.thread_id = 7;
  b.header.time_base = 1000;
  tap.on_buffer(b);
  Event e;
  e.kind = EventKind::class_load;
  e.ptr = 0x500;
  e.name = "Holder";
  tap.on_event(e);
  e = Event();
  e.kind = EventKind::vtable_load;
  e.ptr = 0x50;
  e.ptr3 = 0x500;
  tap.on_event(e);
  e = Event();
  e.kind = EventKind::heap_root_register;
  e.ptr = 0x9000;
  e.size = 64;
  e.code = 3;  // static
  e.name = "Static Fields";
  tap.on_event(e);
  e = Event();
  e.kind = EventKind::heap_start;
  e.time = time;
  tap.on_event(e);
  e = Event();
  e.kind = EventKind::heap_object;
  e.obj = 0x100;
  e.ptr = 0x50;
  e.size = 40;
  e.refs = {HeapRef{.offset = 8, .obj = 0x200}};
  tap.on_event(e);
  e.obj = 0x200;
  e.size = 24;
  e.refs.clear();
  tap.on_event(e);
  e = Event();
  e.kind = EventKind::heap_root;
  e.roots = {RootRef{.address = 0x9008, .obj = 0x100}};
  tap.on_event(e);
  e = Event();
  e.kind = EventKind::heap_end;
  e.time = time + 1;
  tap.on_event(e);
}

}  // namespace

TEST_CASE("heap views: HeldByTap builds the last heapshot's section from the build's events", "[heap_views]") {
  HeldByTap none;
  CHECK(!none.section(10));

  HeldByTap tap;
  feed_heapshot(tap, 2000);
  feed_heapshot(tap, 3000);  // the last one counts
  auto h = tap.section(10);
  REQUIRE(h);
  CHECK(h->index == 1);
  CHECK(h->objects == 2);
  CHECK(h->bytes == 64);
  REQUIRE(h->classes.size() == 1);
  CHECK(h->classes[0].name == "Holder");
  CHECK(h->classes[0].retained == 64);
  CHECK(h->classes[0].root_kind == "static");

  HeldByTap again;
  feed_heapshot(again, 2000);
  feed_heapshot(again, 3000);
  again.restart();  // the build starts over (its parallel pass gave up): what was fed is forgotten
  feed_heapshot(again, 4000);
  auto h2 = again.section(10);
  REQUIRE(h2);
  CHECK(h2->index == 0);
}

namespace {

std::string held_by_state(const std::optional<report::HeldBySection>& h) {
  if (!h) return "none";
  std::string s = "index " + std::to_string(h->index) + " error '" + h->error + "' " + std::to_string(h->objects) +
                  ' ' + std::to_string(h->bytes) + ' ' + std::to_string(h->unreached_objects) + ' ' +
                  std::to_string(h->unreached_bytes) + '\n';
  for (const report::HeldBySection::Class& c : h->classes)
    s += c.name + ' ' + std::to_string(c.objects) + ' ' + std::to_string(c.shallow) + ' ' + std::to_string(c.retained) +
         ' ' + (c.has_root ? c.root_kind + " '" + c.root_name + "'" : "-") + '\n';
  return s;
}

// The report's way: the profile built on `jobs` threads, the tap fed by its pass.
std::string held_by_one_pass(const std::vector<uint8_t>& file, unsigned jobs) {
  auto in = Input::from_memory(file.data(), file.size());
  HeldByTap tap;
  profile::BuildOptions o;
  o.jobs = jobs;
  o.reopen = [&file](size_t) { return Input::from_memory(file.data(), file.size()); };
  o.tap = &tap;
  profile::Profile p;
  profile::build_profile(*in, p, o);
  return held_by_state(tap.section(10));
}

// The old way: the file read again by the heap model's collector alone.
std::string held_by_second_read(const std::vector<uint8_t>& file) {
  std::optional<HeapGraph> last;
  HeapGraphCollector::Options o;
  o.last_only = true;
  o.done = [&last](HeapGraph&& g) { last = std::move(g); };
  HeapGraphCollector c(std::move(o));
  auto in = Input::from_memory(file.data(), file.size());
  decode(*in, c);
  c.finish();
  if (!last) return held_by_state(std::nullopt);
  c.label(*last);
  RetentionOptions ro;
  ro.fold_depth = 0;
  const RetentionAnalysis a(std::move(*last), c.names(), ro);
  return held_by_state(held_by_section(a.result(), 10));
}

// Buffers of three threads: calls (enough for the parallel build to keep its workers), and on one
// thread heapshots of objects referring to each other, held from static fields and stacks.
std::vector<uint8_t> heap_and_calls_file(unsigned seed, bool heapshots) {
  test::EventGen gen(seed);
  std::vector<test::ThreadBuffer> bufs;
  uint64_t time = 1000;
  for (int i = 0; i < 120; ++i) {
    const uint64_t thread = 0x100 + gen.below(3);
    test::ThreadBuffer b{thread, time, {}};
    auto add = [&](Event e) {
      e.time = ++time;
      b.events.push_back(std::move(e));
    };
    if (thread != 0x100 || !heapshots) {
      for (int k = 0; k < 40; ++k) {
        Event e;
        e.kind = k % 2 ? EventKind::method_leave : EventKind::method_enter;
        e.method = 0x5000 + 16 * (k / 2 % 4);
        add(e);
      }
    } else {
      const uint64_t r = gen.below(10);
      Event e;
      if (r == 0) {
        e.kind = EventKind::heap_start;
        add(e);
      } else if (r == 1) {
        e.kind = EventKind::heap_end;
        add(e);
      } else if (r == 2) {
        e.kind = EventKind::class_load;
        e.ptr = 0x700 + 8 * gen.below(4);
        e.name = "Class" + std::to_string(e.ptr);
        add(e);
        Event v;
        v.kind = EventKind::vtable_load;
        v.ptr = 0x70 + gen.below(4);
        v.ptr3 = e.ptr;
        add(v);
      } else if (r == 3) {
        e.kind = EventKind::heap_root_register;
        e.ptr = 0x9000 + 0x100 * gen.below(4);
        e.size = 0x100;
        e.code = static_cast<uint8_t>(gen.below(2) ? 3 : 1);
        e.name = e.code == 3 ? "Static Fields" : "Thread Stack";
        add(e);
      }
      for (int k = 0; k < 30; ++k) {
        Event o;
        o.kind = EventKind::heap_object;
        o.obj = 0x10000 + 16 * gen.below(200);
        o.ptr = 0x70 + gen.below(4);
        o.size = 16 + gen.below(64);
        for (uint64_t n = gen.below(3); n > 0; --n) o.refs.push_back(HeapRef{.offset = 8 * n, .obj = 0x10000 + 16 * gen.below(200)});
        add(o);
      }
      Event root;
      root.kind = EventKind::heap_root;
      for (int k = 0; k < 3; ++k)
        root.roots.push_back(RootRef{.address = 0x9000 + 8 * gen.below(128), .obj = 0x10000 + 16 * gen.below(200)});
      add(root);
    }
    bufs.push_back(std::move(b));
  }
  return test::build_file(bufs);
}

}  // namespace

TEST_CASE("heap views: HeldByTap in the profile build gives what a second read gave, on 1 or 2 threads",
          "[heap_views]") {
  for (const unsigned seed : {1u, 2u, 3u}) {
    INFO("seed " << seed);
    const std::vector<uint8_t> file = heap_and_calls_file(seed, true);
    const std::string want = held_by_second_read(file);
    REQUIRE(want != "none");
    CHECK(want.find('\n') + 1 < want.size());  // some class retains something
    CHECK(held_by_one_pass(file, 1) == want);
    CHECK(held_by_one_pass(file, 2) == want);
  }
  const std::vector<uint8_t> none = heap_and_calls_file(4, false);
  CHECK(held_by_one_pass(none, 2) == "none");
}
