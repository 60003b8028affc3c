// The dominator computation (mlpd/heap/dominators.h) against a naive one -- remove each node, recompute
// what the root reaches; the nodes lost are the ones it dominates -- on thousands of random graphs
// with cycles, self-references, repeated edges and unreached parts, and on deep chains (a million
// nodes: nothing may recurse).
#include "mlpd_catch.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "mlpd/heap/dominators.h"

using namespace mlpd;

namespace {

struct Csr {
  uint32_t n = 0;
  std::vector<uint32_t> offsets, targets;
};

Csr from_edges(uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges) {
  Csr g;
  g.n = n;
  g.offsets.assign(n + 1, 0);
  for (auto [a, b] : edges) ++g.offsets[a + 1];
  for (uint32_t i = 0; i < n; ++i) g.offsets[i + 1] += g.offsets[i];
  g.targets.resize(edges.size());
  std::vector<uint32_t> fill(g.offsets.begin(), g.offsets.end() - 1);
  for (auto [a, b] : edges) g.targets[fill[a]++] = b;
  return g;
}

// What the root reaches when `removed` (kNoNode: none) is taken out of the graph.
std::vector<char> reach(const Csr& g, uint32_t root, uint32_t removed) {
  std::vector<char> seen(g.n, 0);
  if (root == removed) return seen;
  std::vector<uint32_t> stack{root};
  seen[root] = 1;
  while (!stack.empty()) {
    const uint32_t v = stack.back();
    stack.pop_back();
    for (uint32_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      const uint32_t w = g.targets[e];
      if (w != removed && !seen[w]) {
        seen[w] = 1;
        stack.push_back(w);
      }
    }
  }
  return seen;
}

// Naive immediate dominators by node (kNoNode for the unreached, the root for the root).
std::vector<uint32_t> naive_idom(const Csr& g, uint32_t root) {
  const std::vector<char> all = reach(g, root, kNoNode);
  // dom[d][v]: d dominates v.
  std::vector<std::vector<char>> dom(g.n, std::vector<char>(g.n, 0));
  for (uint32_t d = 0; d < g.n; ++d) {
    if (!all[d]) continue;
    const std::vector<char> without = reach(g, root, d);
    for (uint32_t v = 0; v < g.n; ++v) dom[d][v] = all[v] && !without[v];
  }
  std::vector<uint32_t> idom(g.n, kNoNode);
  for (uint32_t v = 0; v < g.n; ++v) {
    if (!all[v]) continue;
    if (v == root) {
      idom[v] = root;
      continue;
    }
    // The strict dominator of v that every other strict dominator of v dominates.
    for (uint32_t d = 0; d < g.n; ++d) {
      if (d == v || !dom[d][v]) continue;
      bool deepest = true;
      for (uint32_t e = 0; e < g.n && deepest; ++e)
        if (e != v && e != d && dom[e][v] && !dom[e][d]) deepest = false;
      if (deepest) idom[v] = d;
    }
  }
  return idom;
}

std::vector<uint32_t> fast_idom(const Csr& g, uint32_t root) {
  const Dominators d = compute_dominators(g.n, g.offsets.data(), g.targets.data(), root);
  std::vector<uint32_t> idom(g.n, kNoNode);
  for (uint32_t k = 0; k < d.order.size(); ++k) idom[d.order[k]] = d.order[d.idom[k]];
  return idom;
}

}  // namespace

TEST_CASE("dominators: equal to the naive computation on thousands of random graphs", "[dominators]") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 4000; ++round) {
    const uint32_t n = 1 + rng() % 24;
    const uint32_t density = rng() % 4;  // sparse to dense
    const uint32_t m = static_cast<uint32_t>(rng() % (n * (1 + density) + 1));
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    for (uint32_t i = 0; i < m; ++i) {
      const uint32_t a = rng() % n;
      // Mostly forward edges (deep dominator trees), some back edges and self-references.
      uint32_t b = rng() % 4 ? a + 1 + rng() % 3 : rng() % n;
      if (b >= n) b = rng() % n;
      edges.emplace_back(a, b);
    }
    const uint32_t root = rng() % n;
    const Csr g = from_edges(n, edges);
    const std::vector<uint32_t> want = naive_idom(g, root);
    const std::vector<uint32_t> got = fast_idom(g, root);
    INFO("round " << round << ", n " << n << ", edges " << m << ", root " << root);
    REQUIRE(got == want);
  }
}

TEST_CASE("dominators: preorder invariants", "[dominators]") {
  const Csr g = from_edges(6, {{0, 1}, {1, 2}, {2, 1}, {0, 3}, {3, 2}, {4, 5}, {5, 5}});
  const Dominators d = compute_dominators(g.n, g.offsets.data(), g.targets.data(), 0);
  REQUIRE(d.order.size() == 4);  // 4 and 5 are unreached
  CHECK(d.order[0] == 0);
  CHECK(d.idom[0] == 0);
  for (uint32_t k = 1; k < d.order.size(); ++k) CHECK(d.idom[k] < k);
  CHECK(d.number[4] == kNoNode);
  CHECK(d.number[5] == kNoNode);
  CHECK(fast_idom(g, 0) == std::vector<uint32_t>{0, 0, 0, 0, kNoNode, kNoNode});
}

TEST_CASE("dominators: a chain of a million nodes, and a cycle of a million", "[dominators]") {
  const uint32_t n = 1000000;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t i = 0; i + 1 < n; ++i) edges.emplace_back(i, i + 1);
  {
    const Csr g = from_edges(n, edges);
    const std::vector<uint32_t> idom = fast_idom(g, 0);
    bool ok = idom[0] == 0;
    for (uint32_t i = 1; i < n; ++i) ok = ok && idom[i] == i - 1;
    CHECK(ok);
  }
  // Back edges from every node to the root, and a shortcut from the root to the middle: the nodes
  // after the middle are dominated by their predecessor down to the middle, whose idom is the root.
  for (uint32_t i = 1; i < n; ++i) edges.emplace_back(i, 0);
  edges.emplace_back(0, n / 2);
  const Csr g = from_edges(n, edges);
  const std::vector<uint32_t> idom = fast_idom(g, 0);
  bool ok = true;
  for (uint32_t i = 1; i < n; ++i) ok = ok && idom[i] == (i == n / 2 ? 0 : i - 1);
  CHECK(ok);
}

TEST_CASE("dominators: degenerate inputs", "[dominators]") {
  const Csr one = from_edges(1, {{0, 0}});
  const Dominators d = compute_dominators(1, one.offsets.data(), one.targets.data(), 0);
  CHECK(d.order == std::vector<uint32_t>{0});
  CHECK(d.idom == std::vector<uint32_t>{0});
  const Dominators bad = compute_dominators(1, one.offsets.data(), one.targets.data(), 5);
  CHECK(bad.order.empty());
}

TEST_CASE("dominators: a virtual root equals a real node pointing to the same objects", "[dominators]") {
  std::mt19937 rng(777);
  for (int round = 0; round < 500; ++round) {
    const uint32_t n = 1 + rng() % 30;
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    for (uint32_t i = 0, m = rng() % (2 * n + 1); i < m; ++i) edges.emplace_back(rng() % n, rng() % n);
    std::vector<uint32_t> roots;
    for (uint32_t i = 0, r = rng() % 4; i < r; ++i) roots.push_back(rng() % n);
    std::vector<std::pair<uint32_t, uint32_t>> with_root = edges;
    for (uint32_t r : roots) with_root.emplace_back(n, r);
    const Csr real = from_edges(n + 1, with_root);
    const std::vector<uint32_t> want = naive_idom(real, n);
    const Csr g = from_edges(n, edges);
    const Dominators d =
        compute_dominators(n, g.offsets.data(), g.targets.data(), n, roots.data(), static_cast<uint32_t>(roots.size()));
    std::vector<uint32_t> got(n + 1, kNoNode);
    for (uint32_t k = 0; k < d.order.size(); ++k) got[d.order[k]] = d.order[d.idom[k]];
    INFO("round " << round);
    REQUIRE(got == want);
  }
}

TEST_CASE("dominators: nodes with many successors in any order (the search takes the nearest first)",
          "[dominators]") {
  // The depth-first search may enter any unseen successor next; it prefers the nearest among the next
  // few edges, passing over the others until later. Many successors a node, in shuffled order, with
  // repeats and targets on both sides of the node, exercise that choice and the edges passed over.
  std::mt19937 rng(777);
  for (int round = 0; round < 3000; ++round) {
    const uint32_t n = 2 + rng() % 40;
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    for (uint32_t a = 0; a < n; ++a) {
      const uint32_t degree = rng() % 3 ? rng() % 4 : rng() % 24;
      for (uint32_t i = 0; i < degree; ++i) {
        const uint32_t b = rng() % 2 ? static_cast<uint32_t>(rng() % n) : std::min<uint32_t>(n - 1, a + static_cast<uint32_t>(rng() % 3));
        edges.emplace_back(a, b);
      }
    }
    std::shuffle(edges.begin(), edges.end(), rng);
    std::stable_sort(edges.begin(), edges.end(), [](auto x, auto y) { return x.first < y.first; });
    const uint32_t root = rng() % n;
    const Csr g = from_edges(n, edges);
    INFO("round " << round << ", n " << n << ", edges " << edges.size() << ", root " << root);
    REQUIRE(fast_idom(g, root) == naive_idom(g, root));
    const Dominators d = compute_dominators(g.n, g.offsets.data(), g.targets.data(), root);
    for (uint32_t k = 1; k < d.order.size(); ++k) REQUIRE(d.idom[k] < k);
  }
}
