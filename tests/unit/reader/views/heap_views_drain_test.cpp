// The heap views' long listings written as they are rendered (mlpd/heap_views.h, Drain): --diff --all,
// --retained and --dominators, text and JSON, on hand-built models of thousands of classes. The output
// handed to the drain, piece after piece, is byte for byte what the renderer gives without one; no
// piece is left much above 64 KiB (the drain is called between rows), and the text held at the end is
// less than one piece.
#include "mlpd_catch.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mlpd/heap_views.h"

using namespace mlpd;
using namespace mlpd::views;

namespace {

constexpr size_t kPiece = 64u << 10;

// What a renderer gives with a drain: the pieces handed over, then what was left in `out`.
struct Drained {
  std::vector<size_t> pieces;
  std::string text, left;
};

Drained drained(const std::function<void(std::string&, const Drain&)>& render) {
  Drained d;
  std::string out;
  const Drain drain = [&d](std::string& t) {
    d.pieces.push_back(t.size());
    d.text += t;
    t.clear();
  };
  render(out, drain);
  d.left = out;
  d.text += out;
  return d;
}

std::string whole(const std::function<void(std::string&, const Drain&)>& render) {
  std::string out;
  render(out, nullptr);
  return out;
}

void check_drained(const std::function<void(std::string&, const Drain&)>& render) {
  const std::string expected = whole(render);
  REQUIRE(expected.size() > 4 * kPiece);
  const Drained d = drained(render);
  CHECK(d.text == expected);
  CHECK(d.pieces.size() >= 4);
  for (const size_t n : d.pieces) {
    CHECK(n >= kPiece);
    CHECK(n < kPiece + 4096);  // one row past the mark at most
  }
  CHECK(d.left.size() < kPiece);
}

// A heapshot diff of `n` classes, half of them changed.
HeapshotDiff big_diff(size_t n) {
  HeapshotDiff d;
  d.from = 0;
  d.to = 1;
  for (size_t i = 0; i < n; ++i) {
    HeapshotClassDelta c;
    c.name = "Namespace.Of.Some.Length.Class" + std::to_string(i);
    c.objects = i % 2 ? 0 : static_cast<int64_t>(i);
    c.bytes = i % 2 ? 0 : static_cast<int64_t>(i * 24);
    d.objects += c.objects;
    d.bytes += c.bytes;
    d.classes.push_back(std::move(c));
  }
  return d;
}

// A retention result of `n` classes, each a top-level folded subtree with a child.
Retention big_retention(size_t n) {
  Retention r;
  r.index = 1;
  r.time_ns = 2'000'000'000;
  r.complete = true;
  r.roots = {{"static", "Static Fields: Holder"}};
  for (size_t i = 0; i < n; ++i) {
    RetainedClass c;
    c.name = "Namespace.Of.Some.Length.Class" + std::to_string(i);
    c.objects = i + 1;
    c.shallow = 24 * (i + 1);
    c.retained = 1'000'000 - i;
    c.held_by = 0;
    r.objects += c.objects;
    r.bytes += c.shallow;
    r.classes.push_back(std::move(c));
  }
  for (size_t i = 0; i < n; ++i) {
    FoldedNode top;
    top.klass = static_cast<uint32_t>(i);
    top.root = 0;
    top.instances = 1;
    top.objects = 2;
    top.retained = 1'000'000 - i;
    r.folded.push_back(top);
    FoldedNode child;
    child.parent = static_cast<uint32_t>(r.folded.size() - 1);
    child.depth = 2;
    child.klass = static_cast<uint32_t>((i + 1) % n);
    child.instances = 1;
    child.objects = 1;
    child.retained = 500'000;
    r.folded.push_back(child);
  }
  return r;
}

}  // namespace

TEST_CASE("heap views: --diff --all written as it is rendered", "[heap_views]") {
  const HeapshotDiff d = big_diff(20000);
  HeapshotSummary a, b;
  a.index = 0;
  b.index = 1;
  b.time_ns = 1'000'000'000;
  check_drained([&](std::string& out, const Drain& drain) {
    heapshot_diff_text(out, d, a, b, true, UINT64_MAX, drain);
  });
  check_drained([&](std::string& out, const Drain& drain) { heapshot_diff_json(out, d, true, UINT64_MAX, drain); });
  // Changed classes only, and --top: the same output with or without the drain.
  for (const bool all : {false, true})
    for (const uint64_t top : {uint64_t{3}, UINT64_MAX}) {
      auto render = [&](std::string& out, const Drain& drain) { heapshot_diff_text(out, d, a, b, all, top, drain); };
      CHECK(drained(render).text == whole(render));
    }
}

TEST_CASE("heap views: --retained and --dominators written as they are rendered", "[heap_views]") {
  const Retention r = big_retention(10000);
  check_drained([&](std::string& out, const Drain& drain) { retained_text(out, r, UINT64_MAX, drain); });
  check_drained([&](std::string& out, const Drain& drain) { retained_json(out, r, UINT64_MAX, drain); });
  check_drained([&](std::string& out, const Drain& drain) { dominators_text(out, r, UINT64_MAX, 4, 1, drain); });
  check_drained([&](std::string& out, const Drain& drain) { dominators_json(out, r, UINT64_MAX, 4, 1, drain); });
  // Small: the drain is never called, the whole text stays in `out`.
  const Retention small = big_retention(3);
  const Drained d = drained([&](std::string& out, const Drain& drain) { dominators_json(out, small, 20, 4, 1, drain); });
  CHECK(d.pieces.empty());
  CHECK(d.left == whole([&](std::string& out, const Drain& drain) { dominators_json(out, small, 20, 4, 1, drain); }));
}
