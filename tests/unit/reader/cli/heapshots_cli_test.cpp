// `mlpd heapshots` (reader/cli/cmd_heapshots.cpp) and its retention views (heapshots_retained.cpp,
// heapshots_growth.cpp), and `mlpd export --what retained` (export_retained.cpp), driven in-process on
// small hand-made files of heapshots whose every figure is worked out below: what they print (text, and
// JSON decoded back), what they write (collapsed stacks, the flame graph page, pprof decoded back), their
// refusals (one line, exit status 2) and the problems of a damaged file (exit status 1).
#include "gunzip.h"
#include "mlpd_catch.h"

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../../../../reader/cli/commands.h"
#include "../../../../reader/cli/heapshots_retained.h"
#include "cli_run.h"
#include "event_gen.h"
#include "event_makers.h"
#include "profile.pb.h"
#include "temp_dir.h"

#if MLPD_HAVE_NLOHMANN_JSON
#include <nlohmann/json.hpp>
#endif

using namespace mlpd;
using namespace mlpd::test;
using mlpd_test::contains;

namespace {

constexpr uint64_t kThread = 0x77;
constexpr uint64_t kTimeBase = 1'000'000'000;  // the buffer's time base: heapshot times count from it

// Classes: Holder (vtable 0x100), Node (0x200), Leaf (0x300); a static root range at 0x9000.
//
// Heapshot k (k = 0, 1, ... shots-1) at kTimeBase + (k+1) * 0.5 s: the static slot 0x9008 holds a
// Holder (24 bytes) whose fields (+16, +24, ...) hold k+1 Nodes (32 bytes each), each Node's field +16
// holding its own Leaf (40 bytes); and one more Leaf that nothing reaches. So heapshot k has 2k+4
// objects and 64 + 72(k+1) bytes; the Holder retains 24 + 72(k+1), the Nodes 72(k+1), the reached
// Leafs 40(k+1); unreached: 1 object, 40 bytes.
std::vector<Event> heap_events(int shots) {
  std::vector<Event> ev;
  auto add = [&ev](Event e, uint64_t t) {
    e.time = t;
    ev.push_back(std::move(e));
  };
  add(class_load(0x1100, 0x10, "Holder"), kTimeBase + 1);
  add(vtable_load(0x100, 0x1100), kTimeBase + 2);
  add(class_load(0x1200, 0x10, "Node"), kTimeBase + 3);
  add(vtable_load(0x200, 0x1200), kTimeBase + 4);
  add(class_load(0x1300, 0x10, "Leaf"), kTimeBase + 5);
  add(vtable_load(0x300, 0x1300), kTimeBase + 6);
  add(heap_root_register(0x9000, 64, 3, 0x100, "Static Fields"), kTimeBase + 7);
  for (int k = 0; k < shots; ++k) {
    uint64_t t = kTimeBase + static_cast<uint64_t>(k + 1) * 500'000'000;
    add(at(EventKind::heap_start, 0), t);
    add(heap_root({{0x9008, 0xa000}}), ++t);
    std::vector<HeapRef> fields;
    for (int i = 0; i <= k; ++i) fields.push_back({16u + 8u * static_cast<uint64_t>(i), 0xb000u + 0x100u * static_cast<uint64_t>(i)});
    add(heap_object(0xa000, 0x100, 24, fields), ++t);
    for (int i = 0; i <= k; ++i) {
      const uint64_t node = 0xb000 + 0x100 * static_cast<uint64_t>(i), leaf = 0xc000 + 0x100 * static_cast<uint64_t>(i);
      add(heap_object(node, 0x200, 32, {{16, leaf}}), ++t);
      add(heap_object(leaf, 0x300, 40), ++t);
    }
    add(heap_object(0xe000, 0x300, 40), ++t);  // unreached
    add(at(EventKind::heap_end, 0), ++t);
  }
  return ev;
}

std::vector<uint8_t> heap_file(int shots) {
  return build_file({ThreadBuffer{kThread, kTimeBase, heap_events(shots)}});
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliRun heapshots(std::vector<std::string> args) { return run_cli(cli::cmd_heapshots, "heapshots", std::move(args)); }
CliRun export_cmd(std::vector<std::string> args) { return run_cli(cli::cmd_export, "export", std::move(args)); }


}  // namespace

TEST_CASE("mlpd heapshots: the list, text and JSON, --top", "[cli][heapshots]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(3));
  const CliRun r = heapshots({path});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out ==
        "heapshot 0 at 0.500 s: 4 objects, 136 bytes, 3 classes, 1 roots\n"
        "         bytes    objects  class\n"
        "            80          2  Leaf\n"
        "            32          1  Node\n"
        "            24          1  Holder\n"
        "\n"
        "heapshot 1 at 1.000 s: 6 objects, 208 bytes, 3 classes, 1 roots\n"
        "         bytes    objects  class\n"
        "           120          3  Leaf\n"
        "            64          2  Node\n"
        "            24          1  Holder\n"
        "\n"
        "heapshot 2 at 1.500 s: 8 objects, 280 bytes, 3 classes, 1 roots\n"
        "         bytes    objects  class\n"
        "           160          4  Leaf\n"
        "            96          3  Node\n"
        "            24          1  Holder\n");

  // --top 1: one class line per heapshot, the rest counted.
  const CliRun top = heapshots({"--top", "1", path});
  CHECK(top.rc == 0);
  const std::vector<std::string> lines = lines_of(top.out);
  REQUIRE(lines.size() == 14);
  CHECK(lines[2] == "            80          2  Leaf");
  CHECK(lines[3] == "  (2 more classes)");

  // One thread or two read the same.
  CHECK(heapshots({"--jobs", "1", path}).out == r.out);
  CHECK(heapshots({"-j", "2", path}).out == r.out);

#if MLPD_HAVE_NLOHMANN_JSON
  const CliRun j = heapshots({"--json", "--top", "2", path});
  CHECK(j.rc == 0);
  const std::vector<std::string> jl = lines_of(j.out);
  REQUIRE(jl.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    const nlohmann::json d = nlohmann::json::parse(jl[k]);
    CHECK(d.at("index") == k);
    CHECK(d.at("time").get<double>() == Approx(0.5 * static_cast<double>(k + 1)));
    CHECK(d.at("objects") == 2 * k + 4);
    CHECK(d.at("bytes") == 64 + 72 * (k + 1));
    CHECK(d.at("roots") == 1);
    CHECK(d.at("complete") == true);
    CHECK(d.at("class_count") == 3);
    REQUIRE(d.at("classes").size() == 2);
    CHECK(d.at("classes")[0].at("name") == "Leaf");
    CHECK(d.at("classes")[0].at("objects") == k + 2);
    CHECK(d.at("classes")[0].at("bytes") == 40 * (k + 2));
    CHECK(d.at("classes")[1].at("name") == "Node");
  }
#endif

  // A file without heapshots.
  const std::string none = dir.write("none.mlpd", build_file({ThreadBuffer{kThread, kTimeBase, {at(EventKind::gc_finalize_start, kTimeBase + 1)}}}));
  const CliRun n = heapshots({none});
  CHECK(n.rc == 0);
  CHECK(n.out == none + ": no heapshots\n");
}

TEST_CASE("mlpd heapshots --diff: changed classes, --all, JSON, two files", "[cli][heapshots]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(3));
  const CliRun d = heapshots({"--diff", "0", "2", path});
  CHECK(d.rc == 0);
  CHECK(d.err.empty());
  CHECK(d.out ==
        "heapshot 0 -> 2 (0.500 s -> 1.500 s)\n"
        "         bytes    objects  class\n"
        "           +80         +2  Leaf\n"
        "           +64         +2  Node\n"
        "  (1 unchanged classes; --all lists them)\n"
        "total: +144 bytes, +4 objects (136 -> 280 bytes, 4 -> 8 objects)\n");
  const CliRun all = heapshots({"--diff", "0", "2", "--all", path});
  CHECK(all.rc == 0);
  CHECK(all.out ==
        "heapshot 0 -> 2 (0.500 s -> 1.500 s)\n"
        "         bytes    objects  class\n"
        "           +80         +2  Leaf\n"
        "           +64         +2  Node\n"
        "            +0         +0  Holder\n"
        "total: +144 bytes, +4 objects (136 -> 280 bytes, 4 -> 8 objects)\n");
  // Backwards: the deltas are negative.
  const CliRun back = heapshots({"--diff", "2", "0", "--top", "1", path});
  CHECK(back.rc == 0);
  // Largest growth first: the Nodes' -64 bytes before the Leafs' -80.
  CHECK_THAT(back.out, contains("\n           -64         -2  Node\n  (1 more classes)\n"));
  CHECK_THAT(back.out, contains("total: -144 bytes, -4 objects (280 -> 136 bytes, 8 -> 4 objects)\n"));

  // Two files (two runs): heapshot 0 of the first against heapshot 1 of the second, classes by name.
  const std::string other = dir.write("o.mlpd", heap_file(2));
  const CliRun two = heapshots({"--diff", "0", "1", path, other});
  CHECK(two.rc == 0);
  CHECK_THAT(two.out, contains("total: +72 bytes, +2 objects (136 -> 208 bytes, 4 -> 6 objects)\n"));

#if MLPD_HAVE_NLOHMANN_JSON
  const CliRun j = heapshots({"--diff", "0", "2", "--all", "--json", path});
  CHECK(j.rc == 0);
  REQUIRE(lines_of(j.out).size() == 1);
  const nlohmann::json x = nlohmann::json::parse(j.out);
  CHECK(x.at("from") == 0);
  CHECK(x.at("to") == 2);
  CHECK(x.at("objects") == 4);
  CHECK(x.at("bytes") == 144);
  REQUIRE(x.at("classes").size() == 3);
  CHECK(x.at("classes")[1].at("name") == "Node");
  CHECK(x.at("classes")[1].at("bytes") == 64);
  CHECK(x.at("classes")[2].at("bytes") == 0);
  const nlohmann::json changed = nlohmann::json::parse(heapshots({"--diff", "0", "2", "--json", path}).out);
  CHECK(changed.at("classes").size() == 2);  // without --all, Holder (unchanged) is left out
#endif

  // An index the file does not have: said, exit status 2.
  const CliRun bad = heapshots({"--diff", "0", "3", path});
  CHECK(bad.rc == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err == "mlpd heapshots: no heapshot 3: '" + path + "' has 3 (0..2)\n");
  const std::string none = dir.write("none.mlpd", build_file({ThreadBuffer{kThread, kTimeBase, {at(EventKind::gc_finalize_start, kTimeBase + 1)}}}));
  const CliRun empty = heapshots({"--diff", "0", "1", none});
  CHECK(empty.rc == 2);
  CHECK(empty.err == "mlpd heapshots: no heapshot 0: '" + none + "' has no heapshots\n");
}

TEST_CASE("mlpd heapshots --retained, --dominators, --paths", "[cli][heapshots]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(3));
  // The last heapshot (2): Holder retains 24 + 3 * 72 = 240, the Nodes 216 (each its Leaf), the
  // Leafs 120 of their 160 (one is unreached).
  const CliRun r = heapshots({"--retained", path});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out ==
        "heapshot 2 at 1.500 s: 8 objects, 280 bytes, 1 held by GC roots; unreached: 1 objects, 40 bytes\n"
        "      retained    objects      shallow  class\n"
        "           240          1           24  Holder\n"
        "           216          3           96  Node\n"
        "           120          4          160  Leaf\n");
  // --heapshot 0 --top 1.
  const CliRun r0 = heapshots({"--retained", "--heapshot", "0", "--top", "1", path});
  CHECK(r0.rc == 0);
  CHECK(r0.out ==
        "heapshot 0 at 0.500 s: 4 objects, 136 bytes, 1 held by GC roots; unreached: 1 objects, 40 bytes\n"
        "      retained    objects      shallow  class\n"
        "            96          1           24  Holder\n"
        "  (2 more classes)\n");

  // The dominator tree folded by class: static "Static Fields: Holder" -> Holder, then Node (3
  // instances), then Leaf.
  const CliRun dom = heapshots({"--dominators", path});
  CHECK(dom.rc == 0);
  const std::vector<std::string> dl = lines_of(dom.out);
  REQUIRE(dl.size() == 6);
  CHECK(dl[1] == "  subtrees of the dominator tree of at least 2 bytes, 4 levels, folded by class:");
  CHECK_THAT(dl[3], contains("  240 "));
  CHECK_THAT(dl[3], contains("-> Holder"));
  CHECK_THAT(dl[3], contains("static \"Static Fields"));
  CHECK_THAT(dl[4], contains("216"));
  CHECK_THAT(dl[4], contains("    Node"));
  CHECK_THAT(dl[5], contains("120"));
  CHECK_THAT(dl[5], contains("      Leaf"));
  // --depth 1: the top level only; --min-bytes above it: nothing.
  CHECK(lines_of(heapshots({"--dominators", "--depth", "1", path}).out).size() == 4);
  CHECK(lines_of(heapshots({"--dominators", "--min-bytes", "1K", path}).out).size() == 3);

  // --paths Leaf: the three reached Leafs, each by static -> Holder (+16..) -> Node (+16) -> Leaf.
  const CliRun p = heapshots({"--paths", "Leaf", "--max", "2", path});
  CHECK(p.rc == 0);
  const std::vector<std::string> pl = lines_of(p.out);
  REQUIRE(pl.size() == 4);
  CHECK(pl[1] == "  3 reached instances of Leaf, shortest paths from a GC root to the largest:");
  CHECK_THAT(pl[2], contains("  retained 40: root static \"Static Fields"));
  CHECK_THAT(pl[2], contains(" -> Holder -> Node (+"));
  CHECK_THAT(pl[2], contains(") -> Leaf (+16)"));
  const CliRun nobody = heapshots({"--paths", "Nobody", path});
  CHECK(nobody.rc == 0);
  CHECK_THAT(nobody.out, contains("  0 reached instances of Nobody\n"));

#if MLPD_HAVE_NLOHMANN_JSON
  const nlohmann::json rj = nlohmann::json::parse(heapshots({"--retained", "--json", path}).out);
  CHECK(rj.at("index") == 2);
  CHECK(rj.at("objects") == 8);
  CHECK(rj.at("bytes") == 280);
  CHECK(rj.at("unreached").at("objects") == 1);
  CHECK(rj.at("unreached").at("bytes") == 40);
  REQUIRE(rj.at("classes").size() == 3);
  CHECK(rj.at("classes")[0].at("name") == "Holder");
  CHECK(rj.at("classes")[0].at("retained") == 240);
  CHECK(rj.at("classes")[1].at("shallow") == 96);
  CHECK(rj.at("classes")[2].at("objects") == 4);

  const nlohmann::json dj = nlohmann::json::parse(heapshots({"--dominators", "--json", path}).out);
  REQUIRE(dj.at("subtrees").size() == 1);
  const nlohmann::json& holder = dj.at("subtrees")[0];
  CHECK(holder.at("root").at("kind") == "static");
  CHECK(holder.at("class") == "Holder");
  CHECK(holder.at("retained") == 240);
  CHECK(holder.at("objects") == 7);
  REQUIRE(holder.at("children").size() == 1);
  CHECK(holder.at("children")[0].at("class") == "Node");
  CHECK(holder.at("children")[0].at("instances") == 3);
  CHECK(holder.at("children")[0].at("retained") == 216);
  REQUIRE(holder.at("children")[0].at("children").size() == 1);
  CHECK(holder.at("children")[0].at("children")[0].at("class") == "Leaf");
  CHECK(holder.at("children")[0].at("children")[0].at("children").empty());

  const nlohmann::json pj = nlohmann::json::parse(heapshots({"--paths", "Node", "--json", "--heapshot", "1", path}).out);
  CHECK(pj.at("class") == "Node");
  REQUIRE(pj.at("paths").size() == 2);
  const nlohmann::json& first = pj.at("paths")[0];
  CHECK(first.at("retained") == 72);
  CHECK(first.at("root").at("kind") == "static");
  CHECK(first.at("length") == 2);
  REQUIRE(first.at("steps").size() == 2);
  CHECK(first.at("steps")[0].at("class") == "Holder");
  CHECK(first.at("steps")[0].at("offset").is_null());
  CHECK(first.at("steps")[1].at("class") == "Node");
  CHECK(first.at("steps")[1].at("offset").is_number());
#endif

  // No heapshots: said on standard output (text), nothing in JSON.
  const std::string none = dir.write("none.mlpd", build_file({ThreadBuffer{kThread, kTimeBase, {at(EventKind::gc_finalize_start, kTimeBase + 1)}}}));
  CHECK(heapshots({"--retained", none}).out == none + ": no heapshots\n");
  CHECK(heapshots({"--retained", "--json", none}).out.empty());
  // --heapshot past the end.
  const CliRun past = heapshots({"--retained", "--heapshot", "5", path});
  CHECK(past.rc == 2);
  CHECK(past.err == "mlpd heapshots: no heapshot 5: '" + path + "' has 3 (0..2)\n");
}

TEST_CASE("mlpd heapshots --diff --retained and --suspects: what grew", "[cli][heapshots]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(4));
  const CliRun g = heapshots({"--diff", "0", "3", "--retained", path});
  CHECK(g.rc == 0);
  CHECK(g.err.empty());
  // Holder's retained bytes grew from 96 to 312, the Nodes' from 72 to 288, the Leafs' from 40 to 160.
  CHECK_THAT(g.out, contains("+216"));
  CHECK_THAT(g.out, contains("Holder"));
  CHECK_THAT(g.out, contains("+120"));
  const CliRun s = heapshots({"--suspects", path});
  CHECK(s.rc == 0);
  CHECK_THAT(s.out, contains("Holder"));
  CHECK_THAT(s.out, contains("4 heapshots"));
#if MLPD_HAVE_NLOHMANN_JSON
  const nlohmann::json gj = nlohmann::json::parse(heapshots({"--diff", "0", "3", "--retained", "--json", path}).out);
  REQUIRE(gj.contains("classes"));
  std::map<std::string, int64_t> by_class;
  for (const auto& c : gj.at("classes")) by_class[c.at("name").get<std::string>()] = c.at("retained").get<int64_t>();
  CHECK(by_class["Holder"] == 216);
  CHECK(by_class["Node"] == 216);
  CHECK(by_class["Leaf"] == 120);
  const nlohmann::json sj = nlohmann::json::parse(heapshots({"--suspects", "--json", path}).out);
  REQUIRE(sj.contains("suspects"));
  REQUIRE(!sj.at("suspects").empty());
#endif
  // Fewer than 3 heapshots: nothing to suspect, said.
  const std::string two = dir.write("two.mlpd", heap_file(2));
  const CliRun s2 = heapshots({"--suspects", two});
  CHECK(s2.rc == 2);
  CHECK(s2.out.empty());
  CHECK(s2.err == "mlpd heapshots: --suspects needs 3 heapshots or more; '" + two + "' has 2\n");
  // An index the file does not have.
  const CliRun bad = heapshots({"--diff", "0", "9", "--retained", path});
  CHECK(bad.rc == 2);
  CHECK(bad.err == "mlpd heapshots: no heapshot 9: '" + path + "' has 4 (0..3)\n");
}

TEST_CASE("mlpd heapshots: refusals, one line each, exit status 2", "[cli][heapshots]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(2));
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, "no FILE given"},
      {{"--retained", "--dominators", path}, "--retained, --dominators, --paths, --suspects and --diff go one at a time"},
      {{"--retained", path, path}, "only one FILE at a time (two only with --diff)"},
      {{"--retained", "--all", path}, "--all only applies to --diff without --retained"},
      {{"--retained", "--max", "3", path}, "--max goes with --paths, --depth and --min-bytes with --dominators"},
      {{"--suspects", "--heapshot", "1", path}, "--heapshot does not go with --diff or --suspects"},
      {{"--diff", "0", "1", "--retained", "-", "-"}, "standard input given twice"},
      {{"--depth", "2", path}, "--heapshot, --max, --depth and --min-bytes go with --retained, --dominators or --paths"},
      {{path, path}, "only one FILE at a time (two only with --diff)"},
      {{"--diff", "0", "1", "-", "-"}, "standard input given twice"},
      {{"--all", path}, "--all only applies to --diff"},
      {{"--diff", "0", "x", path}, "--diff needs two heapshot indices (0, 1, ...)"},
      {{"--diff", "0", "1", "--diff", "0", "1", path}, "--diff given twice"},
      {{"--top", "many", path}, "--top needs a number of classes"},
      {{"--top", "1", "--top", "2", path}, "--top given twice"},
      {{"--retained", "--heapshot", "-1", path}, "--heapshot needs a heapshot index (0, 1, ...)"},
      {{"--paths", "", path}, "--paths needs a class name"},
      {{"--dominators", "--depth", "0", path}, "--depth needs one number of levels (1, 2, ...)"},
      {{"--dominators", "--min-bytes", "lots", path}, "--min-bytes needs one size (4096, 64K, 1M, ...)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const CliRun r = heapshots(c.args);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(lines_of(r.err).size() == 1);
    CHECK_THAT(r.err, contains("mlpd heapshots: " + c.message));
  }
  // --help: the usage on standard output, exit status 0.
  const CliRun help = heapshots({"--help"});
  CHECK(help.rc == 0);
  CHECK_THAT(help.out, contains("usage: mlpd heapshots [--json]"));
}

TEST_CASE("mlpd heapshots: a file that cannot be read, a damaged file", "[cli][heapshots]") {
  TempDir dir;
  const CliRun missing = heapshots({dir.file("missing.mlpd")});
  CHECK(missing.rc == 1);
  CHECK_THAT(missing.err, contains("mlpd heapshots: cannot open '" + dir.file("missing.mlpd") + "'"));
  const CliRun is_dir = heapshots({"--retained", dir.path.string()});
  CHECK(is_dir.rc == 1);
  CHECK_THAT(is_dir.err, contains("cannot open '" + dir.path.string() + "': Is a directory"));
  const CliRun list_dir = heapshots({dir.path.string()});
  CHECK(list_dir.rc == 1);
  CHECK_THAT(list_dir.err, contains("Is a directory"));
  // Cut in the middle of its buffer: what could be read is listed, the problem said with its offset,
  // exit status 1.
  std::vector<uint8_t> bytes = build_file({ThreadBuffer{kThread, kTimeBase, heap_events(1)},
                                           ThreadBuffer{kThread, kTimeBase, heap_events(2)}});
  bytes.resize(bytes.size() - 20);
  const std::string cut = dir.write("cut.mlpd", bytes);
  const CliRun r = heapshots({cut});
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, contains("heapshot 0 at 0.500 s: 4 objects, 136 bytes"));
  CHECK_THAT(r.err, contains(cut + ": offset "));
  const CliRun rr = heapshots({"--retained", "--heapshot", "0", cut});
  CHECK(rr.rc == 1);
  CHECK_THAT(rr.out, contains("heapshot 0 at 0.500 s: 4 objects, 136 bytes"));
  CHECK_THAT(rr.err, contains(cut + ": offset "));
}

TEST_CASE("mlpd export --what retained: collapsed stacks, the flame graph page, pprof", "[cli][export]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(3));
  // Collapsed: each frame's own bytes (retained less what its children retain): the Holder 24, the
  // Nodes 96, the Leafs 120.
  const std::string col = dir.file("r.collapsed");
  const CliRun c = export_cmd({"--what", "retained", "-o", col, path});
  CHECK(c.rc == 0);
  CHECK(c.err.empty());
  const std::vector<std::string> stacks = lines_of(read_text(col));
  REQUIRE(stacks.size() == 3);
  CHECK_THAT(stacks[0], contains(";Holder 24"));
  CHECK_THAT(stacks[1], contains(";Holder;Node 96"));
  CHECK_THAT(stacks[2], contains(";Holder;Node;Leaf 120"));
  CHECK(stacks[0].rfind("static \"Static Fields", 0) == 0);
  // --heapshot 0 --depth 1 to .txt: the Holder's frame takes what is below it.
  const std::string txt = dir.file("r.txt");
  CHECK(export_cmd({"--what=retained", "--heapshot", "0", "--depth", "1", "-o", txt, path}).rc == 0);
  const std::vector<std::string> shallow = lines_of(read_text(txt));
  REQUIRE(shallow.size() == 1);
  CHECK_THAT(shallow[0], contains(";Holder 96"));

  // The flame graph page: titled, self-contained.
  const std::string html = dir.file("r.html");
  CHECK(export_cmd({"-o", html, "--what", "retained", path}).rc == 0);
  const std::string page = read_text(html);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(page, contains("retained bytes, heapshot 2 of " + path));
  CHECK_THAT(page, contains("Holder"));

  // pprof, decoded back: sample type retained/bytes, the three stacks with their bytes.
  const std::string pb = dir.file("r.pb.gz");
  CHECK(export_cmd({"--what", "retained", "--output", pb, path}).rc == 0);
  perftools::profiles::Profile prof;
  REQUIRE(prof.ParseFromString(gunzip(read_text(pb))));
  REQUIRE(prof.sample_type_size() == 1);
  CHECK(prof.string_table(prof.sample_type(0).type()) == "retained");
  CHECK(prof.string_table(prof.sample_type(0).unit()) == "bytes");
  std::map<uint64_t, std::string> fn;
  for (const auto& f : prof.function()) fn[f.id()] = prof.string_table(f.name());
  std::map<uint64_t, std::string> loc;
  for (const auto& l : prof.location()) loc[l.id()] = l.line_size() ? fn[l.line(0).function_id()] : "";
  std::map<std::string, int64_t> by_leaf;
  int64_t total = 0;
  for (const auto& s : prof.sample()) {
    REQUIRE(s.location_id_size() > 0);
    by_leaf[loc[s.location_id(0)]] += s.value(0);
    total += s.value(0);
  }
  CHECK(total == 240);
  CHECK(by_leaf["Holder"] == 24);
  CHECK(by_leaf["Node"] == 96);
  CHECK(by_leaf["Leaf"] == 120);
}

TEST_CASE("mlpd export --what retained: refusals and what the file lacks", "[cli][export]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(2));
  const std::string none = dir.write("none.mlpd", build_file({ThreadBuffer{kThread, kTimeBase, {at(EventKind::gc_finalize_start, kTimeBase + 1)}}}));
  struct Case {
    std::vector<std::string> args;
    int rc;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--what", "retained", "-o", dir.file("x.html")}, 2, "mlpd export --what retained: no FILE"},
      {{"--what", "retained", path}, 2, "--what retained needs -o OUT (.html, .collapsed or .txt)"},
      {{"--what", "retained", "-o", dir.file("x.svg"), path}, 2,
       "--what retained writes .html, .pb.gz, .collapsed or .txt, not '" + dir.file("x.svg") + "'"},
      {{"--what", "retained", "-o", dir.file("x.html"), path, path}, 2, "--what retained reads one FILE"},
      {{"--what", "retained", "--what", "cpu", "-o", dir.file("x.html"), path}, 2,
       "--what retained does not go with another --what"},
      {{"--what", "retained", "--heapshot", "x", "-o", dir.file("x.html"), path}, 2,
       "--heapshot needs a heapshot index (0, 1, ...)"},
      {{"--what", "retained", "--depth", "0", "-o", dir.file("x.html"), path}, 2, "--depth needs a number of levels"},
      {{"--what", "retained", "--heapshot", "2", "-o", dir.file("x.html"), path}, 2,
       "mlpd export: no heapshot 2: '" + path + "' has 2"},
      {{"--what", "retained", "-o", dir.file("x.html"), none}, 2,
       "mlpd export: '" + none + "' has no heapshots (record with the heapshot option)"},
      {{"--what", "retained", "-o", dir.file("x.html"), dir.file("missing.mlpd")}, 1,
       "mlpd export: cannot open '" + dir.file("missing.mlpd") + "'"},
      {{"--what", "retained", "-o", dir.file("no/such/dir/x.html"), path}, 1,
       "mlpd export: cannot write '" + dir.file("no/such/dir/x.html") + "'"},
      {{"--what", "retained", "-o", dir.file("no/such/dir/x.pb.gz"), path}, 1,
       "mlpd export: cannot write '" + dir.file("no/such/dir/x.pb.gz") + "'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const CliRun r = export_cmd(c.args);
    CHECK(r.rc == c.rc);
    CHECK(r.out.empty());
    CHECK(lines_of(r.err).size() == 1);
    CHECK_THAT(r.err, contains(c.message));
  }
  CHECK(!std::filesystem::exists(dir.file("x.html")));
  // --help, before or after --what retained: this command's usage.
  for (const auto& args : {std::vector<std::string>{"--what", "retained", "--help"},
                           std::vector<std::string>{"--help", "--what", "retained"}}) {
    const CliRun h = export_cmd(args);
    CHECK(h.rc == 0);
    CHECK(h.out.rfind("usage: mlpd export --what retained", 0) == 0);
  }
}

TEST_CASE("mlpd export: --what retained as the parser reads the arguments", "[cli][export]") {
  TempDir dir;
  const std::string path = dir.write("h.mlpd", heap_file(2));
  // Anywhere among the options, spelled either way, after an unknown option (whose refusal is then the
  // retained export's), with --help before it: the retained export.
  CHECK(export_cmd({path, "-o", dir.file("a.collapsed"), "--what=retained"}).rc == 0);
  CHECK(lines_of(read_text(dir.file("a.collapsed"))).size() == 3);
  const CliRun bogus = export_cmd({"--bogus", "--what", "retained", "-o", dir.file("b.html"), path});
  CHECK(bogus.rc == 2);
  CHECK(bogus.err == "mlpd export --what retained: unknown option '--bogus' (try 'mlpd export --what retained --help')\n");
  const CliRun threads = export_cmd({"--what", "retained", "--threads", "-o", dir.file("b.html"), path});
  CHECK(threads.rc == 2);
  CHECK(threads.err == "mlpd export --what retained: unknown option '--threads' (try 'mlpd export --what retained --help')\n");
  // Not an option: the value of another option, or a file name after `--`: a profile's export.
  const CliRun as_value = export_cmd({"--format", "--what", "retained", path});
  CHECK(as_value.rc == 2);
  CHECK(as_value.err ==
        "mlpd export: unknown --format '--what' (collapsed, html, speedscope, trace, pprof, heatmap) (try 'mlpd export --help')\n");
  const CliRun as_file = export_cmd({"--", "--what", "retained"});
  CHECK(as_file.rc == 2);
  CHECK(as_file.err == "mlpd export: give --format F or -o OUT (try 'mlpd export --help')\n");
  // The retained export's options are not a profile's.
  const CliRun heapshot = export_cmd({"--heapshot", "1", "-o", dir.file("c.collapsed"), path});
  CHECK(heapshot.rc == 2);
  CHECK(heapshot.err == "mlpd export: unknown option '--heapshot' (try 'mlpd export --help')\n");
}
