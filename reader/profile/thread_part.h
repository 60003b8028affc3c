// One thread's part of the profile model, built on a worker of the parallel build (parallel.cpp; the
// profile model's private header). The worker decodes every buffer of one file thread and does what
// only that thread's events decide -- its open calls and the call tree of its enter/leave events, with
// their counts and times, and the allocations, throws, clauses and monitor events of the thread, with
// their stacks (backtrace or call path) -- on a tree of its own (local node ids, keyed by method
// address); their weights are sums per local node, their other tallies sums per buffer. Every
// other event (samples, whose stacks are named by what the file described before them and belong to
// the sampled thread, collections, heapshots, JIT, threads, counters...) is handed on, with the thread's call path at that point, to the one thread that replays
// the file in order into the Builder; so are the tree's new nodes, which the replay turns into the
// model's nodes (Builder::child) at the place in the file where the one-thread build makes them. That
// is why the model is the same bit for bit whatever the number of workers: nodes, frames, threads,
// problems and every tally are made in file order by the same code, and the worker's sums (calls,
// times) are added to the nodes they map to at the end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "call_fold.h"
#include "call_tree.h"
#include "mlpd/decoder.h"
#include "tally_fold.h"
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
  int64_t event = -1;   // -1: a new node; -2: a new "[no backtrace]" node (method 0); else the other
                        // event's position in the buffer (Mark::pos)
};

// One buffer read ahead: its bytes, then what a worker made of them.
struct PartJob {
  const uint8_t* bytes = nullptr;  // the buffer's data: in the pipeline's slot, or lent by a mapped input
  BufferInfo info;
  std::string cut;  // Input::truncation_warning() right after its bytes were read
  ThreadPart* part = nullptr;  // the part (file thread) it belongs to
  // Results.
  std::vector<PartRecord> records;
  std::vector<TimeSpan> spans;     // the folded events' times, between records (TimeSpan::before)
  TallySums tallies;               // its allocations', throws', clauses' and monitors' sums (tally_fold.h)
  uint64_t n = 0;                  // events decoded
  uint64_t buf_min = UINT64_MAX, buf_max = 0;  // times of its enter/leave events (Builder::flush_buffer_times)
  uint64_t call_count = 0;         // enters in the window
  uint64_t unmatched = 0;          // leaves with no enter
  bool calls_present = false;
  std::string message;             // the problem that ended its events, if any
  uint64_t problem_offset = 0;
  bool over_budget = false;        // the memory budget stopped it at budget_offset
  uint64_t budget_offset = 0;
};

// The window and bounds a part needs (Builder's, fixed before any buffer is handed out).
struct PartLimits {
  bool windowed = false;
  uint64_t from = 0, to = UINT64_MAX;
  uint32_t max_depth = 2048;
  uint64_t budget_limit = 0;  // 0: none; else the process's heap may not exceed it (MemoryBudget)
  uint64_t alloc_interval = 0;  // Profile::alloc_sample_interval_ (the agent's alloc-sample)
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
  // Weights per local node (What::alloc, alloc_bytes, exceptions, monitor), grown on first need.
  std::vector<uint64_t> alloc_w, alloc_bytes_w, exc_w, mon_w;
  CallStack calls;               // CallEntry::frame is unused (0); node is local
  uint64_t deep = 0;
  // The thread's state for allocations, throws and monitors (tally_fold.h; Builder::ThreadState's).
  ThreadTally tally;
  // A thread id started again after its end is a new thread (Builder::thread_start): when this part's
  // own buffers show the end and then the start, the part begins a new local root there and keeps the
  // earlier thread's open calls here (the replay checks that the one-thread rule agrees).
  struct Earlier {
    CallStack calls;
    uint64_t deep = 0;
    ThreadTally tally;
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
  // The call fold's hooks (call_fold.h) on this part: local nodes, the stats in the window.
  template <bool Windowed>
  struct CallHooks;
  // `run(calls, deep, hooks)` with the call fold's state in locals (LocalCalls; stored back at the
  // end): the stores into the stack and the stats might alias any member, which would then be loaded
  // and stored again at every event.
  template <bool Windowed, class Run>
  void with_fold(Fold& f, const PartLimits& lim, Run&& run);
  // One enter, leave or exception leave decoded as an Event.
  void fold_method(const Event& e, Fold& f, const PartLimits& lim);
  // A run of enter/leave (BufferDecoder::method_run), folded without an Event (a function of its own:
  // inlined into run(), its locals would compete there for registers).
  template <bool Windowed>
  [[gnu::noinline]] size_t method_run(BufferDecoder& dec, size_t max, Fold& f, const PartLimits& lim, uint64_t& offset,
                    uint64_t& first_time);
  uint32_t new_thread();  // a new thread of this id: a new local root (returned)
  // The tally fold's hooks (tally_fold.h) on this part: local nodes, the part's weights, no listener.
  struct TallyHooks;
  // An allocation, throw, clause or monitor event folded here (false: the replay does it).
  bool fold_other(const Event& e, PartJob& j, Fold& f, const PartLimits& lim, TimeSpan& span);
  uint32_t event_stack(const Event& e, Fold& f, const PartLimits& lim);  // Builder::event_stack's
  bool over_budget(const PartJob& j, const PartLimits& lim);
  uint64_t budget_seen_ = UINT64_MAX;  // what the part had made when it last looked at the budget
  uint64_t made_before_ = 0;           // records, spans and type sums of the buffers folded before
  static void add_weight(std::vector<uint64_t>& w, uint32_t n, uint64_t v) {
    if (n >= w.size()) w.resize(std::max<size_t>(n + 1, w.size() * 2), 0);
    w[n] += v;
  }

  struct FrameSlot {
    uint64_t method = 0;
    uint32_t frame = UINT32_MAX;
  };
  [[gnu::noinline]] uint32_t frame_slow(uint64_t method, FrameSlot& c);
  std::vector<FrameSlot> frame_cache_;
  std::unordered_map<uint64_t, uint32_t> frames_;  // method -> local frame id
  ChildTable table_;                               // (local parent, local frame) -> local node
  // Per local node: its last child and that child's method, side by side (the usual enter's lookup is
  // one load, not the child's id and then its node).
  struct LastChild {
    uint64_t method = 0;
    uint32_t node = 0;
  };
  std::vector<LastChild> last_child_;
  // The last backtrace's frames (those kept under max_depth) and the node each led to: the thread's
  // next backtrace mostly shares its outer frames (the same call path, another allocation site), and
  // those nodes are taken from here without a lookup each (event_stack).
  std::vector<uint64_t> bt_frames_;
  std::vector<uint32_t> bt_nodes_;
  uint32_t bt_root_ = 0;  // the local root they hang from
  uint64_t id_;
  uint32_t root_ = kLocalRoot;  // the current thread's local root
  bool ended_ = false;          // a thread_end of this id since the current thread began
};

}  // namespace mlpd::profile::detail
