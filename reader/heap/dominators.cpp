#include "mlpd/heap/dominators.h"

#include <utility>

#include "mlpd/budget.h"
#include "pod_buffer.h"

namespace mlpd {

namespace {

bool over(MemoryBudget* budget) { return budget && budget->exceeded(); }

// Leaves (step 5): kLeaf until a predecessor is seen, then kTag | the nearest common ancestor so far.
constexpr uint32_t kTag = 1u << 31, kLeaf = kNoNode - 1;
constexpr size_t kUnwindAhead = 8;  // DFS frames below the top whose next edge is prefetched
constexpr uint32_t kPredAhead = 16;  // predecessors whose link is prefetched ahead of their eval
constexpr uint32_t kNearest = 8;     // DFS: the next edges among which the nearest unseen target is taken
constexpr uint32_t kNumberAhead = 16;  // predecessors: the edges ahead whose target's number is prefetched

}  // namespace

Dominators compute_dominators(uint32_t n, const uint32_t* offsets, const uint32_t* targets, uint32_t root,
                              MemoryBudget* budget) {
  if (root >= n) return Dominators{};
  return compute_dominators(n, offsets, targets, root, nullptr, 0, budget);
}

Dominators compute_dominators(uint32_t n, const uint32_t* offsets, const uint32_t* targets, uint32_t root,
                              const uint32_t* root_targets, uint32_t root_count, MemoryBudget* budget) {
  Dominators d;
  if (root > n) return d;
  const bool virtual_root = root == n;
  const uint32_t nodes = virtual_root ? n + 1 : n;
  // Node v's successors: tg(v)[first(v) .. last(v)).
  auto tg = [&](uint32_t v) { return v == n ? root_targets : targets; };
  auto first = [&](uint32_t v) { return v == n ? 0u : offsets[v]; };
  auto last = [&](uint32_t v) { return v == n ? root_count : offsets[v + 1]; };
  auto fail = [&d]() {
    d = Dominators{};
    d.out_of_memory = true;
    return std::move(d);
  };

  // 1. Depth-first search from the root, preorder numbers. The stack holds the nodes whose edges are
  //    not all followed yet, each with its next edge (12 bytes a frame). Which unseen successor comes
  //    next is free (any depth-first order gives the same dominators): the nearest in node order
  //    among the next kNearest edges, so that the search walks the heap in address order where
  //    objects point to their neighbours, and a cache miss or two per node entered (its edges'
  //    start, its targets) become hits; "seen" is a bitmap that stays in the cache. (0.84 -> 0.12 s
  //    CPU on the 5.6M objects of retained_speed.sh, whose nodes point to a random node first, then
  //    to the next.)
  d.number.assign(nodes, kNoNode);
  // Leaves (nodes without successors: strings, arrays of numbers, ...) stay out of steps 1-4: they
  // change no other node's dominator, and each one's immediate dominator is the nearest common
  // ancestor of its predecessors in the tree of the others (step 5). Marked kLeaf; the tag bit then
  // needs fewer than 2^31 nodes.
  const bool leaves = nodes < kTag - 2;
  uint32_t leaf_count = 0;
  // The search asks only "seen yet?" of each edge's target: a bit each (leaves set from the start),
  // which stays in the cache where the numbers (4 bytes each) would not.
  std::vector<uint64_t> seen((static_cast<size_t>(nodes) + 63) / 64, 0);
  auto is_seen = [&seen](uint32_t v) { return (seen[v >> 6] >> (v & 63)) & 1; };
  auto set_seen = [&seen](uint32_t v) { seen[v >> 6] |= uint64_t{1} << (v & 63); };
  // The leaves, a bit each too: step 5 tells an edge to a leaf without loading its target's number
  // (0.10 -> 0.045 s CPU on the 5.6M objects of retained_speed.sh).
  std::vector<uint64_t> leaf_bits(leaves ? seen.size() : 0, 0);
  auto is_leaf = [&leaf_bits](uint32_t v) { return (leaf_bits[v >> 6] >> (v & 63)) & 1; };
  if (leaves)
    for (uint32_t v = 0; v < n; ++v)
      if (offsets[v] == offsets[v + 1] && v != root) {
        d.number[v] = kLeaf;
        set_seen(v);
        leaf_bits[v >> 6] |= uint64_t{1} << (v & 63);
        ++leaf_count;
      }
  std::vector<uint32_t> parent;  // by preorder number: the DFS parent's number
  d.order.reserve(nodes - leaf_count);
  parent.reserve(nodes - leaf_count);
  {
    struct Frame {
      uint32_t v, next, end;
    };
    std::vector<Frame> stack;
    if (over(budget)) return fail();
    auto enter = [&](uint32_t w, uint32_t k) {
      d.number[w] = k;
      set_seen(w);
      d.order.push_back(w);
      const uint32_t b = first(w), e = last(w);
      stack.push_back({w, b, e});
    };
    enter(root, 0);
    parent.push_back(0);
    while (!stack.empty()) {
      Frame& f = stack.back();
      const uint32_t* t = tg(f.v);
      while (f.next < f.end && is_seen(t[f.next])) ++f.next;
      if (f.next == f.end) {
        stack.pop_back();
        // Frames are taken up again bottom-up: ask for the next edge of one a few below.
        if (stack.size() > kUnwindAhead) {
          const Frame& g = stack[stack.size() - 1 - kUnwindAhead];
          if (g.next < g.end) __builtin_prefetch(&tg(g.v)[g.next]);
        }
        continue;
      }
      // Any unseen successor may come next. Among the next few, the one nearest in the heap's
      // address order: objects allocated together (a node and the next one of a list, an object and
      // its fields) then follow one another, and the search walks memory in order instead of jumping.
      uint32_t pick = f.next;
      uint32_t w = t[pick];
      uint32_t distance = w > f.v ? w - f.v : f.v - w;
      for (uint32_t e = f.next + 1, stop = f.end - f.next > kNearest ? f.next + kNearest : f.end; e < stop; ++e) {
        const uint32_t x = t[e];
        const uint32_t dx = x > f.v ? x - f.v : f.v - x;
        if (dx < distance && !is_seen(x)) {
          distance = dx;
          w = x;
          pick = e;
        }
      }
      if (pick == f.next) ++f.next;  // otherwise the picked edge is passed over once its target is seen
      const uint32_t from = d.number[f.v];
      const uint32_t k = static_cast<uint32_t>(d.order.size());
      parent.push_back(from);
      enter(w, k);  // f is not used after this: the push may move the stack
    }
  }
  const uint32_t m = static_cast<uint32_t>(d.order.size());
  d.order.shrink_to_fit();
  parent.shrink_to_fit();
  if (over(budget)) return fail();

  // 2. Predecessors, by preorder number. A predecessor numbered below its target is a candidate
  //    semidominator as it is: only the least of those is kept (in semi[], which starts at the node
  //    itself). Only those numbered above (they need the link-eval forest) are listed (CSR:
  //    pred_begin[k] .. pred_begin[k+1] once filled; k's count is kept at k + 2); self-references
  //    change nothing. The nodes are taken in id order, so their edges are read sequentially; each
  //    target's number (the random access) is looked up once, and the listed edges are kept as
  //    (target, source) pairs for the filling pass. (On the 5.6M objects of retained_speed.sh, 1.25M
  //    predecessors listed instead of about 8.5M: 0.32 -> 0.20 s CPU.) The targets' numbers are asked
  //    of the cache kNumberAhead edges ahead (0.22 -> 0.13 s CPU there).
  const uint32_t edge_count = n ? offsets[n] : 0;
  std::vector<uint32_t> semi(m), pred_begin(static_cast<size_t>(m) + 2, 0);
  PodBuffer<uint64_t> later;  // target << 32 | source, of the edges from a node numbered above the target
  if (over(budget)) return fail();
  for (uint32_t k = 0; k < m; ++k) semi[k] = k;
  for (uint32_t v = 0; v < nodes; ++v) {
    const uint32_t k = d.number[v];
    if (k >= kLeaf) continue;  // unreached, or a leaf (no edges)
    const uint32_t* t = tg(v);
    for (uint32_t e = first(v), end = last(v); e < end; ++e) {
      if (v < n && e + kNumberAhead < edge_count) __builtin_prefetch(&d.number[targets[e + kNumberAhead]]);
      const uint32_t x = d.number[t[e]];
      if (x == kLeaf) continue;
      if (x > k) {
        if (k < semi[x]) semi[x] = k;
      } else if (x < k) {
        ++pred_begin[x + 2];
        later.push_back(uint64_t{x} << 32 | k);
      }
    }
  }
  for (uint32_t k = 0; k < m; ++k) pred_begin[k + 2] += pred_begin[k + 1];
  std::vector<uint32_t> preds(pred_begin[m + 1]);
  if (over(budget)) return fail();
  for (size_t i = 0; i < later.size(); ++i) {
    const uint64_t xk = later[i];
    preds[pred_begin[(xk >> 32) + 1]++] = static_cast<uint32_t>(xk);
  }
  later = {};
  pred_begin.pop_back();  // now pred_begin[k] .. pred_begin[k+1] are k's predecessors

  // 3. Semidominators in reverse preorder, with Lengauer-Tarjan's "simple" eval/link: the link-eval
  //    forest's ancestor of each linked node, and `best`, the least semidominator on its compressed
  //    path (semi-NCA needs the value only, not the node that has it). Both of one node in one cache
  //    line. Compression is iterative, by path halving (below).
  struct Link {
    uint32_t ancestor, best;
  };
  std::vector<Link> link(m);
  if (over(budget)) return fail();
  for (uint32_t k = 0; k < m; ++k) link[k] = {kNoNode, k};
  // While w is processed, the linked nodes are those numbered above w: "x's ancestor is linked" is
  // a comparison, not a load (one cache miss less per step of the path).
  // Path halving: one pass up the path, each node made to skip its ancestor (its `best` then covering
  // both), the least `best` of the segments passed kept on the way. (The two passes of full
  // compression, gathering the path then shortening it from its top, took 0.44 s CPU where this takes
  // 0.29 on the 5.6M objects of retained_speed.sh.)
  auto eval = [&](uint32_t v, uint32_t w) -> uint32_t {
    uint32_t least = kNoNode;
    for (uint32_t x = v;;) {
      Link& y = link[x];
      if (y.ancestor > w) {
        const Link a = link[y.ancestor];
        if (a.best < y.best) y.best = a.best;
        y.ancestor = a.ancestor;
      }
      if (y.best < least) least = y.best;
      if (y.ancestor <= w) return least;
      x = y.ancestor;
    }
  };
  for (uint32_t w = m; w-- > 1;) {
    uint32_t s = semi[w];
    for (uint32_t p = pred_begin[w]; p < pred_begin[w + 1]; ++p) {
      if (p >= kPredAhead) __builtin_prefetch(&link[preds[p - kPredAhead]]);  // nodes below w come next
      const uint32_t u = eval(preds[p], w);  // every listed predecessor is numbered above w
      if (u < s) s = u;
    }
    semi[w] = s;
    link[w] = {parent[w], s};  // link
  }
  preds = {};
  pred_begin = {};
  link = {};

  // 4. Immediate dominators: the nearest common ancestor of the parent and the semidominator, found
  //    by walking up the dominators already known (all of a smaller number).
  d.idom = std::move(parent);
  for (uint32_t w = 1; w < m; ++w) {
    uint32_t i = d.idom[w];
    while (i > semi[w]) i = d.idom[i];
    d.idom[w] = i;
  }
  if (m) d.idom[0] = 0;
  semi = {};

  // 5. Leaves: the nearest common ancestor of the predecessors, kept in the leaf's number (tagged)
  //    as they come; then numbered after the others (so still idom[k] < k).
  if (!leaves) return d;
  auto nca = [&d](uint32_t a, uint32_t b) {
    while (a != b) {
      if (a > b)
        a = d.idom[a];
      else
        b = d.idom[b];
    }
    return a;
  };
  uint32_t reached_leaves = 0;
  for (uint32_t v = 0; v < nodes; ++v) {
    const uint32_t k = d.number[v];
    if (k >= kTag) continue;  // unreached, or a leaf (no edges)
    const uint32_t* t = tg(v);
    for (uint32_t e = first(v), end = last(v); e < end; ++e) {
      if (!is_leaf(t[e])) continue;
      uint32_t& x = d.number[t[e]];
      if (x == kLeaf) {
        x = kTag | k;
        ++reached_leaves;
      } else if (x >= kTag && x < kLeaf) {
        x = kTag | nca(x & ~kTag, k);
      }
    }
  }
  d.order.reserve(static_cast<size_t>(m) + reached_leaves);
  d.idom.reserve(static_cast<size_t>(m) + reached_leaves);
  if (over(budget)) return fail();
  for (uint32_t v = 0; v < nodes; ++v) {
    uint32_t& x = d.number[v];
    if (x == kLeaf) {
      x = kNoNode;  // unreached
    } else if (x >= kTag && x < kLeaf) {
      d.idom.push_back(x & ~kTag);
      x = static_cast<uint32_t>(d.order.size());
      d.order.push_back(v);
    }
  }
  return d;
}

}  // namespace mlpd
