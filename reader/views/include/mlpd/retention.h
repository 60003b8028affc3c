// Why memory is held (docs/reports.md "Retained sizes"): the dominator tree of one heapshot's graph
// (mlpd/heap/heap_graph.h) under a virtual root that points to every object a GC root holds, and what is
// computed from it:
//   - an object's retained size: the bytes of the objects it dominates, itself included (what would
//     be freed if it were gone);
//   - a class's retained size: the sum of the retained sizes of its instances that have no instance
//     of the same class above them in the dominator tree (Eclipse MAT's figure: each byte once);
//   - the dominator tree folded by class path (siblings of one class merged), each top-level subtree
//     labelled with the GC root that holds it;
//   - the shortest path from a GC root to the biggest instances of a class.
// Objects no root reaches are counted apart ("unreached"), never dropped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mlpd/heap/dominators.h"
#include "mlpd/heap/heap_graph.h"
#include "mlpd/names.h"
#include "mlpd/views.h"

namespace mlpd::views {

struct RetainedClass {
  std::string name;
  uint64_t objects = 0;   // instances in the heapshot (reached or not)
  uint64_t shallow = 0;   // their bytes
  uint64_t retained = 0;  // MAT's class retained size (reached instances only)
  // The root holding the instance that retains most (index into Retention::roots; UINT32_MAX when no
  // instance is reached): "held by" in the report.
  uint32_t held_by = UINT32_MAX;
};

// A node of the folded dominator tree.
struct FoldedNode {
  uint32_t parent = UINT32_MAX;  // UINT32_MAX: a top-level subtree (held by a root directly)
  uint32_t depth = 1;            // 1 for top-level subtrees
  uint32_t klass = 0;            // index into Retention::classes
  uint32_t root = UINT32_MAX;    // top-level only: index into Retention::roots (kSeveralRoots...)
  uint64_t instances = 0;        // dominator-tree nodes folded here
  uint64_t retained = 0;         // their retained bytes
  uint64_t objects = 0;          // the objects they dominate (themselves included)
};

struct RootName {
  std::string kind;  // "static", "stack", "gc_handle", "finalizer_queue", ..., "unknown", "several"
  std::string name;
};

struct Retention {
  size_t index = 0;
  int64_t time_ns = 0;
  bool complete = false;
  std::string error;  // set: nothing else is
  uint64_t objects = 0, bytes = 0;
  uint64_t unreached_objects = 0, unreached_bytes = 0;
  uint64_t root_objects = 0;  // distinct objects held by a GC root
  uint64_t dangling_refs = 0, dangling_roots = 0, duplicate_objects = 0;
  // Transient copies left out (docs/reports.md, "Lasting and transient roots"): transient roots (a
  // thread's stack, the handle stack; one per object and root range) holding an object that a lasting
  // root reaches, and references to such objects from objects only transient roots reach.
  uint64_t transient_roots = 0, transient_refs = 0;
  std::vector<RetainedClass> classes;  // retained descending, then shallow, then name
  std::vector<RootName> roots;         // labels used by the folded tree and the paths
  std::vector<FoldedNode> folded;      // parents before children; retained descending among siblings
};

struct RetentionOptions {
  uint32_t fold_depth = 6;   // the folded tree's depth (0: no folded tree)
  MemoryBudget* budget = nullptr;
};

// The path from a GC root to one object.
struct RootPath {
  uint64_t retained = 0;
  RootName root;
  struct Step {
    std::string klass;
    int64_t offset = -1;  // the field's offset in the previous step's object; -1 for the first step
  };
  // The steps from the root's object to the instance; a path of more than 64 steps keeps its first
  // and last 32 (total_steps says how many there are).
  std::vector<Step> steps;
  uint64_t total_steps = 0;
};

class RetentionAnalysis {
 public:
  // Takes the graph (labelled: HeapGraphCollector::label). `names` resolves the classes.
  RetentionAnalysis(HeapGraph graph, const Names& names, const RetentionOptions& options);
  const Retention& result() const { return r_; }
  // Paths to the `max` instances of class `name` with the largest retained size (needs a graph read
  // with offsets for them; -1 otherwise). `instances` receives the number of reached instances.
  std::vector<RootPath> paths(const std::string& name, size_t max, uint64_t& instances) const;

 private:
  uint32_t root_of(uint32_t object) const;  // index into r_.roots of the object's preferred root
  HeapGraph g_;
  Retention r_;
  std::vector<uint32_t> class_of_vtable_;
  Dominators dom_;
  std::vector<uint64_t> retained_;  // by preorder number
  std::vector<uint32_t> root_label_;  // by HeapGraph label: index into r_.roots
  std::vector<uint32_t> class_rank_;  // by class index in the build order -> index into r_.classes
  std::vector<bool> lasting_;  // by object: reached from a lasting root (empty: no lasting root)
};

// The top-level folded subtrees as "KIND NAME/Class/Class..." keys with their retained bytes, for
// --diff and --suspects (matching subtrees across heapshots by what they are, not by address).
std::vector<std::pair<std::string, uint64_t>> folded_paths(const Retention& r, uint32_t max_depth);

// What grew from heapshot a to heapshot b (mlpd heapshots --diff --retained; docs/reports.md "What
// grew"), matched by name: by class (retained bytes, objects; changed ones only, most grown first, a
// holder before what it owns on equal growth), and by top-level folded subtree (folded_paths with
// `depth` levels).
struct Growth {
  std::string name;
  int64_t retained = 0, objects = 0;
  uint64_t from = 0, to = 0;
};
std::vector<Growth> class_growth(const Retention& a, const Retention& b);
std::vector<Growth> subtree_growth(const Retention& a, const Retention& b, uint32_t depth);

// Leak suspects (mlpd heapshots --suspects) over heapshots in time order: the folded subtrees present
// in every one whose retained bytes never shrank from one to the next and grew at more than half of
// the steps (a heapshot taken when nothing was added, at shutdown say, does not clear one); most grown
// first.
struct Suspect {
  std::string path;
  std::vector<uint64_t> retained;  // per heapshot
};
std::vector<Suspect> leak_suspects(const std::vector<Retention>& shots, uint32_t depth);

// The folded dominator tree as collapsed stacks (mlpd export --what retained): "KIND \"NAME\";Class;
// Class" (';' in a name becomes ':'), each weighing the bytes of its own (its retained bytes less its
// children's); frames without bytes of their own are left out. In the folded tree's order.
std::vector<CollapsedStack> retained_stacks(const Retention& r);

// Collapsed stacks of retained bytes ("root;Class;Class", bytes of the frame's own) as pprof's
// profile.proto, gzip-compressed (retention_pprof.cpp). False with `error` when it cannot be written.
bool write_retained_pprof(const std::vector<CollapsedStack>& stacks, std::FILE* out, std::string& error);

}  // namespace mlpd::views
