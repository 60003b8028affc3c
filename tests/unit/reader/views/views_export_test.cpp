// The exporters (reader/views: export_pprof.cpp, export_speedscope.cpp, export_trace.cpp, html.cpp,
// heatmap.cpp, collapsed.cpp) on small hand-built profiles, each output decoded back by the library
// its format is written for (protobuf for pprof; nlohmann::json for the JSON ones, where the host has
// it) and compared with the model's own stacks (views::collapse): the same frames, the same weights.
#include "gunzip.h"
#include "mlpd_catch.h"

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "event_gen.h"
#include "event_makers.h"
#include "mlpd/input.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"
#include "profile.pb.h"

#if MLPD_HAVE_NLOHMANN_JSON
#include <nlohmann/json.hpp>
#endif

using namespace mlpd;
using namespace mlpd::profile;
using namespace mlpd::test;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000, kC = 0x3000;

// Two threads: samples (A;B three times, A;C once, on thread 0x99; A;B once more on 0x98), allocations
// with backtraces (A;C: 2 of 24 bytes, A: 1 of 100 bytes) and calls (A [B] [C]) on thread 0x77.
std::vector<ThreadBuffer> buffers() {
  std::vector<Event> ev = {jit(kA, 0x10000, 0x100, "N:A ()"), jit(kB, 0x20000, 0x100, "N:B ()"),
                           jit(kC, 0x30000, 0x100, "N:C (int)")};
  auto hit = [&](uint64_t t, uint64_t thread, std::vector<uint64_t> frames) {
    Event h = at(EventKind::sample_hit, t);
    h.ptr = thread;
    h.ips = {frames.front() == kB ? 0x20010u : 0x30010u};
    h.frames = std::move(frames);
    ev.push_back(h);
  };
  hit(100, 0x99, {kB, kA});
  hit(30'000'000, 0x99, {kB, kA});
  hit(30'000'100, 0x99, {kB, kA});
  hit(1'210'000'000, 0x99, {kC, kA});
  hit(1'210'000'100, 0x98, {kB, kA});
  for (int i = 0; i < 3; ++i) {
    Event a = at(EventKind::alloc, 200 + static_cast<uint64_t>(i));
    a.ptr = 0x5000;
    a.obj = 0x8000 + 8 * static_cast<uint64_t>(i);
    a.size = i == 2 ? 100 : 24;
    a.has_backtrace = true;
    a.backtrace = i == 2 ? std::vector<uint64_t>{kA} : std::vector<uint64_t>{kA, kC};
    ev.push_back(a);
  }
  std::vector<Event> calls = {at(EventKind::method_enter, 1000, kA), at(EventKind::method_enter, 1100, kB),
                              at(EventKind::method_leave, 1400, kB), at(EventKind::method_enter, 1500, kC),
                              at(EventKind::method_leave, 1600, kC), at(EventKind::method_leave, 2000, kA)};
  return {{0x99, 0, ev}, {0x77, 0, calls}};
}

struct Built {
  Profile profile;
};

// The profile of buffers(), built with the exporter's listener (the trace and evented exports need it).
std::unique_ptr<Built> build(views::Exporter* exporter) {
  static const std::vector<uint8_t> file = build_file(buffers());
  auto input = Input::from_memory(file.data(), file.size());
  auto b = std::make_unique<Built>();
  BuildOptions o;
  o.listener = exporter ? exporter->listener() : nullptr;
  build_profile(*input, b->profile, o);
  REQUIRE(b->profile.problems().empty());
  return b;
}

std::string export_with(std::unique_ptr<views::Exporter> e, Profile* out_profile = nullptr) {
  auto b = build(e.get());
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  std::string error;
  REQUIRE(e->write(b->profile, f, error));
  CHECK(error.empty());
  std::rewind(f);
  std::string bytes;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
  std::fclose(f);
  if (out_profile) *out_profile = std::move(b->profile);
  return bytes;
}

views::ExportOptions options(What w, bool threads = false) {
  views::ExportOptions o;
  o.what = w;
  o.what_given = true;
  o.threads = threads;
  o.input_name = "hand-built.mlpd";
  return o;
}

// The model's stacks of `w` as "frame;frame;leaf" -> weight.
std::map<std::string, uint64_t> model_stacks(What w, bool threads = false) {
  auto b = build(nullptr);
  std::map<std::string, uint64_t> out;
  for (const auto& s : views::collapse(b->profile, w, threads)) out[s.stack] += s.weight;
  return out;
}


// pprof's samples as "root;...;leaf" -> the value at `index`.
std::map<std::string, uint64_t> pprof_stacks(const perftools::profiles::Profile& pb, int index) {
  std::map<uint64_t, std::string> function_names;
  for (const auto& f : pb.function()) function_names[f.id()] = pb.string_table(static_cast<int>(f.name()));
  std::map<uint64_t, std::string> location_names;
  for (const auto& l : pb.location()) {
    REQUIRE(l.line_size() == 1);
    location_names[l.id()] = function_names.at(l.line(0).function_id());
  }
  std::map<std::string, uint64_t> out;
  for (const auto& s : pb.sample()) {
    std::string stack;
    for (int i = s.location_id_size(); i-- > 0;) {  // leaf first in pprof
      if (!stack.empty()) stack += ';';
      stack += location_names.at(s.location_id(i));
    }
    out[stack] += static_cast<uint64_t>(s.value(index));
  }
  return out;
}

}  // namespace

TEST_CASE("pprof export: the samples decode back to the model's stacks", "[views]") {
  perftools::profiles::Profile pb;
  REQUIRE(pb.ParseFromString(gunzip(export_with(views::make_pprof_exporter(options(What::cpu))))));
  REQUIRE(pb.string_table_size() > 0);
  CHECK(pb.string_table(0).empty());
  REQUIRE(pb.sample_type_size() == 1);
  CHECK(pb.string_table(static_cast<int>(pb.sample_type(0).type())) == "samples");
  CHECK(pb.string_table(static_cast<int>(pb.sample_type(0).unit())) == "count");
  const auto got = pprof_stacks(pb, 0);
  CHECK(got == model_stacks(What::cpu));
  CHECK(got.at("N:A ();N:B ()") == 4);
  CHECK(got.at("N:A ();N:C (int)") == 1);
}

TEST_CASE("pprof export: allocations carry objects and bytes, bytes the default", "[views]") {
  perftools::profiles::Profile pb;
  REQUIRE(pb.ParseFromString(gunzip(export_with(views::make_pprof_exporter(options(What::alloc_bytes))))));
  REQUIRE(pb.sample_type_size() == 2);
  CHECK(pb.string_table(static_cast<int>(pb.sample_type(0).type())) == "alloc_objects");
  CHECK(pb.string_table(static_cast<int>(pb.sample_type(1).type())) == "alloc_space");
  CHECK(pb.string_table(static_cast<int>(pb.default_sample_type())) == "alloc_space");
  CHECK(pprof_stacks(pb, 0) == model_stacks(What::alloc));
  CHECK(pprof_stacks(pb, 1) == model_stacks(What::alloc_bytes));
  CHECK(pprof_stacks(pb, 1).at("N:A ();N:C (int)") == 48);
  CHECK(pprof_stacks(pb, 1).at("N:A ()") == 100);
}

TEST_CASE("pprof export: calls weigh self nanoseconds", "[views]") {
  perftools::profiles::Profile pb;
  REQUIRE(pb.ParseFromString(gunzip(export_with(views::make_pprof_exporter(options(What::calls))))));
  REQUIRE(pb.sample_type_size() == 2);
  const auto self = pprof_stacks(pb, 1);
  CHECK(self == model_stacks(What::calls));
  CHECK(self.at("N:A ()") == 600);  // 1000 ns less B's 300 and C's 100
  CHECK(self.at("N:A ();N:B ()") == 300);
  CHECK(pprof_stacks(pb, 0).at("N:A ();N:C (int)") == 1);
}

TEST_CASE("collapsed export: one line per stack, the model's weights", "[views]") {
  const std::string text = export_with(views::make_collapsed_exporter(options(What::cpu, true)));
  std::map<std::string, uint64_t> got;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    REQUIRE(end != std::string::npos);
    const std::string line = text.substr(start, end - start);
    const size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    got[line.substr(0, space)] += std::stoull(line.substr(space + 1));
    start = end + 1;
  }
  CHECK(got == model_stacks(What::cpu, true));
  CHECK(got.at("thread 0x99;N:A ();N:B ()") == 3);
  CHECK(got.at("thread 0x98;N:A ();N:B ()") == 1);
}

TEST_CASE("diff: stacks joined by name, threads matched by name, the collapsed text", "[views]") {
  auto a = build(nullptr);
  auto b = build(nullptr);
  views::DiffOptions d;
  d.what = What::cpu;
  d.name_a = "a.mlpd";
  d.name_b = "b.mlpd";
  const views::FlameGraphInput same = views::diff_stacks(a->profile, b->profile, d);
  CHECK(same.diff);
  CHECK(same.title == "cpu diff: a.mlpd -> b.mlpd");
  REQUIRE(same.stacks.size() == same.base.size());
  for (size_t i = 0; i < same.stacks.size(); ++i) CHECK(same.stacks[i].weight == same.base[i]);
  CHECK(views::diff_collapsed_text(same) == "N:A ();N:B () 4 4\nN:A ();N:C (int) 1 1\n");
  // One side without samples: every stack is A's base only.
  d.what = What::alloc;
  const views::FlameGraphInput alloc = views::diff_stacks(a->profile, b->profile, d);
  CHECK(views::diff_collapsed_text(alloc) == "N:A () 1 1\nN:A ();N:C (int) 2 2\n");
  // Threads: "thread 0x99" has no " (0x" id suffix to drop; named threads would lose theirs.
  views::FlameGraphInput in;
  in.stacks = {{"t;x", "tm", 3}};
  in.base = {5};
  CHECK(views::diff_collapsed_text(in) == "t;x 5 3\n");
}

#if MLPD_HAVE_NLOHMANN_JSON

namespace {

// The JSON inside <script id="ID" type="application/json">...</script>.
nlohmann::json script_json(const std::string& page, const std::string& id) {
  const std::string open = "<script id=\"" + id + "\" type=\"application/json\">";
  const size_t at = page.find(open);
  REQUIRE(at != std::string::npos);
  const size_t begin = at + open.size(), end = page.find("</script>", begin);
  REQUIRE(end != std::string::npos);
  return nlohmann::json::parse(page.substr(begin, end - begin));
}

// The flame graph page's tree (pre-order (name, kind, depth, self) tuples under a root "all") back to
// stacks.
std::map<std::string, uint64_t> flame_stacks(const nlohmann::json& d) {
  const auto& names = d.at("names");
  const auto& nodes = d.at("nodes");
  const size_t width = d.at("diff").get<bool>() ? 5 : 4;
  REQUIRE(nodes.size() % width == 0);
  std::vector<std::string> path;
  std::map<std::string, uint64_t> out;
  for (size_t i = 0; i < nodes.size(); i += width) {
    const auto depth = nodes[i + 2].get<size_t>();
    const auto self = nodes[i + 3].get<uint64_t>();
    path.resize(depth);
    path.push_back(names.at(nodes[i].get<size_t>()).get<std::string>());
    if (!self) continue;
    std::string stack;
    for (size_t k = 1; k < path.size(); ++k) stack += (k > 1 ? ";" : "") + path[k];
    out[stack] += self;
  }
  return out;
}

}  // namespace

TEST_CASE("speedscope export: sampled profile, frames and weights as the model's", "[views]") {
  const auto d = nlohmann::json::parse(export_with(views::make_speedscope_exporter(options(What::cpu))));
  CHECK(d.at("$schema") == "https://www.speedscope.app/file-format-schema.json");
  const auto& frames = d.at("shared").at("frames");
  REQUIRE(d.at("profiles").size() == 1);
  const auto& prof = d.at("profiles")[0];
  CHECK(prof.at("type") == "sampled");
  CHECK(prof.at("unit") == "none");
  const auto& samples = prof.at("samples");
  const auto& weights = prof.at("weights");
  REQUIRE(samples.size() == weights.size());
  std::map<std::string, uint64_t> got;
  uint64_t sum = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    std::string stack;
    for (const auto& f : samples[i]) stack += (stack.empty() ? "" : ";") + frames.at(f.get<size_t>()).at("name").get<std::string>();
    got[stack] += weights[i].get<uint64_t>();
    sum += weights[i].get<uint64_t>();
  }
  CHECK(got == model_stacks(What::cpu));
  CHECK(sum == 5);
  CHECK(prof.at("endValue").get<uint64_t>() == sum);
}

TEST_CASE("speedscope export: --what calls is evented per thread, balanced", "[views]") {
  const auto d = nlohmann::json::parse(export_with(views::make_speedscope_exporter(options(What::calls))));
  const auto& frames = d.at("shared").at("frames");
  REQUIRE(d.at("profiles").size() == 1);  // one thread made calls
  const auto& prof = d.at("profiles")[0];
  CHECK(prof.at("type") == "evented");
  std::vector<std::string> open;
  std::vector<std::string> order;
  uint64_t last = 0;
  for (const auto& e : prof.at("events")) {
    const auto at_ns = e.at("at").get<uint64_t>();
    CHECK(at_ns >= last);
    last = at_ns;
    const std::string name = frames.at(e.at("frame").get<size_t>()).at("name");
    if (e.at("type") == "O") {
      open.push_back(name);
      order.push_back(name);
    } else {
      REQUIRE(!open.empty());
      CHECK(open.back() == name);
      open.pop_back();
    }
  }
  CHECK(open.empty());
  CHECK(order == std::vector<std::string>{"N:A ()", "N:B ()", "N:C (int)"});
  CHECK(prof.at("endValue").get<uint64_t>() - prof.at("startValue").get<uint64_t>() >= 1000);
}

TEST_CASE("trace export: spans per thread as complete events with the calls' durations", "[views]") {
  const auto d = nlohmann::json::parse(export_with(views::make_trace_exporter(options(What::calls))));
  std::map<std::string, double> durations;
  std::map<int64_t, std::string> thread_names;
  size_t instants = 0;
  for (const auto& e : d.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") thread_names[e.at("tid")] = e.at("args").at("name");
    if (ph == "X") durations[e.at("name")] += e.at("dur").get<double>();
    if (ph == "i") ++instants;
  }
  CHECK(durations.at("N:A ()") == Approx(1.0));  // microseconds
  CHECK(durations.at("N:B ()") == Approx(0.3));
  CHECK(durations.at("N:C (int)") == Approx(0.1));
  CHECK(instants >= 5);  // the samples
  bool named = false;
  for (const auto& [tid, name] : thread_names) named |= name.find("0x77") != std::string::npos;
  CHECK(named);
}

TEST_CASE("html flame graph: the page's tree is the model's stacks", "[views]") {
  const std::string page = export_with(views::make_html_exporter(options(What::alloc_bytes)));
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  const auto d = script_json(page, "profile");
  CHECK(d.at("unit") == "bytes");
  CHECK_FALSE(d.at("diff").get<bool>());
  CHECK(flame_stacks(d) == model_stacks(What::alloc_bytes));
}

TEST_CASE("html flame graph: a diff carries the base weight of each node", "[views]") {
  views::FlameGraphInput in;
  in.title = "diff </script> title";  // must not close the page's script
  in.unit = "samples";
  in.diff = true;
  in.stacks = {{"a;b", "mm", 5}, {"a;c", "mn", 2}};
  in.base = {3, 0};
  const std::string page = views::flame_graph_html(in);
  const auto d = script_json(page, "profile");
  CHECK(d.at("title") == "diff </script> title");
  CHECK(flame_stacks(d) == std::map<std::string, uint64_t>{{"a;b", 5}, {"a;c", 2}});
  const auto& nodes = d.at("nodes");
  uint64_t base = 0;
  for (size_t i = 0; i < nodes.size(); i += 5) base += nodes[i + 4].get<uint64_t>();
  CHECK(base == 3);
}

TEST_CASE("heatmap: samples per 20 ms slot, one column per second", "[views]") {
  const std::string page = export_with(views::make_heatmap_exporter(options(What::cpu)));
  const auto d = script_json(page, "heat");
  CHECK(d.at("rows") == 50);
  CHECK(d.at("cols") == 2);  // samples in seconds 0 and 1
  const auto& grid = d.at("grid");
  REQUIRE(grid.size() == 100);
  uint64_t sum = 0;
  for (const auto& v : grid) sum += v.get<uint64_t>();
  CHECK(sum == 5);
  CHECK(grid[0] == 1);   // 100 ns: second 0, slot 0
  CHECK(grid[1] == 2);   // 30 ms: second 0, slot 1
  INFO(grid.dump());
  CHECK(grid[60] == 2);  // 1.21 s: second 1, slot 10
}

#endif  // MLPD_HAVE_NLOHMANN_JSON
