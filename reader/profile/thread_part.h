// One thread's part of the profile model, built on a worker of the parallel build (parallel.cpp; the
// profile model's private header). The worker decodes every buffer of one file thread and does what
// only that thread's events decide -- its open calls and the call tree of its enter/leave events, with
// their counts and times -- on a tree of its own (local node ids, keyed by method address). Every
// other event is handed on, with the thread's call path at that point, to the one thread that replays
// the file in order into the Builder; so are the tree's new nodes, which the replay turns into the
// model's nodes (Builder::child) at the place in the file where the one-thread build makes them. That
// is why the model is the same bit for bit whatever the number of workers: nodes, frames, threads,
// problems and every tally are made in file order by the same code, and the worker's sums (calls,
// times) are added to the nodes they map to at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "call_tree.h"
#include "mlpd/decoder.h"
#include "mlpd/profile.h"

namespace mlpd::profile::detail {

class ThreadPart;

// What a worker found in one buffer, in event order: new tree nodes and the events it did not fold
// (where they are in the buffer: the replay decodes them again, so a record is 32 bytes whatever the
// event holds).
struct PartRecord {
  uint32_t local = 0;   // new node: its local id; other event: the thread's current call path (0: none)
  uint32_t parent = 0;  // new node: the local parent (a root: the thread's); other event: 0, or for a
                        // thread_start that began a new thread of this id, the new local root
  uint64_t method = 0;  // new node: its method; other event: the time chain before it (Mark::last_time)
  int64_t last_method = 0;  // other event: the method chain before it
  int64_t event = -1;   // -1: a new node; else the other event's position in the buffer (Mark::pos)
};

// One buffer read ahead: its bytes, then what a worker made of them.
struct PartJob {
  std::unique_ptr<uint8_t[]> data;
  size_t capacity = 0;
  BufferInfo info;
  std::string cut;  // Input::truncation_warning() right after its bytes were read
  ThreadPart* part = nullptr;  // the part (file thread) it belongs to
  // Results.
  std::vector<PartRecord> records;
  uint64_t n = 0;                  // events decoded
  uint64_t buf_min = UINT64_MAX, buf_max = 0;  // times of its enter/leave events (Builder::flush_buffer_times)
  uint64_t call_count = 0;         // enters in the window
  uint64_t unmatched = 0;          // leaves with no enter
  bool calls_present = false;
  std::string message;             // the problem that ended its events, if any
  uint64_t problem_offset = 0;
  bool over_budget = false;        // the memory budget stopped it at budget_offset
  uint64_t budget_offset = 0;
  bool done = false;
};

// The window and bounds a part needs (Builder's, fixed before any buffer is handed out).
struct PartLimits {
  bool windowed = false;
  uint64_t from = 0, to = UINT64_MAX;
  uint32_t max_depth = 2048;
  uint64_t budget_limit = 0;  // 0: none; else the process's heap may not exceed it (MemoryBudget)
  bool in_window(uint64_t t) const { return !windowed || (t >= from && t < to); }
};

class ThreadPart {
 public:
  explicit ThreadPart(uint64_t thread_id);
  // Decodes job's buffer (on a worker): enter/leave into this part, the rest into job's records.
  void run(PartJob& j, const PartLimits& lim);

  // Local node ids: 0 is none, kLocalRoot the thread's root (ChildTable keys are never 0).
  static constexpr uint32_t kLocalRoot = 1;
  // Local node -> model node, filled by the replay.
  std::vector<NodeId> map;
  struct LocalNode {
    uint32_t parent;
    uint64_t method;
  };
  std::vector<LocalNode> nodes;  // index 0: unused, kLocalRoot: the root
  std::vector<CallStat> stats;   // per local node
  CallStack calls;               // CallEntry::frame is unused (0); node is local
  uint64_t deep = 0;
  // A thread id started again after its end is a new thread (Builder::thread_start): when this part's
  // own buffers show the end and then the start, the part begins a new local root there and keeps the
  // earlier thread's open calls here (the replay checks that the one-thread rule agrees).
  struct Earlier {
    CallStack calls;
    uint64_t deep = 0;
  };
  std::vector<Earlier> earlier;

 private:
  // What run() counts of one buffer (kept in registers; copied into the job at its end).
  struct Fold {
    uint64_t call_count = 0, unmatched = 0;
    bool present = false;
    std::vector<PartRecord>* records = nullptr;
  };
  uint32_t local_frame(uint64_t method);
  uint32_t child(uint32_t parent, uint64_t method, Fold& f);
  [[gnu::noinline]] uint32_t child_slow(uint32_t parent, uint32_t frame, uint64_t method, Fold& f);
  void enter(uint64_t time, uint64_t method, Fold& f, const PartLimits& lim);
  void leave(uint64_t time, uint64_t method, Fold& f, const PartLimits& lim);
  void close_top(uint64_t time, const PartLimits& lim);
  uint32_t new_thread();  // a new thread of this id: a new local root (returned)

  struct FrameSlot {
    uint64_t method = 0;
    uint32_t frame = UINT32_MAX;
  };
  [[gnu::noinline]] uint32_t frame_slow(uint64_t method, FrameSlot& c);
  std::vector<FrameSlot> frame_cache_;
  std::unordered_map<uint64_t, uint32_t> frames_;  // method -> local frame id
  ChildTable table_;                               // (local parent, local frame) -> local node
  std::vector<uint32_t> last_child_;
  uint64_t id_;
  uint32_t root_ = kLocalRoot;  // the current thread's local root
  bool ended_ = false;          // a thread_end of this id since the current thread began
};

}  // namespace mlpd::profile::detail
