// Heapshots of an mlpd file, per class, counted the way Mono's mprof-report counts them, and the
// difference between two of them ("what grew").
//
// A heapshot is what one buffer thread writes between HEAP_START and HEAP_END (FORMAT-NOTES §6): the
// heap_object events of that thread in between are its objects. An object whose references fill
// more than one chunk is written as several heap_object events; only the first carries the size,
// the continuation chunks carry size 0 and are not counted. Objects are grouped by class through
// their vtable (vtable_load → class_load). Names are resolved when the file has been read, so a
// vtable or class that Mono describes after the heapshot still gets its name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/id_map.h"
#include "mlpd/names.h"

namespace mlpd {

// One class in one heapshot.
struct HeapshotClass {
  uint64_t klass = 0;   // the class pointer; 0 when the vtable was never described
  uint64_t vtable = 0;  // only when klass == 0: the undescribed vtable (0 otherwise)
  // The class name; "unresolved class 0x..." when the class, "unresolved vtable 0x..." when the
  // vtable was never described.
  std::string name;
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

struct HeapshotSummary {
  size_t index = 0;          // 0-based, in the order the HEAP_START events occur in the file
  uint64_t thread = 0;       // the buffer thread that wrote HEAP_START
  uint64_t start_time = 0;   // absolute ns of HEAP_START
  uint64_t end_time = 0;     // absolute ns of HEAP_END (0 when incomplete)
  int64_t time_ns = 0;       // start_time - the first buffer's time_base (mprof-report's "at X secs")
  bool complete = false;     // HEAP_END seen (false: the file ends, or the thread starts another one)
  uint64_t objects = 0;      // heap_object events with size > 0
  uint64_t bytes = 0;        // sum of their sizes
  uint64_t roots = 0;        // (slot, object) pairs of the thread's heap_root events inside the shot
  std::vector<HeapshotClass> classes;  // bytes descending, then objects descending, then name

  double seconds() const { return static_cast<double>(time_ns) / 1e9; }
};

// A Visitor: pass it to decode(), then call finish() once and read heapshots().
class HeapshotCollector final : public Visitor {
 public:
  // Objects are only counted: decode_as() reads heap_object references without keeping them.
  static constexpr bool kKeepsHeapRefs = false;
  void on_buffer(const BufferInfo& b) override;
  void on_event(const Event& e, const EventInfo& info) override;
  void on_problem(const Problem& p) override { problems_.push_back(p); }

  // Resolves the class names and sorts the classes. Call after decoding, before heapshots().
  void finish();

  const std::vector<HeapshotSummary>& heapshots() const { return shots_; }
  const std::vector<Problem>& problems() const { return problems_; }
  // heap_object events with size > 0 that no open heapshot of their thread could take.
  uint64_t stray_objects() const { return stray_objects_; }
  const Names& names() const { return names_; }

 private:
  struct Count {
    uint64_t objects = 0;
    uint64_t bytes = 0;
  };
  // A heapshot being read: its objects counted by vtable. When it ends (HEAP_END, another HEAP_START of
  // its thread, the end of the file) the counts move into its `classes` (vtable only, no name yet), so
  // a heapshot costs nothing beyond its HeapshotSummary once closed (docs/fuzzing.md, "Limits").
  struct Open {
    size_t shot = 0;
    IdMap<Count> counts;
  };
  friend class HeapshotTally;  // decode_heapshots(): applies what its workers counted per buffer
  void close(uint32_t slot);
  void start_shot(uint64_t time);  // HEAP_START on the current buffer's thread
  void end_shot(uint64_t time);    // HEAP_END on it

  Names names_;
  std::vector<HeapshotSummary> shots_;
  IdMap<uint32_t> open_by_thread_;  // thread → 1 + its slot in open_; 0 = none open
  std::vector<Open> open_;          // slots of open heapshots, reused through free_
  std::vector<uint32_t> free_;
  // The current buffer's thread (every event of a buffer is its thread's) and 1 + its open slot (0 =
  // none): looked up once per buffer, changed only by that thread's HEAP_START and HEAP_END.
  uint64_t thread_ = 0;
  uint32_t cur_ = 0;
  // The last class counted in the open heapshot of the current thread (objects of a class often lie
  // together in the heap walk); `last_count_` points into that heapshot's counts, and is dropped when
  // another class is inserted there or the heapshot is closed.
  uint64_t last_vtable_ = 0;
  Count* last_count_ = nullptr;
  std::vector<Problem> problems_;
  bool have_start_ = false;
  uint64_t start_ = 0;
  uint64_t stray_objects_ = 0;
  bool finished_ = false;
};

// decode(in, c, opt) on `jobs` threads (0: one per core): the buffers are read in order, each decoded on a
// worker that counts its heap events (per stretch between its HEAP_START and HEAP_END events: objects by
// vtable, bytes, roots), and what each buffer holds is applied to `c` in file order, with the events
// Names describes decoded again there: heapshots, their indices, stray objects and problems are what
// decode() gives, whatever `jobs`. One job, or a gzip input, decodes on one thread.
DecodeSummary decode_heapshots(Input& in, HeapshotCollector& c, const DecodeOptions& opt, unsigned jobs);

// One class's change between two heapshots (classes are matched by class pointer, or by vtable for
// the unresolved ones).
struct HeapshotClassDelta {
  uint64_t klass = 0;
  uint64_t vtable = 0;
  std::string name;
  int64_t objects = 0;  // to - from
  int64_t bytes = 0;
  uint64_t from_objects = 0, from_bytes = 0;
  uint64_t to_objects = 0, to_bytes = 0;
};

struct HeapshotDiff {
  size_t from = 0, to = 0;  // heapshot indices
  int64_t objects = 0;      // total deltas
  int64_t bytes = 0;
  // Every class present in either heapshot (unchanged ones too), the largest byte growth first:
  // bytes delta descending, then objects delta descending, then name.
  std::vector<HeapshotClassDelta> classes;
};

// `by_name`: match classes by name rather than by class pointer (heapshots of two different processes,
// where the same class has another address; classes of the same name in different images merge).
HeapshotDiff diff_heapshots(const HeapshotSummary& from, const HeapshotSummary& to, bool by_name = false);

}  // namespace mlpd
