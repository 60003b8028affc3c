// Immediate dominators of a directed graph given in CSR form (the heap graph of a heapshot,
// docs/reports.md "Retained sizes"): node d dominates node v when every path from the root to v goes
// through d; the immediate dominator of v is its closest strict dominator.
//
// The algorithm is semi-NCA (Georgiadis, "Linear-time algorithms for dominators and related
// problems", 2005): a depth-first search numbers the reached nodes in preorder, semidominators are
// computed in reverse preorder with path compression (Lengauer-Tarjan's "simple" eval/link), and each
// immediate dominator is the nearest common ancestor of the node's DFS parent and its semidominator.
// Leaves (nodes without successors) are left out of all that and get the nearest common ancestor of
// their predecessors in the resulting tree, numbered after the others.
// Nothing recurses: the search, the path compression and the NCA walk use explicit arrays, so a
// linked list of a billion nodes needs no stack. O(E log N) time, about 28 bytes a reached node plus
// 4 bytes (12 while they are gathered) a reached edge whose source is numbered above its target,
// besides the graph itself: only those predecessors are listed, the others give the least of them at
// once. The search enters the nearest unseen successor (in node order) among a node's next few edges
// first.
#pragma once

#include <cstdint>
#include <vector>

namespace mlpd {

class MemoryBudget;

inline constexpr uint32_t kNoNode = UINT32_MAX;

struct Dominators {
  // The reached nodes, order[0] the root: those with successors in DFS preorder, then the leaves (no
  // successors) in node order. Nodes the root does not reach are absent.
  std::vector<uint32_t> order;
  // By preorder number k (0 .. order.size()-1): the preorder number of order[k]'s immediate
  // dominator; idom[0] == 0 (the root dominates itself). Always idom[k] < k for k > 0, so a pass in
  // reverse preorder visits every node before its dominator.
  std::vector<uint32_t> idom;
  // By node: its preorder number, kNoNode when unreached.
  std::vector<uint32_t> number;
  bool out_of_memory = false;  // the budget was exceeded during the computation (the rest is empty)
};

// `n` nodes, node v's successors are targets[offsets[v] .. offsets[v+1]); offsets has n+1 entries and
// every target is < n (the caller guarantees it: the heap graph drops references it cannot resolve).
// Self-references and repeated edges are allowed. `budget` (may be null) is checked after each
// allocation.
Dominators compute_dominators(uint32_t n, const uint32_t* offsets, const uint32_t* targets, uint32_t root,
                              MemoryBudget* budget = nullptr);

// The same with a virtual root: node `n` (root == n), whose successors are root_targets[0..root_count)
// (the objects the GC roots hold). `number` then has n + 1 entries and order[0] == n.
Dominators compute_dominators(uint32_t n, const uint32_t* offsets, const uint32_t* targets, uint32_t root,
                              const uint32_t* root_targets, uint32_t root_count, MemoryBudget* budget = nullptr);

}  // namespace mlpd
