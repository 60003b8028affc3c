// Per-method numbers (mlpd/profile.h's method_stats and Profile::methods()) from the call tree.
#include "builder.h"

namespace mlpd::profile {

void Builder::method_numbers() {
  p_.methods_ = method_stats(p_, nullptr);
  for (const auto& [m, f] : managed_) {
    if (const Names::Method* md = names_.method(m)) p_.methods_[f].jit_code_bytes = md->size;
  }
}

std::vector<MethodStat> method_stats(const Profile& p, const std::vector<bool>* thread_mask) {
  const auto wanted = [&](ThreadIndex t) { return t < thread_mask->size() && (*thread_mask)[t]; };
  // Per-method numbers from the tree: self weights at each node's own frame; inclusive numbers over
  // the subtree, each frame counted once per path (recursion does not double-count).
  const size_t nn = p.nodes().size();
  std::vector<MethodStat> out(p.frames().size());
  std::vector<uint64_t> sub(nn, 0);
  for (NodeId n = 1; n < nn; ++n) {
    const FrameId f = p.nodes()[n].frame;
    if (f == kNoFrame || (thread_mask && !wanted(p.nodes()[n].thread))) continue;
    MethodStat& ms = out[f];
    const uint64_t hits = p.weight(What::cpu, n);
    ms.samples_self += hits;
    sub[n] += hits;
    ms.alloc_objects += p.weight(What::alloc, n);
    ms.alloc_bytes += p.weight(What::alloc_bytes, n);
    ms.throws += p.weight(What::exceptions, n);
    ms.contentions += p.weight(What::monitor, n);
    const CallStat cs = p.calls(n);
    ms.calls += cs.calls;
    ms.self_ns += cs.self_ns;
  }
  for (NodeId n = static_cast<NodeId>(nn); n-- > 1;) {
    const NodeId parent = p.nodes()[n].parent;
    if (parent != 0 && p.nodes()[parent].frame != kNoFrame) sub[parent] += sub[n];
  }
  // Depth-first walk with a per-frame count of how many times it is on the current path.
  std::vector<NodeId> first_child(nn, 0), next_sibling(nn, 0);
  for (NodeId n = static_cast<NodeId>(nn); n-- > 1;) {
    const NodeId parent = p.nodes()[n].parent;
    next_sibling[n] = first_child[parent];
    first_child[parent] = n;
  }
  std::vector<uint32_t> active(p.frames().size(), 0);
  std::vector<NodeId> path;
  NodeId n = first_child[0];
  while (n != 0) {
    const FrameId f = p.nodes()[n].frame;
    if (p.nodes()[n].depth == 0 && thread_mask && !wanted(p.nodes()[n].thread)) {  // skip the thread
      n = next_sibling[n];
      continue;
    }
    if (f != kNoFrame) {
      if (active[f]++ == 0) {
        out[f].samples_total += sub[n];
        out[f].total_ns += p.calls(n).total_ns;
      }
    }
    if (first_child[n]) {
      path.push_back(n);
      n = first_child[n];
      continue;
    }
    // Leave n and every ancestor whose children are done.
    for (;;) {
      if (p.nodes()[n].frame != kNoFrame) --active[p.nodes()[n].frame];
      if (next_sibling[n]) {
        n = next_sibling[n];
        break;
      }
      if (path.empty()) {
        n = 0;
        break;
      }
      n = path.back();
      path.pop_back();
    }
  }
  return out;
}

}  // namespace mlpd::profile
