#include "mlpd/heap/heap_graph.h"

#include <malloc.h>

#include <algorithm>
#include <climits>
#include <charconv>
#include <optional>
#include <utility>

#include "mlpd/budget.h"
#include "mlpd/heap/dominators.h"
#include "mlpd/enum_names.h"
#include "mlpd/hex.h"
#include "address_index.h"
#include "pod_buffer.h"

namespace mlpd {

std::string root_kind_name(uint8_t kind) {
  if (kind == kRootUnknown) return "unknown";
  return std::string(root_source_name(kind));
}

uint64_t HeapGraph::big_size(uint32_t object) const {
  const uint64_t s = UINT32_MAX;
  const auto it = std::lower_bound(big_sizes.begin(), big_sizes.end(), std::pair<uint32_t, uint64_t>{object, 0});
  return it != big_sizes.end() && it->first == object ? it->second : s;
}

// A heapshot being read. Objects get ids in listing order; their references are kept as raw target
// addresses in listing order (so the CSR of the objects is built as they come); a continuation chunk
// that does not follow its object (never seen from Mono) goes to `stray`.
struct HeapGraphCollector::Building {
  uint64_t thread = 0;
  bool wanted = false;
  HeapGraph g;
  PodBuffer<uint64_t> address;     // by object
  PodBuffer<uint64_t> targets;     // by raw edge
  IdMap<uint32_t> vtable_ids;      // vtable pointer -> index into g.vtables
  // The vtables of the last objects, by a few bits of the pointer: most objects are of the class of
  // one listed just before (a node, its field objects, the next node), so the map is asked rarely.
  struct RecentVtable {
    uint64_t ptr = 0;
    uint32_t id = 0;  // index into g.vtables + 1; 0: empty
  };
  RecentVtable recent[16];
  struct Stray {
    uint64_t from = 0, to = 0, offset = 0;
  };
  std::vector<Stray> stray;
  struct RawRoot {
    uint64_t slot = 0, obj = 0;
  };
  std::vector<RawRoot> roots;
  bool too_large = false;
};

HeapGraphCollector::~HeapGraphCollector() {
  for (Building* b : open_) delete b;
  delete pending_;
}

void HeapGraphCollector::on_buffer(const BufferInfo& b) {
  if (!have_start_) {
    have_start_ = true;
    start_ = b.header.time_base;
  }
}

void HeapGraphCollector::close(uint64_t thread) {
  for (size_t i = 0; i < open_.size(); ++i) {
    if (open_[i]->thread != thread) continue;
    Building* b = open_[i];
    open_.erase(open_.begin() + static_cast<ptrdiff_t>(i));
    if (b->wanted && opt_.last_only && !finished_) {  // kept raw: resolved only if no heapshot follows
      delete pending_;
      pending_ = b;
      return;
    }
    if (b->wanted) {
      HeapGraph g;
      resolve(*b, g);
      delete b;
      b = nullptr;
      if (opt_.done) opt_.done(std::move(g));
    }
    delete b;
    return;
  }
}

namespace {

constexpr uint32_t kMaxCount = UINT32_MAX - 1;
// References resolved ahead of their use (address_index.h): far() 2 * kStep ahead, near() kStep.
// (8 -> 16: 0.21 -> 0.18 s CPU resolving the 11M references of retained_speed.sh; 24 and 32 no better.)
constexpr size_t kStep = 16, kRing = 64;  // kRing: a power of two above 2 * kStep

// The objects' ids by address (ties by id). A heap walk lists the objects of each block of the heap in
// address order, so the listing is a few thousand ascending runs over disjoint ranges (a run also ends
// at a jump of more than kRunGap, so that it stays within a block): sorted as runs (by their first
// address) and checked, a pass over the objects instead of a sort of millions of indirect keys
// (0.20 s on 5.6M objects). Runs that overlap, or a listing from elsewhere, are sorted whole.
constexpr uint64_t kRunGap = 4096;
std::vector<uint32_t> address_order(const PodBuffer<uint64_t>& address) {
  const uint32_t n = static_cast<uint32_t>(address.size());
  std::vector<uint32_t> order(n);
  auto before = [&address](uint32_t x, uint32_t y) {
    return address[x] != address[y] ? address[x] < address[y] : x < y;
  };
  struct Run {
    uint64_t first;
    uint32_t begin, end;
  };
  std::vector<Run> runs;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i + 1;
    while (j < n && address[j] >= address[j - 1] && address[j] - address[j - 1] <= kRunGap) ++j;
    runs.push_back({address[i], i, j});
    if (runs.size() > n / 16 + 16) break;  // not a heap walk's listing: sorted whole below
    i = j;
  }
  bool ok = runs.size() <= n / 16 + 16;
  if (ok) {
    std::sort(runs.begin(), runs.end(),
              [](const Run& x, const Run& y) { return x.first != y.first ? x.first < y.first : x.begin < y.begin; });
    uint32_t at = 0;
    for (const Run& r : runs)
      for (uint32_t i = r.begin; i < r.end; ++i) order[at++] = i;
    for (uint32_t i = 1; i < n && ok; ++i) ok = before(order[i - 1], order[i]);
  }
  if (!ok) {
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), before);
  }
  return order;
}

}  // namespace

void HeapGraphCollector::on_event(const Event& e, const EventInfo& info) {
  names_.observe(e);
  const uint64_t thread = info.buffer ? info.buffer->header.thread_id : 0;
  switch (e.kind) {
    case EventKind::heap_root_register: {
      Range r;
      r.start = e.ptr;
      r.end = e.ptr + e.size < e.ptr ? UINT64_MAX : e.ptr + e.size;
      r.registered = e.time;
      r.kind = e.code;
      r.key = e.ptr2;
      auto it = range_name_ids_.find(e.name);
      if (it == range_name_ids_.end()) {
        it = range_name_ids_.emplace(e.name, static_cast<uint32_t>(range_names_.size())).first;
        range_names_.push_back(e.name);
      }
      r.name = it->second;
      ranges_.push_back(r);
      return;
    }
    case EventKind::heap_root_unregister:
      // The latest registration of that start still open.
      for (size_t i = ranges_.size(); i-- > 0;) {
        if (ranges_[i].start == e.ptr && ranges_[i].unregistered == UINT64_MAX) {
          ranges_[i].unregistered = e.time;
          break;
        }
      }
      return;
    case EventKind::heap_start: {
      close(thread);  // a second HEAP_START on a thread ends the open heapshot (HeapshotCollector's rule)
      if (opt_.last_only) {  // the heapshots before this one are not the last: dropped unresolved
        delete pending_;
        pending_ = nullptr;
        for (Building* o : open_) {
          if (!o->wanted) continue;
          Building fresh;
          fresh.thread = o->thread;
          fresh.g.index = o->g.index;
          *o = std::move(fresh);
        }
      }
      auto* b = new Building;
      b->thread = thread;
      b->g.index = count_++;
      b->g.thread = thread;
      b->g.start_time = e.time;
      b->g.time_ns = static_cast<int64_t>(e.time - start_);
      b->wanted = !opt_.want || opt_.want(b->g.index);
      if (b->wanted) b->g.edge_begin.push_back(0);
      open_.push_back(b);
      return;
    }
    case EventKind::heap_end:
      for (Building* b : open_)
        if (b->thread == thread) b->g.complete = true;
      close(thread);
      return;
    case EventKind::heap_object:
    case EventKind::heap_root:
      break;
    default:
      return;
  }
  Building* b = nullptr;
  for (Building* o : open_)
    if (o->thread == thread) b = o;
  if (!b || !b->wanted || b->too_large) return;
  HeapGraph& g = b->g;
  if (e.kind == EventKind::heap_root) {
    for (const RootRef& r : e.roots) b->roots.push_back({r.address, r.obj});
    return;
  }
  if (e.size == 0) {  // a continuation chunk: more references of the object listed last
    if (g.objects && b->address.back() == e.obj) {
      for (const HeapRef& r : e.refs) {
        b->targets.push_back(r.obj);
        if (opt_.offsets) g.edge_offset.push_back(static_cast<uint32_t>(std::min<uint64_t>(r.offset, UINT32_MAX)));
      }
      g.edge_begin.back() = static_cast<uint32_t>(std::min<size_t>(b->targets.size(), UINT32_MAX));
    } else {
      for (const HeapRef& r : e.refs) b->stray.push_back({e.obj, r.obj, r.offset});
    }
  } else {
    b->address.push_back(e.obj);
    Building::RecentVtable& recent = b->recent[(e.ptr >> 3) & 15];
    if (recent.id == 0 || recent.ptr != e.ptr) {
      uint32_t& vt = b->vtable_ids[e.ptr];
      if (vt == 0) {
        g.vtables.push_back(e.ptr);
        vt = static_cast<uint32_t>(g.vtables.size());
      }
      recent = {e.ptr, vt};
    }
    g.vtable.push_back(recent.id - 1);
    if (e.size >= UINT32_MAX) {
      g.size.push_back(UINT32_MAX);
      g.big_sizes.emplace_back(g.objects, e.size);
    } else {
      g.size.push_back(static_cast<uint32_t>(e.size));
    }
    ++g.objects;
    g.bytes += e.size;
    for (const HeapRef& r : e.refs) {
      b->targets.push_back(r.obj);
      if (opt_.offsets) g.edge_offset.push_back(static_cast<uint32_t>(std::min<uint64_t>(r.offset, UINT32_MAX)));
    }
    g.edge_begin.push_back(static_cast<uint32_t>(std::min<size_t>(b->targets.size(), UINT32_MAX)));
  }
  if (g.objects >= kMaxCount || b->targets.size() + b->stray.size() >= kMaxCount) {
    b->too_large = true;
    g.error = "heapshot " + std::to_string(g.index) + " has more than " + std::to_string(kMaxCount) +
              " objects or references, more than mlpd can analyse";
  }
}

template <typename Index>
void HeapGraphCollector::resolve_edges(Building& b, HeapGraph& g, const Index& index) {
  // References: resolved in place into the CSR, the unresolvable ones dropped. Each target goes
  // through the index's three steps kStep references apart (a ring of the steps in flight).
  const uint32_t n = g.objects;
  const PodBuffer<uint64_t>& targets = b.targets;
  const size_t total = targets.size();
  g.edges.resize(total);
  typename Index::Probe probes[kRing];
  uint32_t found[kRing];
  auto stage = [&](size_t e) {  // runs far() for e, near() for e - kStep
    if (e < total) probes[e % kRing] = index.far(targets[e]);
    if (e >= kStep && e - kStep < total) found[(e - kStep) % kRing] = index.near(probes[(e - kStep) % kRing]);
  };
  for (size_t e = 0; e < 2 * kStep; ++e) stage(e);
  uint32_t w = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t from = g.edge_begin[i], to = g.edge_begin[i + 1];
    g.edge_begin[i] = w;
    for (uint32_t e = from; e < to; ++e) {
      stage(e + 2 * kStep);
      const uint32_t t = index.id(found[e % kRing]);
      if (t == kNoNode) {
        ++g.dangling_refs;
        continue;
      }
      if (!g.edge_offset.empty()) g.edge_offset[w] = g.edge_offset[e];
      g.edges[w++] = t;
    }
  }
  g.edge_begin[n] = w;
  b.targets = {};
}

void HeapGraphCollector::resolve(Building& b, HeapGraph& g) {
  g = std::move(b.g);
  if (!g.error.empty()) {  // keep the header fields and the error only
    g.vtable = {}, g.size = {}, g.edge_begin = {}, g.edges = {}, g.edge_offset = {}, g.vtables = {};
    return;
  }
  MemoryBudget* budget = opt_.budget;
  auto out_of_memory = [&]() {
    const std::string msg = budget->message();
    const size_t index = g.index;
    g = HeapGraph{};
    g.index = index;
    g.error = "heapshot " + std::to_string(index) + " is too large for the memory budget: " + msg;
  };
  const uint32_t n = g.objects;
  std::vector<uint32_t> order = address_order(b.address);
  std::vector<uint64_t> sorted(n);
  for (uint32_t i = 0; i < n; ++i) sorted[i] = b.address[order[i]];
  b.address = {};
  for (uint32_t i = 1; i < n; ++i)
    if (sorted[i] == sorted[i - 1]) ++g.duplicate_objects;
  heap_index::BitmapIndex bitmap;
  std::optional<heap_index::HashIndex> hashed;
  if (!bitmap.build(sorted, order)) hashed.emplace(std::move(sorted), std::move(order));
  sorted = {};
  order = {};
  if (budget && budget->exceeded()) return out_of_memory();
  if (hashed)
    resolve_edges(b, g, *hashed);
  else
    resolve_edges(b, g, bitmap);
  if (budget && budget->exceeded()) return out_of_memory();
  auto lookup = [&](uint64_t addr) { return hashed ? hashed->find(addr) : bitmap.find(addr); };
  const uint32_t w = g.edge_begin[n];
  // Continuation chunks away from their object: merged by rebuilding the CSR (never seen from Mono).
  if (!b.stray.empty()) {
    std::vector<std::pair<uint32_t, uint32_t>> extra;  // (from, index into stray)
    for (uint32_t s = 0; s < b.stray.size(); ++s) {
      const uint32_t from = lookup(b.stray[s].from), to = lookup(b.stray[s].to);
      if (from == kNoNode || to == kNoNode) {
        ++g.dangling_refs;
        continue;
      }
      b.stray[s].to = to;
      extra.emplace_back(from, s);
    }
    std::sort(extra.begin(), extra.end());
    std::vector<uint32_t> begin(n + 1, 0), edges, offsets;
    edges.reserve(w + extra.size());
    size_t x = 0;
    for (uint32_t i = 0; i < n; ++i) {
      begin[i] = static_cast<uint32_t>(edges.size());
      for (uint32_t e = g.edge_begin[i]; e < g.edge_begin[i + 1]; ++e) {
        edges.push_back(g.edges[e]);
        if (!g.edge_offset.empty()) offsets.push_back(g.edge_offset[e]);
      }
      for (; x < extra.size() && extra[x].first == i; ++x) {
        edges.push_back(static_cast<uint32_t>(b.stray[extra[x].second].to));
        if (!g.edge_offset.empty())
          offsets.push_back(static_cast<uint32_t>(std::min<uint64_t>(b.stray[extra[x].second].offset, UINT32_MAX)));
      }
    }
    begin[n] = static_cast<uint32_t>(edges.size());
    g.edge_begin = std::move(begin);
    g.edges = std::move(edges);
    if (!g.edge_offset.empty()) g.edge_offset = std::move(offsets);
    b.stray = {};
  }
  g.edges.resize(g.edge_begin[n]);
  g.edges.shrink_to_fit();
  if (!g.edge_offset.empty()) {
    g.edge_offset.resize(g.edge_begin[n]);
    g.edge_offset.shrink_to_fit();
  }

  // Roots: (object, slot), one per distinct pair; labelled by label() once all ranges are known.
  g.roots.reserve(b.roots.size());
  for (const Building::RawRoot& r : b.roots) {
    const uint32_t o = lookup(r.obj);
    if (o == kNoNode) {
      ++g.dangling_roots;
      continue;
    }
    g.roots.push_back({o, 0, r.slot});
  }
  b.roots = {};
  std::sort(g.roots.begin(), g.roots.end(), [](const HeapGraph::Root& x, const HeapGraph::Root& y) {
    return x.object != y.object ? x.object < y.object : x.slot < y.slot;
  });
  g.roots.erase(std::unique(g.roots.begin(), g.roots.end(),
                            [](const HeapGraph::Root& x, const HeapGraph::Root& y) {
                              return x.object == y.object && x.slot == y.slot;
                            }),
                g.roots.end());
  if (budget && budget->exceeded()) return out_of_memory();
}

void HeapGraphCollector::finish() {
  if (finished_) return;
  finished_ = true;
  // Reading stopped at the memory budget: what was read of the open heapshots is not analysed (it
  // would only take more memory); each wanted one is handed over with the error.
  if (opt_.budget && opt_.budget->exceeded()) {
    if (pending_) open_.push_back(pending_);
    pending_ = nullptr;
    for (Building* b : open_) {
      if (b->wanted && opt_.done) {
        HeapGraph g;
        g.index = b->g.index;
        g.thread = b->g.thread;
        g.start_time = b->g.start_time;
        g.time_ns = b->g.time_ns;
        g.error = "heapshot " + std::to_string(g.index) + " is too large for the memory budget: " +
                  opt_.budget->message();
        delete b;
        opt_.done(std::move(g));
      } else {
        delete b;
      }
    }
    open_.clear();
    return;
  }
  if (pending_) {  // last_only: the last heapshot, closed before the end of the file
    HeapGraph g;
    resolve(*pending_, g);
    delete pending_;
    pending_ = nullptr;
    if (opt_.done) opt_.done(std::move(g));
  }
  while (!open_.empty()) close(open_.front()->thread);
}

void HeapGraphCollector::label(HeapGraph& g, std::vector<uint64_t>* loose) const {
  // Ranges by start; max_end[i] is the largest end among the first i+1, so the scan backwards from
  // the last range starting at or below a slot stops as soon as no earlier range can hold it.
  std::vector<uint32_t> by_start(ranges_.size());
  for (uint32_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
  std::sort(by_start.begin(), by_start.end(), [this](uint32_t a, uint32_t b) {
    return ranges_[a].start != ranges_[b].start ? ranges_[a].start < ranges_[b].start : a < b;
  });
  std::vector<uint64_t> max_end(by_start.size());
  for (size_t i = 0; i < by_start.size(); ++i)
    max_end[i] = std::max(ranges_[by_start[i]].end, i ? max_end[i - 1] : 0);
  // Mono scans its table of normal GC handles with a marker and registers it as a range of size 0
  // ("GC Handles (SGen, Normal)"); the slots it reports lie in the table's buckets, in no range.
  const Range* handles = nullptr;
  for (const Range& x : ranges_)
    if (x.kind == 6 && x.start == x.end) handles = &x;
  std::map<std::pair<uint8_t, std::string>, uint32_t> ids;
  g.labels.clear();
  auto label_id = [&](uint8_t kind, const std::string& name) {
    auto [it, added] = ids.emplace(std::pair{kind, name}, static_cast<uint32_t>(g.labels.size()));
    if (added) g.labels.push_back({kind, name});
    return it->second;
  };
  constexpr size_t kMaxScan = 4096;  // nested ranges of a hostile file: give up, "unknown"
  for (HeapGraph::Root& r : g.roots) {
    switch (r.slot) {
      case 1: r.label = label_id(kRootFinalizer, "Finalizer Queue"); continue;
      case 2: r.label = label_id(kRootFinalizer, "Critical Finalizer Queue"); continue;
      case 3: r.label = label_id(kRootEphemeron, "Ephemerons"); continue;
      case 4: r.label = label_id(kRootToggleRef, "Toggle References"); continue;
      default: break;
    }
    const Range* best = nullptr;
    bool best_alive = false;
    size_t i = static_cast<size_t>(
        std::upper_bound(by_start.begin(), by_start.end(), r.slot,
                         [this](uint64_t a, uint32_t x) { return a < ranges_[x].start; }) -
        by_start.begin());
    for (size_t scanned = 0; i-- > 0 && max_end[i] > r.slot && scanned < kMaxScan; ++scanned) {
      const Range& x = ranges_[by_start[i]];
      if (r.slot >= x.end) continue;
      // Alive at the heapshot: registered before it and not unregistered before it. Otherwise the
      // latest registration of a range holding the slot.
      const bool alive = x.registered <= g.start_time && x.unregistered > g.start_time;
      if (!best || (alive && !best_alive) || (alive == best_alive && x.registered > best->registered)) {
        best = &x;
        best_alive = alive;
      }
    }
    if (!best && loose) loose->push_back(r.slot);
    if (!best) best = handles;
    if (!best) {
      r.label = label_id(kRootUnknown, "");
      continue;
    }
    std::string name = range_names_[best->name];
    if (best->kind == 3 /* static */) {
      if (const std::string* c = names_.vtable_class_name(best->key)) name += ": " + *c;
    } else if (best->kind == 1 || best->kind == 4 || best->kind == 14) {  // stack, thread static, handle
      if (best->key == 0) {  // no thread named (CoreCLR's stack roots: the runtime does not say whose)
        r.label = label_id(best->kind, name);
        continue;
      }
      name += ": thread " + hex(best->key);
      if (const std::string* t = names_.thread_name(best->key)) name += " (" + *t + ")";
    }
    r.label = label_id(best->kind, name);
  }
}

HeapGraphMalloc::HeapGraphMalloc() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

HeapGraphMalloc::~HeapGraphMalloc() {
#ifdef __GLIBC__
  mallopt(M_TRIM_THRESHOLD, 128 << 10);  // glibc's defaults (the mmap threshold stays fixed)
  mallopt(M_TOP_PAD, 128 << 10);
#endif
}

}  // namespace mlpd
