// The object graph of one heapshot, in compact arrays (docs/reports.md "Retained sizes"): objects
// numbered 0..N-1 in the order the heap walk lists them, their references in CSR form (object i's
// targets are edges[edge_begin[i] .. edge_begin[i+1])), and the GC roots of the heapshot, each
// labelled with the registered root range its slot lies in (kind and name).
//
// Which events belong to a heapshot: those of the buffer thread that wrote its HEAP_START, up to its
// HEAP_END (the same rule as HeapshotCollector, FORMAT-NOTES §6). Mono and our agent both write the
// collection's heap_root events on that thread between the two (the GC's root report runs during the
// heapshot collection); heap_root events outside any heapshot (Mono's compat mode reports roots at
// every collection) belong to none. The root ranges (heap_root_register/unregister) come from every
// thread; a root slot is labelled, once the whole file has been read, with the range that contains it
// and was registered at the heapshot's time (Mono's special slot addresses 1 and 2 are the finalizer
// queues, 3 ephemerons, 4 toggle refs).
//
// Hostile input: references to addresses no object of the heapshot has (dangling, or outside the
// heapshot) and roots to such addresses are dropped and counted; an object listed twice keeps its
// first listing (the others are counted and stay unreferenced); more than 2^32-2 objects or edges is
// refused with a message. Memory: about 24 bytes an object and 12 a reference while reading (plus
// 4 a reference with offsets), 12 an object and 4 (8) a reference once resolved; decode()'s budget
// check covers the reading, resolve checks the budget after each allocation.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/id_map.h"
#include "mlpd/names.h"

namespace mlpd {

class MemoryBudget;

// The root kinds: MonoGCRootSource 0..16 (root_source_name()), and these for slots in no range.
inline constexpr uint8_t kRootEphemeron = 15, kRootToggleRef = 16, kRootFinalizer = 2;
inline constexpr uint8_t kRootUnknown = 255;
// "stack", "static", "gc_handle", ... (mlpd/enum_names.h), "unknown" for kRootUnknown.
std::string root_kind_name(uint8_t kind);

struct RootLabel {
  uint8_t kind = kRootUnknown;
  // What Mono registered ("Thread Stack", "Static Fields", ...), "" when unknown; for static fields
  // followed by ": CLASS" (the key is the class's vtable), for thread stacks, thread statics and
  // handle stacks by ": thread 0xID" and " (NAME)" when the thread has a name.
  std::string name;
  bool operator==(const RootLabel&) const = default;
};

struct HeapGraph {
  size_t index = 0;        // the heapshot's index in the file (as in HeapshotCollector)
  uint64_t thread = 0;
  uint64_t start_time = 0;
  int64_t time_ns = 0;     // from the first buffer's time_base
  bool complete = false;   // HEAP_END seen
  std::string error;       // non-empty: the heapshot could not be built (too large, out of memory)

  uint32_t objects = 0;
  uint64_t bytes = 0;
  std::vector<uint32_t> vtable;    // by object: index into `vtables`
  std::vector<uint64_t> vtables;   // distinct vtable pointers
  std::vector<uint32_t> size;      // by object; UINT32_MAX: see big_sizes
  std::vector<std::pair<uint32_t, uint64_t>> big_sizes;  // (object, size) of objects of 4 GiB or more
  std::vector<uint32_t> edge_begin;  // objects + 1 entries
  std::vector<uint32_t> edges;
  std::vector<uint32_t> edge_offset;  // by edge: the field's byte offset (only when asked for)

  struct Root {
    uint32_t object = 0;
    uint32_t label = 0;  // index into labels (set by HeapGraphCollector::finish)
    uint64_t slot = 0;   // the root slot's address
  };
  std::vector<Root> roots;  // sorted by object, one per (object, label)
  std::vector<RootLabel> labels;

  // What was dropped.
  uint64_t dangling_refs = 0;     // references to no object of the heapshot
  uint64_t dangling_roots = 0;    // roots to no object of the heapshot
  uint64_t duplicate_objects = 0; // objects listed again at an address already listed

  uint64_t object_size(uint32_t object) const {
    const uint32_t s = size[object];
    return s != UINT32_MAX ? s : big_size(object);
  }
  uint64_t big_size(uint32_t object) const;  // of an object whose `size` is UINT32_MAX
};

// A Visitor that builds the graphs of the heapshots `want` says yes to (by index), handing each to
// `done` when it closes (HEAP_END, another HEAP_START of its thread, the end of the file). `done`
// receives graphs whose roots are not labelled yet: label() names them with the root ranges (and
// class names) known so far, so a caller that keeps a graph labels it after finish(), when the whole
// file has been read; one that analyses each graph as it comes labels it at once.
class HeapGraphCollector final : public Visitor {
 public:
  struct Options {
    std::function<bool(size_t index)> want;        // which heapshots to build (null: all)
    std::function<void(HeapGraph&&)> done;          // receives each built graph
    // Only the last heapshot of the file (the last HEAP_START): a closed heapshot is kept unresolved
    // until the next one starts (then dropped) or the file ends (then resolved and handed to `done`).
    bool last_only = false;
    bool offsets = false;                           // keep the references' field offsets
    MemoryBudget* budget = nullptr;
  };
  explicit HeapGraphCollector(Options options) : opt_(std::move(options)) {}

  void on_buffer(const BufferInfo& b) override;
  void on_event(const Event& e, const EventInfo& info) override;
  void on_problem(const Problem& p) override { problems_.push_back(p); }

  // Closes the heapshots still open (handing them to `done`). Call once after decoding.
  void finish();
  // Labels the roots of `g` with the registered root ranges; `loose` (if given) receives the slots
  // that no range holds (labelled unknown, or counted with Mono's GC handles).
  void label(HeapGraph& g, std::vector<uint64_t>* loose = nullptr) const;

  const Names& names() const { return names_; }
  const std::vector<Problem>& problems() const { return problems_; }
  size_t heapshot_count() const { return count_; }

 private:
  struct Building;
  struct Range {
    uint64_t start = 0, end = 0;
    uint64_t registered = 0, unregistered = UINT64_MAX;  // times
    uint64_t key = 0;   // the registration's key: a vtable for static, a thread id for stack, ...
    uint8_t kind = 0;
    uint32_t name = 0;  // index into range_names_
  };
  void close(uint64_t thread);
  void resolve(Building& b, HeapGraph& g);
  template <typename Index>
  void resolve_edges(Building& b, HeapGraph& g, const Index& index);

  Options opt_;
  Names names_;
  std::vector<Problem> problems_;
  std::vector<Building*> open_;  // heapshots being built (few: one per collecting thread)
  size_t count_ = 0;
  bool have_start_ = false;
  uint64_t start_ = 0;
  std::vector<Range> ranges_;
  std::vector<std::string> range_names_;
  std::map<std::string, uint32_t, std::less<>> range_name_ids_;
  Building* pending_ = nullptr;  // last_only: the latest closed heapshot, not resolved yet
  bool finished_ = false;

 public:
  ~HeapGraphCollector() override;
  HeapGraphCollector(const HeapGraphCollector&) = delete;
  HeapGraphCollector& operator=(const HeapGraphCollector&) = delete;
};

// glibc's allocator while a heap graph is built and analysed (this object's scope). Its arrays (tens
// of MB each) are allocated and freed phase after phase; by default glibc gives each large one back to
// the kernel when it is freed (munmap, or a trim of its heap's top), and the next phase's arrays come
// back as fresh pages, each a page fault and a clear (179K faults, 0.4 s of system time on the 5.6M
// objects of retained_speed.sh, for a peak of 283 MB). In its scope arrays below 32 MiB come from the
// heap, which keeps what is freed (no trim, 64 MiB of padding at each growth) for the next phase.
class HeapGraphMalloc {
 public:
  HeapGraphMalloc();
  ~HeapGraphMalloc();
  HeapGraphMalloc(const HeapGraphMalloc&) = delete;
  HeapGraphMalloc& operator=(const HeapGraphMalloc&) = delete;
};

}  // namespace mlpd
