#include "mlpd/dominators.h"

#include <utility>

#include "mlpd/budget.h"

namespace mlpd {

namespace {

bool over(MemoryBudget* budget) { return budget && budget->exceeded(); }

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

  // 1. Depth-first search from the root, preorder numbers. `cursor` is each node's next edge; the
  //    stack holds the nodes whose edges are not all followed yet.
  d.number.assign(nodes, kNoNode);
  std::vector<uint32_t> parent;  // by preorder number: the DFS parent's number
  {
    std::vector<uint32_t> cursor(nodes);
    for (uint32_t v = 0; v < nodes; ++v) cursor[v] = first(v);
    std::vector<uint32_t> stack;
    if (over(budget)) return fail();
    d.number[root] = 0;
    d.order.push_back(root);
    parent.push_back(0);
    stack.push_back(root);
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      uint32_t& c = cursor[v];
      const uint32_t end = last(v);
      const uint32_t* t = tg(v);
      while (c < end && d.number[t[c]] != kNoNode) ++c;
      if (c == end) {
        stack.pop_back();
        continue;
      }
      const uint32_t w = t[c++];
      d.number[w] = static_cast<uint32_t>(d.order.size());
      d.order.push_back(w);
      parent.push_back(d.number[v]);
      stack.push_back(w);
    }
  }
  const uint32_t m = static_cast<uint32_t>(d.order.size());
  d.order.shrink_to_fit();
  parent.shrink_to_fit();
  if (over(budget)) return fail();

  // 2. Predecessors, by preorder number, of the reached nodes (CSR). The nodes are taken in id order,
  //    so their edges are read sequentially (only the targets' numbers are random accesses).
  std::vector<uint32_t> pred_begin(static_cast<size_t>(m) + 1, 0);
  auto for_each_reached_edge = [&](auto&& fn) {
    for (uint32_t v = 0; v < nodes; ++v) {
      const uint32_t k = d.number[v];
      if (k == kNoNode) continue;
      const uint32_t* t = tg(v);
      for (uint32_t e = first(v), end = last(v); e < end; ++e) fn(k, d.number[t[e]]);
    }
  };
  for_each_reached_edge([&pred_begin](uint32_t, uint32_t w) { ++pred_begin[w + 1]; });
  for (uint32_t k = 0; k < m; ++k) pred_begin[k + 1] += pred_begin[k];
  std::vector<uint32_t> preds(pred_begin[m]);
  if (over(budget)) return fail();
  {
    std::vector<uint32_t> fill(pred_begin.begin(), pred_begin.end() - 1);
    for_each_reached_edge([&fill, &preds](uint32_t k, uint32_t w) { preds[fill[w]++] = k; });
  }

  // 3. Semidominators in reverse preorder. ancestor/label form the link-eval forest; label[v] is the
  //    node of least semidominator on v's compressed path. Compression is iterative: the path is
  //    gathered on `path`, then shortened from its top down.
  std::vector<uint32_t> semi(m), label(m), ancestor(m, kNoNode), path;
  if (over(budget)) return fail();
  for (uint32_t k = 0; k < m; ++k) semi[k] = label[k] = k;
  auto eval = [&](uint32_t v) -> uint32_t {
    if (ancestor[v] == kNoNode) return v;
    uint32_t x = v;
    while (ancestor[ancestor[x]] != kNoNode) {
      path.push_back(x);
      x = ancestor[x];
    }
    while (!path.empty()) {
      const uint32_t y = path.back();
      path.pop_back();
      const uint32_t a = ancestor[y];
      if (semi[label[a]] < semi[label[y]]) label[y] = label[a];
      ancestor[y] = ancestor[a];
    }
    return label[v];
  };
  for (uint32_t w = m; w-- > 1;) {
    uint32_t s = semi[w];
    for (uint32_t p = pred_begin[w]; p < pred_begin[w + 1]; ++p) {
      const uint32_t v = preds[p];
      const uint32_t u = v < w ? v : semi[eval(v)];
      if (u < s) s = u;
    }
    semi[w] = s;
    ancestor[w] = parent[w];  // link
  }
  preds = {};
  pred_begin = {};
  ancestor = {};
  label = {};

  // 4. Immediate dominators: the nearest common ancestor of the parent and the semidominator, found
  //    by walking up the dominators already known (all of a smaller number).
  d.idom = std::move(parent);
  for (uint32_t w = 1; w < m; ++w) {
    uint32_t i = d.idom[w];
    while (i > semi[w]) i = d.idom[i];
    d.idom[w] = i;
  }
  if (m) d.idom[0] = 0;
  return d;
}

}  // namespace mlpd
