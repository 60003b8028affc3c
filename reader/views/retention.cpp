#include "mlpd/retention.h"

#include <algorithm>
#include <charconv>
#include <map>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <unordered_map>
#include <utility>

#include "mlpd/budget.h"
#include "mlpd/hex.h"

namespace mlpd::views {

namespace {

// Which root names an object held by several: the most telling first (a static field or a handle
// says who holds it; a conservatively scanned stack word or the finalizer queue says less).
int root_rank(uint8_t kind) {
  switch (kind) {
    case 3: return 0;   // static
    case 4: return 1;   // thread static
    case 5: return 2;   // context static
    case 6: return 3;   // gc_handle
    case 1: return 4;   // stack
    case 14: return 5;  // handle stack
    case 2: return 6;   // finalizer queue
    case kRootUnknown: return 100;
    default: return 10 + kind;
  }
}

// Roots that come and go with the code running on a thread: a thread's stack (its slots and, scanned
// conservatively, stale words) and the runtime's handle stack. A reference from one of them to an
// object that a lasting root (a static field, a GC handle, a thread static, ...) also reaches is a
// transient copy of that root's reference (docs/reports.md, "Lasting and transient roots").
bool transient_root(uint8_t kind) { return kind == 1 || kind == 14; }

constexpr uint32_t kNone = UINT32_MAX;
constexpr size_t kPathEnds = 32;  // a longer path keeps its first and last 32 steps

}  // namespace

uint32_t RetentionAnalysis::root_of(uint32_t object) const {
  auto it = std::lower_bound(g_.roots.begin(), g_.roots.end(), object,
                             [](const HeapGraph::Root& r, uint32_t o) { return r.object < o; });
  // An object a lasting root reaches is named by its lasting roots only.
  const bool lasting = !lasting_.empty() && lasting_[object];
  uint32_t best = kNone;
  int best_rank = 1 << 30;
  for (; it != g_.roots.end() && it->object == object; ++it) {
    if (lasting && transient_root(g_.labels[it->label].kind)) continue;
    const int rank = root_rank(g_.labels[it->label].kind);
    if (rank < best_rank) {
      best_rank = rank;
      best = root_label_[it->label];
    }
  }
  return best;
}

RetentionAnalysis::RetentionAnalysis(HeapGraph graph, const Names& names, const RetentionOptions& options)
    : g_(std::move(graph)) {
  r_.index = g_.index;
  r_.time_ns = g_.time_ns;
  r_.complete = g_.complete;
  r_.error = g_.error;
  if (!r_.error.empty()) return;
  r_.objects = g_.objects;
  r_.bytes = g_.bytes;
  r_.dangling_refs = g_.dangling_refs;
  r_.dangling_roots = g_.dangling_roots;
  r_.duplicate_objects = g_.duplicate_objects;
  MemoryBudget* budget = options.budget;
  auto out_of_memory = [&]() {
    Retention keep;
    keep.index = r_.index;
    keep.time_ns = r_.time_ns;
    keep.complete = r_.complete;
    keep.error = "heapshot " + std::to_string(r_.index) + " is too large for the memory budget: " +
                 (budget ? budget->message() : std::string("out of memory"));
    r_ = std::move(keep);
    g_ = HeapGraph{};
    dom_ = Dominators{};
    retained_ = {};
  };

  // Classes: vtables of one class (one per domain) merge; undescribed vtables stay apart.
  std::vector<RetainedClass> classes;
  {
    std::map<std::pair<uint64_t, uint64_t>, uint32_t> ids;
    class_of_vtable_.resize(g_.vtables.size());
    for (size_t v = 0; v < g_.vtables.size(); ++v) {
      uint64_t klass = 0;
      const bool known = names.vtable_class(g_.vtables[v], klass);
      const auto key = known ? std::pair{klass, uint64_t{0}} : std::pair{uint64_t{0}, g_.vtables[v]};
      auto [it, added] = ids.emplace(key, static_cast<uint32_t>(classes.size()));
      if (added) {
        RetainedClass c;
        if (!known)
          c.name = "unresolved vtable " + hex(g_.vtables[v]);
        else if (const std::string* n = names.class_name(klass))
          c.name = *n;
        else
          c.name = "unresolved class " + hex(klass);
        classes.push_back(std::move(c));
      }
      class_of_vtable_[v] = it->second;
    }
  }
  const uint32_t n = g_.objects;
  for (uint32_t o = 0; o < n; ++o) {
    RetainedClass& c = classes[class_of_vtable_[g_.vtable[o]]];
    ++c.objects;
    c.shallow += g_.object_size(o);
  }

  // Root labels, and the distinct objects the roots hold (the virtual root's successors).
  for (const RootLabel& l : g_.labels) {
    root_label_.push_back(static_cast<uint32_t>(r_.roots.size()));
    r_.roots.push_back({root_kind_name(l.kind), l.name});
  }
  const uint32_t several = static_cast<uint32_t>(r_.roots.size());
  r_.roots.push_back({"several", "held through several roots"});
  std::vector<uint32_t> root_targets;
  for (size_t i = 0; i < g_.roots.size(); ++i)
    if (i == 0 || g_.roots[i].object != g_.roots[i - 1].object) root_targets.push_back(g_.roots[i].object);
  r_.root_objects = root_targets.size();

  // Lasting and transient roots: the objects a lasting root reaches (lasting_) are held by those roots
  // alone. A transient root's slot that holds one of them is left out of the virtual root's
  // successors, and so are the references to them from objects only transient roots reach (a
  // request's local array of items that a static list holds too): a static leak is held by its static
  // field whichever request thread happens to be touching it when the heapshot is taken.
  {
    std::vector<uint32_t> queue;
    for (const HeapGraph::Root& root : g_.roots)
      if (!transient_root(g_.labels[root.label].kind)) {
        if (lasting_.empty()) lasting_.assign(n, false);
        if (!lasting_[root.object]) {
          lasting_[root.object] = true;
          queue.push_back(root.object);
        }
      }
    if (budget && budget->exceeded()) {
      out_of_memory();
      return;
    }
    for (size_t q = 0; q < queue.size(); ++q) {
      const uint32_t v = queue[q];
      for (uint32_t e = g_.edge_begin[v]; e < g_.edge_begin[v + 1]; ++e) {
        const uint32_t w = g_.edges[e];
        if (!lasting_[w]) {
          lasting_[w] = true;
          queue.push_back(w);
        }
      }
    }
    std::vector<uint32_t>().swap(queue);
    // The first object with a reference to drop (objects only transient roots reach are usually few).
    uint32_t first = n;
    for (uint32_t v = 0; v < n && first == n && !lasting_.empty(); ++v) {
      if (lasting_[v]) continue;
      for (uint32_t e = g_.edge_begin[v]; e < g_.edge_begin[v + 1]; ++e)
        if (lasting_[g_.edges[e]]) {
          first = v;
          break;
        }
    }
    if (first < n) {
      // Drop the references from transiently held objects to lasting ones, in place (paths() walks
      // the lasting roots' objects first, so it never needed them).
      const bool offsets = !g_.edge_offset.empty();
      uint32_t w = g_.edge_begin[first], begin = g_.edge_begin[first];
      for (uint32_t v = first; v < n; ++v) {
        const uint32_t end = g_.edge_begin[v + 1];
        g_.edge_begin[v] = w;
        for (uint32_t e = begin; e < end; ++e) {
          if (!lasting_[v] && lasting_[g_.edges[e]]) {
            ++r_.transient_refs;
            continue;
          }
          if (offsets) g_.edge_offset[w] = g_.edge_offset[e];
          g_.edges[w++] = g_.edges[e];
        }
        begin = end;
      }
      g_.edge_begin[n] = w;
    }
    if (!lasting_.empty()) {
      std::erase_if(root_targets, [this](uint32_t o) {
        if (!lasting_[o]) return false;
        auto it = std::lower_bound(g_.roots.begin(), g_.roots.end(), o,
                                   [](const HeapGraph::Root& r, uint32_t x) { return r.object < x; });
        for (; it != g_.roots.end() && it->object == o; ++it)
          if (!transient_root(g_.labels[it->label].kind)) return false;
        return true;
      });
      for (const HeapGraph::Root& root : g_.roots)
        if (lasting_[root.object] && transient_root(g_.labels[root.label].kind)) ++r_.transient_roots;
    }
  }

  dom_ = compute_dominators(n, g_.edge_begin.data(), g_.edges.data(), n, root_targets.data(),
                            static_cast<uint32_t>(root_targets.size()), budget);
  if (dom_.out_of_memory) {
    out_of_memory();
    return;
  }
  const uint32_t m = static_cast<uint32_t>(dom_.order.size());
#ifdef __GLIBC__
  // The dominator computation's arrays are freed; glibc keeps some of them in its heap (those under
  // its mmap threshold, which grows with each large free): given back here, they would otherwise add
  // to the peak below (about 20 MB on 5.6M objects).
  malloc_trim(0);
#endif

  // A top-level node (only the virtual root dominates it) that a root holds directly is named by that
  // root unless a reference from the subtree of a top-level node that another root holds reaches it
  // too: then it is held through several roots (kNone). A stale word on a thread's stack pointing
  // into a list that the same stack holds is one root, not several. Computed here, before the
  // retained sizes' arrays exist, so that `top` adds nothing to the peak; tops keeps (k, holder) of
  // the top-level nodes only, in k order.
  std::vector<std::pair<uint32_t, uint32_t>> tops;
  {
    std::vector<uint32_t> top(m, 0);
    std::vector<bool> is_top(n, false);  // by object: a bit, so that the pass over the references
                                         // looks up the dominator numbers of few targets only
    if (budget && budget->exceeded()) {
      out_of_memory();
      return;
    }
    for (uint32_t k = 1; k < m; ++k) {
      if (dom_.idom[k] == 0) {
        top[k] = static_cast<uint32_t>(tops.size());
        tops.emplace_back(k, root_of(dom_.order[k]));
        is_top[dom_.order[k]] = true;
      } else {
        top[k] = top[dom_.idom[k]];
      }
    }
    std::vector<bool> shared(tops.size(), false);
    for (uint32_t v = 0; v < n; ++v) {
      for (uint32_t e = g_.edge_begin[v]; e < g_.edge_begin[v + 1]; ++e) {
        if (!is_top[g_.edges[e]]) continue;
        const uint32_t kv = dom_.number[v];
        if (kv == kNoNode) break;
        const uint32_t t = top[dom_.number[g_.edges[e]]];
        if (top[kv] != t && (tops[top[kv]].second != tops[t].second || tops[t].second == kNone)) shared[t] = true;
      }
    }
    for (size_t t = 0; t < tops.size(); ++t)
      if (shared[t]) tops[t].second = kNone;
  }

  // Retained sizes and dominated object counts (for the folded tree only), by preorder number:
  // children before parents.
  retained_.assign(m, 0);
  std::vector<uint32_t> count(options.fold_depth ? m : 0, 0);
  if (budget && budget->exceeded()) {
    out_of_memory();
    return;
  }
  for (uint32_t k = m; k-- > 1;) {
    retained_[k] += g_.object_size(dom_.order[k]);
    retained_[dom_.idom[k]] += retained_[k];
  }
  if (options.fold_depth) {
    for (uint32_t k = m; k-- > 1;) {
      count[k] += 1;
      count[dom_.idom[k]] += count[k];
    }
  }
  for (uint32_t o = 0; o < n; ++o) {
    if (dom_.number[o] != kNoNode) continue;
    ++r_.unreached_objects;
    r_.unreached_bytes += g_.object_size(o);
  }

  // The dominator tree's children lists, then one depth-first walk: a class's retained size takes
  // each instance with no instance of its class above it (active[class] counts those on the path);
  // the folded tree takes each node down to fold_depth, keyed by (folded parent, class). Each child
  // is listed with its class (gathered in the fill, where k goes up and the loads of one node do not
  // wait for the last's), so that the walk reads its lists in order and misses the cache only for a
  // child's own retained size and children (asked for a few children ahead).
  struct Child {
    uint32_t k, klass;
  };
  std::vector<uint32_t> child_begin(static_cast<size_t>(m) + 2, 0);  // k's count at k + 2, then its start at k
  std::vector<Child> children(m ? m - 1 : 0);
  if (budget && budget->exceeded()) {
    out_of_memory();
    return;
  }
  for (uint32_t k = 1; k < m; ++k) ++child_begin[dom_.idom[k] + 2];
  for (uint32_t k = 0; k < m; ++k) child_begin[k + 2] += child_begin[k + 1];
  for (uint32_t k = 1; k < m; ++k)
    children[child_begin[dom_.idom[k] + 1]++] = {k, class_of_vtable_[g_.vtable[dom_.order[k]]]};
  child_begin.pop_back();  // k's children: children[child_begin[k] .. child_begin[k + 1])
  std::vector<uint32_t> active(classes.size(), 0);
  std::unordered_map<uint64_t, uint32_t> fold_ids;  // (parent + 1) << 32 | class, or root label for tops
  std::unordered_map<uint64_t, uint32_t> top_ids;
  struct Frame {
    uint32_t k, next, end, fold, klass;
    uint32_t child_class, child_fold;  // the last child's class and folded node: most siblings share them
    uint32_t root;                     // the root holding the top-level subtree this node is in
  };
  constexpr uint32_t kAhead = 4;  // children whose retained size and children are asked for ahead
  std::vector<Frame> stack;
  std::vector<uint64_t> biggest(classes.size(), 0);  // the largest top-most instance's retained size
  if (m) stack.push_back({0, child_begin[0], child_begin[1], kNone, kNone, kNone, kNone, kNone});
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.end) {
      if (f.klass != kNone) --active[f.klass];
      stack.pop_back();
      continue;
    }
    if (f.next + kAhead < f.end) {
      const uint32_t later = children[f.next + kAhead].k;
      __builtin_prefetch(&retained_[later]);
      __builtin_prefetch(&child_begin[later]);
    }
    const auto [k, c] = children[f.next++];
    const uint32_t parent_fold = f.fold;
    const bool top = f.k == 0;
    uint32_t holder = f.root;
    if (top) {
      holder = std::lower_bound(tops.begin(), tops.end(), std::pair<uint32_t, uint32_t>{k, 0})->second;
      if (holder == kNone) holder = several;
    }
    if (active[c]++ == 0) {
      classes[c].retained += retained_[k];
      // Equal sizes: the root found first in the heapshot's roots (not the first instance walked).
      if (retained_[k] > biggest[c] || (retained_[k] == biggest[c] && holder < classes[c].held_by)) {
        biggest[c] = retained_[k];
        classes[c].held_by = holder;
      }
    }
    uint32_t fold = parent_fold;
    if (options.fold_depth && (top || r_.folded[parent_fold].depth < options.fold_depth)) {
      const uint32_t root = top ? holder : kNone;
      uint32_t* slot;
      if (top) {
        slot = &top_ids.try_emplace((uint64_t{root} << 32) | c, kNone).first->second;
      } else if (f.child_class == c) {
        slot = &f.child_fold;
      } else {
        slot = &fold_ids.try_emplace((uint64_t{parent_fold + 1} << 32) | c, kNone).first->second;
      }
      if (*slot == kNone) {
        *slot = static_cast<uint32_t>(r_.folded.size());
        FoldedNode node;
        node.parent = top ? kNone : parent_fold;
        node.depth = top ? 1 : r_.folded[parent_fold].depth + 1;
        node.klass = c;
        node.root = root;
        r_.folded.push_back(node);
      }
      fold = *slot;
      if (!top) {
        f.child_class = c;
        f.child_fold = fold;
      }
      FoldedNode& node = r_.folded[fold];
      ++node.instances;
      node.retained += retained_[k];
      node.objects += count[k];
    }
    stack.push_back({k, child_begin[k], child_begin[k + 1], fold, c, kNone, kNone, holder});
  }
  if (budget && budget->exceeded()) {
    out_of_memory();
    return;
  }

  // Classes by retained size; the folded tree renumbered parents first, siblings by retained size.
  std::vector<uint32_t> by_rank(classes.size());
  for (uint32_t i = 0; i < by_rank.size(); ++i) by_rank[i] = i;
  std::sort(by_rank.begin(), by_rank.end(), [&classes](uint32_t a, uint32_t b) {
    const RetainedClass &x = classes[a], &y = classes[b];
    if (x.retained != y.retained) return x.retained > y.retained;
    if (x.shallow != y.shallow) return x.shallow > y.shallow;
    return x.name < y.name;
  });
  class_rank_.assign(classes.size(), 0);
  for (uint32_t i = 0; i < by_rank.size(); ++i) {
    class_rank_[by_rank[i]] = i;
    r_.classes.push_back(std::move(classes[by_rank[i]]));
  }
  const size_t f = r_.folded.size();
  std::vector<uint32_t> fb(f + 2, 0), fc(f);  // children of fold i at fc[fb[i+1] .. fb[i+2]); tops at index 0
  for (const FoldedNode& x : r_.folded) ++fb[(x.parent == kNone ? 0 : x.parent + 1) + 1];
  for (size_t i = 0; i + 1 < fb.size(); ++i) fb[i + 1] += fb[i];
  {
    std::vector<uint32_t> fill(fb.begin(), fb.end() - 1);
    for (uint32_t i = 0; i < f; ++i) fc[fill[r_.folded[i].parent == kNone ? 0 : r_.folded[i].parent + 1]++] = i;
  }
  // Equal sizes by class name, then root: an order that does not hang on the walk's (which follows
  // the dominators' numbering).
  auto by_retained = [this](uint32_t a, uint32_t b) {
    const FoldedNode &x = r_.folded[a], &y = r_.folded[b];
    if (x.retained != y.retained) return x.retained > y.retained;
    const std::string &xn = r_.classes[class_rank_[x.klass]].name, &yn = r_.classes[class_rank_[y.klass]].name;
    if (xn != yn) return xn < yn;
    if (x.root != y.root) return x.root < y.root;
    return a < b;
  };
  std::vector<FoldedNode> sorted;
  sorted.reserve(f);
  std::vector<std::pair<uint32_t, uint32_t>> todo;  // (old index, new parent)
  // One buffer for every node's children, filled by push_back (a vector made from the range and sorted
  // set off GCC 14's -Wfree-nonheap-object at -O3, a false positive that stopped Debian 13's Release build).
  std::vector<uint32_t> order;
  auto push_sorted = [&](size_t from, size_t to, uint32_t parent) {
    order.clear();
    for (size_t i = from; i < to; ++i) order.push_back(fc[i]);
    std::sort(order.begin(), order.end(), by_retained);
    for (auto it = order.rbegin(); it != order.rend(); ++it) todo.emplace_back(*it, parent);
  };
  push_sorted(fb[0], fb[1], kNone);
  while (!todo.empty()) {  // depth first, so each subtree's nodes follow it
    const auto [old, parent] = todo.back();
    todo.pop_back();
    FoldedNode x = r_.folded[old];
    x.parent = parent;
    x.klass = class_rank_[x.klass];
    const uint32_t now = static_cast<uint32_t>(sorted.size());
    sorted.push_back(x);
    push_sorted(fb[old + 1], fb[old + 2], now);
  }
  r_.folded = std::move(sorted);
}

std::vector<RootPath> RetentionAnalysis::paths(const std::string& name, size_t max, uint64_t& instances) const {
  std::vector<RootPath> out;
  instances = 0;
  if (!r_.error.empty() || max == 0) return out;
  const uint32_t n = g_.objects;
  auto class_name = [this](uint32_t o) -> const std::string& {
    return r_.classes[class_rank_[class_of_vtable_[g_.vtable[o]]]].name;
  };
  std::vector<uint32_t> wanted;
  for (uint32_t o = 0; o < n; ++o)
    if (dom_.number[o] != kNoNode && class_name(o) == name) wanted.push_back(o);
  instances = wanted.size();
  if (wanted.empty()) return out;
  std::sort(wanted.begin(), wanted.end(), [this](uint32_t a, uint32_t b) {
    const uint64_t ra = retained_[dom_.number[a]], rb = retained_[dom_.number[b]];
    return ra != rb ? ra > rb : a < b;
  });
  if (wanted.size() > max) wanted.resize(max);

  // Breadth first from the lasting roots' objects, the most telling roots first; then from the
  // transient roots' objects, for what no lasting root reaches.
  std::vector<uint32_t> parent(n, kNone), queue;
  std::vector<std::pair<int, uint32_t>> starts;
  for (size_t i = 0; i < g_.roots.size(); ++i) {
    if (i && g_.roots[i].object == g_.roots[i - 1].object) continue;
    // Ranked by the kind of the object's most telling root (the roots are sorted by object).
    int best = 1 << 30;
    bool lasting = false;
    for (size_t j = i; j < g_.roots.size() && g_.roots[j].object == g_.roots[i].object; ++j) {
      const uint8_t kind = g_.labels[g_.roots[j].label].kind;
      best = std::min(best, root_rank(kind));
      lasting = lasting || !transient_root(kind);
    }
    if (!lasting && !lasting_.empty() && lasting_[g_.roots[i].object]) continue;  // a transient copy
    starts.emplace_back(lasting ? best : best + (1 << 20), g_.roots[i].object);
  }
  std::stable_sort(starts.begin(), starts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  queue.reserve(n);
  size_t next_start = 0;
  auto start = [&](bool transient) {
    for (; next_start < starts.size() && (starts[next_start].first >= (1 << 20)) == transient; ++next_start) {
      const uint32_t o = starts[next_start].second;
      if (parent[o] != kNone) continue;
      parent[o] = n;
      queue.push_back(o);
    }
  };
  start(false);
  for (size_t q = 0;; ++q) {
    if (q == queue.size()) {
      if (next_start == starts.size()) break;
      start(true);
      if (q == queue.size()) break;
    }
    const uint32_t v = queue[q];
    for (uint32_t e = g_.edge_begin[v]; e < g_.edge_begin[v + 1]; ++e) {
      const uint32_t w = g_.edges[e];
      if (parent[w] != kNone) continue;
      parent[w] = v;
      queue.push_back(w);
    }
  }
  for (const uint32_t o : wanted) {
    RootPath p;
    p.retained = retained_[dom_.number[o]];
    std::vector<uint32_t> chain;
    for (uint32_t x = o; x != n; x = parent[x]) chain.push_back(x);
    std::reverse(chain.begin(), chain.end());
    const uint32_t root = root_of(chain.front());
    p.root = root == kNone ? RootName{"unknown", ""} : r_.roots[root];
    p.total_steps = chain.size();
    for (size_t i = 0; i < chain.size(); ++i) {
      if (chain.size() > 2 * kPathEnds && i == kPathEnds) i = chain.size() - kPathEnds;
      RootPath::Step s;
      s.klass = class_name(chain[i]);
      if (i > 0 && !g_.edge_offset.empty()) {
        const uint32_t from = chain[i - 1];
        for (uint32_t e = g_.edge_begin[from]; e < g_.edge_begin[from + 1]; ++e) {
          if (g_.edges[e] == chain[i]) {
            s.offset = g_.edge_offset[e];
            break;
          }
        }
      }
      p.steps.push_back(std::move(s));
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::pair<std::string, uint64_t>> folded_paths(const Retention& r, uint32_t max_depth) {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::vector<std::string> key(r.folded.size());
  for (size_t i = 0; i < r.folded.size(); ++i) {
    const FoldedNode& x = r.folded[i];
    if (x.parent == UINT32_MAX) {
      const RootName& root = r.roots[x.root];
      key[i] = root.kind + " " + root.name;
    } else {
      key[i] = key[x.parent];
    }
    key[i] += " > " + r.classes[x.klass].name;
    if (x.depth <= max_depth) out.emplace_back(key[i], x.retained);
  }
  return out;
}

std::vector<Growth> class_growth(const Retention& a, const Retention& b) {
  std::map<std::string, Growth> m;
  for (const auto& c : a.classes) {
    Growth& g = m[c.name];
    g.from += c.retained;
    g.objects -= static_cast<int64_t>(c.objects);
  }
  for (const auto& c : b.classes) {
    Growth& g = m[c.name];
    g.to += c.retained;
    g.objects += static_cast<int64_t>(c.objects);
  }
  std::vector<Growth> out;
  for (auto& [name, g] : m) {
    g.name = name;
    g.retained = static_cast<int64_t>(g.to - g.from);
    if (g.retained || g.objects) out.push_back(g);
  }
  // Equal growth (a holder and the array it owns): the one retaining more first, the holder.
  std::stable_sort(out.begin(), out.end(), [](const Growth& x, const Growth& y) {
    return x.retained != y.retained ? x.retained > y.retained : x.to > y.to;
  });
  return out;
}

std::vector<Growth> subtree_growth(const Retention& a, const Retention& b, uint32_t depth) {
  std::map<std::string, Growth> m;
  for (const auto& [path, bytes] : folded_paths(a, depth)) m[path].from += bytes;
  for (const auto& [path, bytes] : folded_paths(b, depth)) m[path].to += bytes;
  std::vector<Growth> out;
  for (auto& [name, g] : m) {
    g.name = name;
    g.retained = static_cast<int64_t>(g.to - g.from);
    if (g.retained) out.push_back(g);
  }
  std::stable_sort(out.begin(), out.end(), [](const Growth& x, const Growth& y) { return x.retained > y.retained; });
  return out;
}

std::vector<Suspect> leak_suspects(const std::vector<Retention>& shots, uint32_t depth) {
  std::map<std::string, std::vector<uint64_t>> series;
  for (size_t s = 0; s < shots.size(); ++s) {
    std::map<std::string, uint64_t> here;
    for (const auto& [path, bytes] : folded_paths(shots[s], depth)) here[path] += bytes;
    for (const auto& [path, bytes] : here) {
      std::vector<uint64_t>& v = series[path];
      if (v.size() == s) v.push_back(bytes);
    }
  }
  std::vector<Suspect> suspects;
  for (auto& [path, v] : series) {
    if (v.size() != shots.size()) continue;
    bool shrank = false;
    size_t grew = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      shrank = shrank || v[i] < v[i - 1];
      grew += v[i] > v[i - 1];
    }
    if (!shrank && 2 * grew > v.size() - 1) suspects.push_back(Suspect{path, std::move(v)});
  }
  std::stable_sort(suspects.begin(), suspects.end(), [](const Suspect& x, const Suspect& y) {
    return x.retained.back() - x.retained.front() > y.retained.back() - y.retained.front();
  });
  return suspects;
}

}  // namespace mlpd::views
