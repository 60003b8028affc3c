// push= (agent/include/mlpd/agent/push_profile.h): the interval's CPU profile built from the bytes the
// helper writes, checked by decoding its gzipped pprof with the protobuf library (the reader's
// profile.proto): sample stacks named leaf first as the reader names them, buffers split across pieces
// at every size, zip's members, the interval reset, the bound on distinct stacks, garbage.
#include "gunzip.h"
#include "mlpd_catch.h"

#include <zlib.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "event_gen.h"
#include "event_makers.h"
#include "mlpd/agent/push_profile.h"
#include "profile.pb.h"

using namespace mlpd;
using namespace mlpd::test;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000;

Event hit(std::vector<uint64_t> ips, std::vector<uint64_t> frames, uint64_t t) {
  Event e;
  e.kind = EventKind::sample_hit;
  e.time = t;
  e.ptr = 0x99;
  e.ips = std::move(ips);
  e.frames = std::move(frames);
  return e;
}

std::vector<uint8_t> buffers() {
  std::vector<Event> meta{jit(kA, 0x10000, 0x100, "N:A ()"), jit(kB, 0x20000, 0x100, "N:B ()")};
  Event usym;
  usym.kind = EventKind::sample_usym;
  usym.ptr = 0x7000;
  usym.size = 0x100;
  usym.name = "native_leaf";
  meta.push_back(usym);
  std::vector<uint8_t> out = encode_buffer({0x77, 0, meta});
  std::vector<Event> ev;
  for (int i = 0; i < 3; ++i) ev.push_back(hit({0x7010, 0xabcdef00}, {kB, kA}, 100 + i));  // native leaf, unnamed, B, A
  for (int i = 0; i < 2; ++i) ev.push_back(hit({0x20010}, {kB, kA}, 200 + i));  // an IP in B itself: B, A
  ev.push_back(hit({0x10020}, {}, 300));                                     // an IP in A, no managed frames
  const std::vector<uint8_t> b = encode_buffer({0x99, 50, ev});
  out.insert(out.end(), b.begin(), b.end());
  return out;
}


// "leaf;...;root" -> samples, from the pprof.
std::map<std::string, int64_t> stacks_of(const std::string& gz, perftools::profiles::Profile& pb) {
  REQUIRE(pb.ParseFromString(gunzip(gz)));
  std::map<uint64_t, std::string> fn, loc;
  for (const auto& f : pb.function()) fn[f.id()] = pb.string_table(static_cast<int>(f.name()));
  for (const auto& l : pb.location()) {
    REQUIRE(l.line_size() == 1);
    loc[l.id()] = fn.at(l.line(0).function_id());
  }
  std::map<std::string, int64_t> out;
  for (const auto& s : pb.sample()) {
    std::string k;
    for (const uint64_t id : s.location_id()) k += (k.empty() ? "" : ";") + loc.at(id);
    REQUIRE(s.value_size() == 1);
    out[k] += s.value(0);
  }
  return out;
}

const std::map<std::string, int64_t> kExpected = {
    {"native_leaf;[native code, unnamed];N:B ();N:A ()", 3},
    {"N:B ();N:A ()", 2},
    {"N:A ()", 1},
};

}  // namespace

TEST_CASE("push profile: the interval's samples as pprof, named as the reader names them", "[push]") {
  const std::vector<uint8_t> bytes = buffers();
  for (const size_t piece : {bytes.size(), size_t{1}, size_t{7}, size_t{48}, size_t{49}, size_t{100}}) {
    INFO("pieces of " << piece << " bytes");
    agent::PushProfile p;
    for (size_t at = 0; at < bytes.size(); at += piece) p.absorb(bytes.data() + at, std::min(piece, bytes.size() - at));
    CHECK(p.problems() == 0);
    CHECK(p.samples_total() == 6);
    uint64_t samples = 0;
    const std::string gz = p.take_pprof(1700000000000000000, 15000000000, samples);
    CHECK(samples == 6);
    perftools::profiles::Profile pb;
    CHECK(stacks_of(gz, pb) == kExpected);
    REQUIRE(pb.sample_type_size() == 1);
    CHECK(pb.string_table(static_cast<int>(pb.sample_type(0).type())) == "samples");
    CHECK(pb.string_table(static_cast<int>(pb.sample_type(0).unit())) == "count");
    CHECK(pb.time_nanos() == 1700000000000000000);
    CHECK(pb.duration_nanos() == 15000000000);
    // The next interval starts empty; the names stay.
    CHECK(p.take_pprof(0, 1, samples).empty());
    CHECK(samples == 0);
    const std::vector<uint8_t> again = encode_buffer({0x99, 400, {hit({0x20010}, {kB, kA}, 400)}});
    p.absorb(again.data(), again.size());
    CHECK(stacks_of(p.take_pprof(0, 1, samples), pb) == std::map<std::string, int64_t>{{"N:B ();N:A ()", 1}});
  }
}

TEST_CASE("push profile: zip's members are inflated, across pieces", "[push]") {
  const std::vector<uint8_t> raw = buffers();
  const size_t split = raw.size() / 2;  // two members, as two threads' full buffers would be... roughly
  std::vector<uint8_t> gz = gzip(std::vector<uint8_t>(raw.begin(), raw.begin() + static_cast<long>(split)));
  const std::vector<uint8_t> second = gzip(std::vector<uint8_t>(raw.begin() + static_cast<long>(split), raw.end()));
  gz.insert(gz.end(), second.begin(), second.end());
  for (const size_t piece : {gz.size(), size_t{1}, size_t{13}}) {
    INFO("pieces of " << piece << " bytes");
    agent::PushProfile p;
    for (size_t at = 0; at < gz.size(); at += piece) p.absorb_member(gz.data() + at, std::min(piece, gz.size() - at));
    CHECK(p.problems() == 0);
    uint64_t samples = 0;
    perftools::profiles::Profile pb;
    CHECK(stacks_of(p.take_pprof(0, 1, samples), pb) == kExpected);
  }
}

TEST_CASE("push profile: distinct stacks are bounded, samples are not lost", "[push]") {
  agent::PushProfile p;
  const size_t n = agent::PushProfile::kMaxStacks + 10;
  std::vector<Event> ev;
  for (size_t i = 0; i < n; ++i) ev.push_back(hit({0x900000 + i * 16}, {}, 10 + i));
  const std::vector<uint8_t> b = encode_buffer({0x99, 0, ev});
  p.absorb(b.data(), b.size());
  uint64_t samples = 0;
  perftools::profiles::Profile pb;
  const auto stacks = stacks_of(p.take_pprof(0, 1, samples), pb);
  CHECK(samples == n);
  CHECK(stacks.at("[more stacks than push keeps]") == 10);
  // Every other IP is unnamed: one function for all of them.
  CHECK(stacks.at("[native code, unnamed]") == static_cast<int64_t>(agent::PushProfile::kMaxStacks));
}

TEST_CASE("push profile: bytes that are not buffers are counted, never trusted", "[push]") {
  agent::PushProfile p;
  std::vector<uint8_t> junk(1000, 0xab);
  p.absorb(junk.data(), junk.size());
  CHECK(p.problems() == 1);
  p.absorb_member(junk.data(), junk.size());
  CHECK(p.problems() == 2);
  // A buffer whose events are cut: what decodes counts, the rest is a problem.
  std::vector<uint8_t> b = buffers();
  // The second buffer's events (after its 48-byte header): bytes no event starts with.
  const size_t first_len = 48 + (b[4] | b[5] << 8 | b[6] << 16 | static_cast<size_t>(b[7]) << 24);
  for (size_t i = first_len + 48; i < b.size(); ++i) b[i] = 0xff;
  agent::PushProfile q;
  q.absorb(b.data(), b.size());
  CHECK(q.problems() >= 1);
  uint64_t samples = 0;
  (void)q.take_pprof(0, 1, samples);
  CHECK(samples == 0);
}

TEST_CASE("push profile: allocations by backtrace, weighed as the reader weighs alloc-sample", "[push]") {
  std::vector<Event> ev{jit(kA, 0x10000, 0x100, "N:A ()"), jit(kB, 0x20000, 0x100, "N:B ()")};
  auto alloc = [](uint64_t size, std::vector<uint64_t> bt) {
    Event e;
    e.kind = EventKind::alloc;
    e.time = 10;
    e.ptr = 0x5000;  // vtable
    e.obj = 0x7f0000001000;
    e.size = size;
    e.has_backtrace = !bt.empty();
    e.backtrace = std::move(bt);  // outermost first, as in the file
    return e;
  };
  ev.push_back(alloc(32, {kA, kB}));  // A called B, which allocated
  ev.push_back(alloc(64, {kA, kB}));
  ev.push_back(alloc(1000, {kA}));
  ev.push_back(alloc(16, {}));
  const std::vector<uint8_t> b = encode_buffer({0x99, 0, ev});
  {
    agent::PushProfile p;
    p.absorb(b.data(), b.size());
    uint64_t objects = 0, samples = 0;
    CHECK(p.take_pprof(0, 1, samples).empty());  // no CPU samples: no CPU profile
    const std::string gz = p.take_alloc_pprof(0, 1, objects);
    CHECK(objects == 4);
    perftools::profiles::Profile pb;
    REQUIRE(pb.ParseFromString(gunzip(gz)));
    REQUIRE(pb.sample_type_size() == 2);
    CHECK(pb.string_table(static_cast<int>(pb.sample_type(0).type())) == "alloc_objects");
    CHECK(pb.string_table(static_cast<int>(pb.sample_type(1).type())) == "alloc_space");
    CHECK(pb.string_table(static_cast<int>(pb.sample_type(1).unit())) == "bytes");
    std::map<uint64_t, std::string> fn, loc;
    for (const auto& f : pb.function()) fn[f.id()] = pb.string_table(static_cast<int>(f.name()));
    for (const auto& l : pb.location()) loc[l.id()] = fn.at(l.line(0).function_id());
    std::map<std::string, std::pair<int64_t, int64_t>> got;
    for (const auto& s : pb.sample()) {
      std::string k;
      for (const uint64_t id : s.location_id()) k += (k.empty() ? "" : ";") + loc.at(id);
      got[k].first += s.value(0);
      got[k].second += s.value(1);
    }
    const std::map<std::string, std::pair<int64_t, int64_t>> want = {
        {"N:B ();N:A ()", {2, 96}}, {"N:A ()", {1, 1000}}, {"[no backtrace]", {1, 16}}};
    CHECK(got == want);
    CHECK(p.take_alloc_pprof(0, 1, objects).empty());  // the next interval starts empty
  }
  {
    // alloc-sample=512: a sample of SIZE bytes stands for 1/p objects, p = 1 - exp(-SIZE/512).
    agent::PushProfile p;
    p.set_alloc_sample_interval(512);
    p.absorb(b.data(), b.size());
    uint64_t objects = 0;
    perftools::profiles::Profile pb;
    REQUIRE(pb.ParseFromString(gunzip(p.take_alloc_pprof(0, 1, objects))));
    int64_t n = 0, bytes = 0;
    for (const auto& s : pb.sample()) {
      n += s.value(0);
      bytes += s.value(1);
    }
    auto w = [](double size) { return 1.0 / -std::expm1(-size / 512.0); };
    const int64_t want_n = std::llround(w(32)) + std::llround(w(64)) + std::llround(w(1000)) + std::llround(w(16));
    const int64_t want_b = std::llround(w(32) * 32) + std::llround(w(64) * 64) + std::llround(w(1000) * 1000) +
                           std::llround(w(16) * 16);
    CHECK(n == want_n);
    CHECK(bytes == want_b);
    CHECK(objects == static_cast<uint64_t>(want_n));
  }
}
