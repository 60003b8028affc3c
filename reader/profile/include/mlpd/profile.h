// The profile model: one pass over a decoded mlpd file builds everything the report and the exporters
// need, so no view decodes on its own. Memory is bounded by what is distinct in the file (methods,
// native symbols, stacks, threads, counters), never by the number of events: events are folded into
// aggregates as they are decoded and not stored.
//
// How a view uses the model
// -------------------------
//   Profile p;
//   BuildOptions o;                      // o.listener = &my_listener for time-ordered events
//   build_profile(input, p, o);          // one pass; problems end up in p.problems()
//
// * Frames (p.frames(), indexed by FrameId) are interned methods and native symbols with their final
//   names (resolved at the end of the pass, so forward references in Mono's files still get their
//   names); an undescribed method is named "[unknown method 0x...]", never dropped.
// * Stacks are nodes of one prefix tree (p.nodes(), indexed by NodeId). Node 0 is the root; its
//   children are one node per thread (frame == kNoFrame, depth 0); below them every node is one frame
//   (depth 1 = outermost). A stack is identified by its leaf node; p.stack(node, frames) lists its
//   frames root first. Parents always have smaller ids than their children.
// * Weights: p.weight(what, node) is the weight of the stack ending exactly at `node` (self weight)
//   for each What: cpu = sample hits, alloc = objects, alloc_bytes = bytes, calls = self time (ns),
//   exceptions = throws, monitor = contentions. A sampled/collapsed/pprof exporter iterates nodes with
//   p.weight(what, n) != 0 and writes p.stack(n). p.calls(node) has the call-tree numbers (calls,
//   self and inclusive time of that call path). Per-thread attribution: p.nodes()[n].thread.
// * Aggregates by method (p.methods(), indexed by FrameId), allocations by type, exceptions by type,
//   GC pauses, threads (names, lifetimes), counters (last values), heapshots, JIT counts.
// * Time-ordered events (trace spans, evented profiles, instants) come through a Listener passed in
//   BuildOptions: the builder calls it during its single pass with resolved TimelineEvents (thread
//   index, time, frame, stack node, ...), in file order, which within a thread is time order for
//   enter/leave. Frame *names* are final only after build_profile returns, so a listener keeps ids
//   and looks names up afterwards. Every enter gets exactly one leave: the builder closes calls left
//   open by exception unwinding or at the end of the file (TimelineEvent::code says which).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/input.h"

namespace mlpd::profile {

using FrameId = uint32_t;
using NodeId = uint32_t;
using ThreadIndex = uint32_t;
inline constexpr FrameId kNoFrame = 0xFFFFFFFFu;

// What a stack is weighted by (the exporters' --what).
enum class What : uint8_t { cpu, alloc, alloc_bytes, calls, exceptions, monitor };
inline constexpr size_t kWhatCount = 6;
// "cpu", "alloc", "alloc-bytes", "calls", "exceptions", "monitor".
std::string_view what_name(What w);
bool parse_what(std::string_view s, What& out);
// The profiler option that records it ("sample", "alloc", "calls", "exception", "monitor").
std::string_view what_option(What w);
// The unit of its weights: "samples", "objects", "bytes", "nanoseconds", "throws", "contentions".
std::string_view what_unit(What w);

enum class FrameKind : uint8_t {
  managed,  // a JIT-compiled (or AOT) managed method
  native,   // a native symbol (sample_usym) or an unresolved native address
  runtime,  // the runtime itself: Mono's native functions (mono_*, sgen_*, libmono*), managed wrappers
  special,  // a placeholder the model adds, e.g. "[no backtrace]"
};
std::string_view frame_kind_name(FrameKind k);  // "managed", "native", "runtime", "special"

struct Frame {
  FrameKind kind = FrameKind::managed;
  uint64_t address = 0;  // managed: the method pointer; native: the symbol (or unresolved) address
  std::string name;      // final after build_profile
  std::string module;    // native: the module when the name says it ("sym (libfoo.so+0x12)"), else ""
};

struct Node {
  NodeId parent = 0;
  FrameId frame = kNoFrame;  // kNoFrame for the root and the thread nodes
  ThreadIndex thread = 0;
  uint32_t depth = 0;        // 0 for the root and thread nodes, 1 for the outermost frame
};

// The call tree's numbers for one call path (node), from method enter/leave events.
struct CallStat {
  uint64_t calls = 0;
  uint64_t self_ns = 0;
  uint64_t total_ns = 0;  // inclusive time of this path; nested paths are separate nodes
};

// Per method (indexed by FrameId).
struct MethodStat {
  uint64_t samples_self = 0;   // hits with this frame as the leaf
  uint64_t samples_total = 0;  // hits with this frame anywhere on the stack (recursion counted once)
  uint64_t calls = 0;
  uint64_t self_ns = 0;
  uint64_t total_ns = 0;       // inclusive; time inside recursive calls counted once
  uint64_t alloc_objects = 0;  // allocations whose innermost frame is this method (allocation site)
  uint64_t alloc_bytes = 0;
  uint64_t throws = 0;         // throws whose innermost frame is this method
  uint64_t contentions = 0;    // monitor contentions whose innermost frame is this method
  uint64_t jit_code_bytes = 0; // managed: size of its JIT-compiled code (0 if not described)
};

struct TypeStat {  // allocations or exceptions by class
  std::string name;
  uint64_t count = 0;
  uint64_t bytes = 0;
};

struct ThreadInfo {
  uint64_t id = 0;
  std::string name;          // "" when the file never names it
  uint64_t first_time = 0;   // first and last event time seen for the thread
  uint64_t last_time = 0;
  bool started = false;      // a thread_start event was seen (start_time valid)
  bool ended = false;        // a thread_end event was seen (end_time valid)
  bool wrote = false;        // the file has buffers of its own (a thread known only from other
                             // threads' events -- sampled, named, started -- has none)
  uint64_t start_time = 0;
  uint64_t end_time = 0;
};

struct GcPause {  // one collection: GC_EVENT_START .. GC_EVENT_END on the same thread
  uint64_t start = 0;
  uint64_t end = 0;
  uint8_t generation = 0;
  ThreadIndex thread = 0;
};

struct CounterInfo {
  uint64_t index = 0;
  std::string name;     // "section/name" when it has a section name
  uint64_t section = 0, type = 0, unit = 0, variance = 0;
  uint64_t samples = 0;
  double last = 0;      // last value (deltas of Mono's counters summed, as mprof-report does)
  std::string last_string;
  bool is_string = false;
};

// A stretch of time in which the agent recorded events (issue 15: pause/resume, start-paused).
struct RecordedInterval {
  uint64_t start = 0, end = 0;  // ns, the file's clock
};

struct HeapshotInfo {
  uint64_t start = 0, end = 0;  // end 0 when the heapshot never ended
  uint64_t objects = 0, bytes = 0;
  ThreadIndex thread = 0;
};

// Events in time order per thread, for exporters that draw timelines.
enum class TimelineKind : uint8_t {
  enter,           // frame, node = the call path
  leave,           // frame, node; code: 0 leave, 1 exception leave, 2 closed by unwinding (a leave of an
                   //   outer frame came first), 3 closed at the end of the file
  sample,          // node = the sampled stack (thread = the sampled thread)
  alloc,           // node = the allocation's stack, value = bytes
  exception,       // node = the throw's stack
  monitor,         // node = the stack (0 without one), code = format::MONITOR_*
  gc,              // code = format::GC_EVENT_*, generation
  heapshot_start,
  heapshot_end,
  jit,             // frame = the compiled method
  counter,         // counter = index into Profile::counters(), number = its value after this sample
  thread_start,
  thread_end,
};

struct TimelineEvent {
  TimelineKind kind = TimelineKind::enter;
  uint8_t code = 0;
  uint8_t generation = 0;
  ThreadIndex thread = 0;
  uint64_t time = 0;  // ns, the file's clock (FileHeader::startup_ns is the same clock)
  FrameId frame = kNoFrame;
  NodeId node = 0;
  uint32_t counter = 0;
  uint64_t value = 0;
  double number = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  virtual void on_event(const TimelineEvent& e) = 0;
};

// A second reader of the build's one pass over the file (BuildOptions::tap; the report's "Held by",
// mlpd/heap_views.h): given every buffer and the events of the kinds it wants (never method
// enter/leave, nor the allocations, throws, clauses and monitor events the parallel build folds on its
// workers), in file order, whatever `jobs` -- the parallel build hands them over as it replays them --
// so that it needs no read of its own; whatever the time window. restart(): the build starts over from
// the start of the file (the parallel build gave up, the one-thread build reads it again): forget what
// was given.
class EventTap {
 public:
  virtual ~EventTap() = default;
  virtual void on_buffer(const BufferInfo& b) = 0;
  virtual void on_event(const Event& e) = 0;  // of the last buffer given
  virtual void restart() = 0;
  // Asked before each event (no call for the others: a file without heapshots costs a test an event).
  bool wants(EventKind k) const { return wants_[static_cast<size_t>(k)]; }

 protected:
  std::array<bool, kEventKindCount> wants_{};  // set by the tap
};

// One end of a time window (report/export --from/--to).
struct WindowBound {
  enum class Kind : uint8_t { none, offset, wall };
  Kind kind = Kind::none;
  // offset: ns after the first buffer's time_base (what `mlpd dump` prints as +SECONDS);
  // wall: ns after local midnight, on the day of the header's start time (a time of day earlier
  // than the start is taken to be on the next day).
  int64_t ns = 0;
};

struct BuildOptions {
  Listener* listener = nullptr;
  // Called now and then during the pass (at buffer starts) with the uncompressed bytes read so far.
  std::function<void(uint64_t bytes, uint64_t events)> progress;
  // Bounds against hostile files: calls nested deeper than this are counted but not given nodes;
  // past max_nodes distinct stack nodes, new stacks are folded into a "[too many stacks]" frame.
  uint32_t max_depth = 2048;
  uint32_t max_nodes = 1u << 24;
  size_t max_problems = 100;  // problems kept (all are counted)
  // A time window [from, to): when either is set, only what happened in it is counted -- sample
  // hits, allocations, throws, clauses, monitor events and collections by their time, calls by the
  // time of their leave (Profile::call_count() by the enter's) -- and only those reach the listener
  // (enter/leave always do). Everything else (names, threads, counters, heapshots) is read whole.
  WindowBound from, to;
  // The parallel build (issue 25; profile/parallel.cpp): the buffers are decoded, and each thread's
  // calls folded into its call tree, on `jobs` worker threads; everything else is replayed in file
  // order on the calling thread, so the model is the same bit for bit whatever `jobs` is. 1: the
  // one-thread build. Used only without a listener (its events come in file order) and when
  // `reopen` is set: a file that starts a thread id again after its end (a new thread for the same
  // id) in another thread's buffer, which only the file order tells, is read again from the start by
  // the one-thread build, from reopen(i), the i-th input opened afresh.
  unsigned jobs = 1;
  std::function<std::unique_ptr<Input>(size_t index)> reopen;
  EventTap* tap = nullptr;  // see EventTap
};

namespace detail {
// The Profile's fields (its private base): one aggregate, so that their number is known
// (tests/unit/reader/profile_fields_test.cpp checks Fields<Profile> against it).
struct ProfileFields {
  FileHeader header_;
  std::string program_;
  bool program_exe_ = false;  // program_ is an .exe (Mono's program), not a .NET program's .dll
  bool header_ok_ = false;
  DecodeSummary summary_;
  std::vector<Problem> problems_;
  uint64_t problem_count_ = 0;
  uint64_t first_time_ = 0, last_time_ = 0;
  uint64_t window_from_ = 0, window_to_ = UINT64_MAX;
  std::vector<Frame> frames_;
  std::vector<Node> nodes_;
  std::vector<ThreadInfo> threads_;
  std::array<std::vector<uint64_t>, kWhatCount> weights_;  // per node; each ends at its last non-zero weight
  std::array<uint64_t, kWhatCount> totals_ = {};
  std::array<bool, kWhatCount> present_ = {};
  std::vector<CallStat> call_stats_;
  std::vector<MethodStat> methods_;
  uint64_t sample_hits_ = 0, call_count_ = 0, alloc_objects_ = 0, alloc_bytes_ = 0, throws_ = 0;
  std::array<uint64_t, 4> monitor_ = {};
  uint64_t monitor_wait_ns_ = 0;
  uint64_t jit_methods_ = 0, jit_helpers_ = 0, jit_code_bytes_ = 0;
  uint64_t unmatched_leaves_ = 0, unclosed_calls_ = 0, clauses_ = 0;
  std::vector<TypeStat> alloc_types_, exception_types_;
  std::vector<GcPause> gc_pauses_;
  std::vector<uint64_t> gc_collections_;
  uint64_t gc_resizes_ = 0;
  std::vector<CounterInfo> counters_;
  std::vector<HeapshotInfo> heapshots_;
  uint64_t alloc_sample_interval_ = 0, alloc_samples_ = 0;
  bool pauses_recorded_ = false;
  std::vector<RecordedInterval> recorded_;
};
}  // namespace detail

class Profile : private detail::ProfileFields {
 public:
  Profile();
  ~Profile();
  Profile(Profile&&) noexcept;
  Profile& operator=(Profile&&) noexcept;
  Profile(const Profile&);  // a copy (IncrementalBuilder's snapshots)
  Profile& operator=(const Profile&);

  const FileHeader& header() const { return header_; }
  // The program: the first image loaded whose file name ends in ".exe" ("" when none).
  const std::string& program() const { return program_; }
  bool header_ok() const { return header_ok_; }
  const DecodeSummary& summary() const { return summary_; }
  const std::vector<Problem>& problems() const { return problems_; }  // first max_problems
  uint64_t problem_count() const { return problem_count_; }
  // The window actually used, in the file's clock (0 / UINT64_MAX when open).
  uint64_t window_from() const { return window_from_; }
  uint64_t window_to() const { return window_to_; }
  uint64_t first_time() const { return first_time_; }  // smallest / largest event time (0 if none)
  uint64_t last_time() const { return last_time_; }

  const std::vector<Frame>& frames() const { return frames_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ThreadInfo>& threads() const { return threads_; }
  // Frames of the stack ending at `node`, root (outermost) first; empty for the root/thread nodes.
  void stack(NodeId node, std::vector<FrameId>& root_first) const;

  bool has(What w) const { return totals_[static_cast<size_t>(w)] != 0 || present_[static_cast<size_t>(w)]; }
  uint64_t total(What w) const { return totals_[static_cast<size_t>(w)]; }  // sum of weight(w, *)
  uint64_t weight(What w, NodeId n) const {
    const auto& v = weights_[static_cast<size_t>(w)];
    return n < v.size() ? v[n] : 0;
  }
  CallStat calls(NodeId n) const { return n < call_stats_.size() ? call_stats_[n] : CallStat{}; }
  const std::vector<MethodStat>& methods() const { return methods_; }  // indexed by FrameId

  // Totals counted the way mprof-report counts them (calls = method_enter events, ...).
  uint64_t sample_hits() const { return sample_hits_; }
  uint64_t call_count() const { return call_count_; }
  uint64_t alloc_objects() const { return alloc_objects_; }
  uint64_t alloc_bytes() const { return alloc_bytes_; }
  uint64_t throws() const { return throws_; }
  uint64_t monitor_contentions() const { return monitor_[1]; }
  uint64_t monitor_done() const { return monitor_[2]; }
  uint64_t monitor_fails() const { return monitor_[3]; }
  uint64_t monitor_wait_ns() const { return monitor_wait_ns_; }
  uint64_t jit_methods() const { return jit_methods_; }
  uint64_t jit_helpers() const { return jit_helpers_; }
  uint64_t jit_code_bytes() const { return jit_code_bytes_; }
  uint64_t unmatched_leaves() const { return unmatched_leaves_; }  // leaves with no enter to match
  uint64_t unclosed_calls() const { return unclosed_calls_; }      // enters still open at the end
  uint64_t clauses() const { return clauses_; }

  const std::vector<TypeStat>& alloc_types() const { return alloc_types_; }        // most bytes first
  const std::vector<TypeStat>& exception_types() const { return exception_types_; }  // most first
  const std::vector<GcPause>& gc_pauses() const { return gc_pauses_; }
  const std::vector<uint64_t>& gc_collections() const { return gc_collections_; }  // per generation
  uint64_t gc_resizes() const { return gc_resizes_; }
  const std::vector<CounterInfo>& counters() const { return counters_; }
  const std::vector<HeapshotInfo>& heapshots() const { return heapshots_; }

  // Sampled allocations (the mlpd agent's alloc-sample=BYTES, read from the header's args): the mean
  // interval in bytes, 0 when every allocation was recorded. When non-zero, every allocation number
  // of the model (alloc_objects/bytes, weights, types, methods) is an ESTIMATE: a sample of `size`
  // bytes counts as 1/p objects and size/p bytes, p = 1 - exp(-size/BYTES) (its chance of being
  // sampled), rounded per sample. alloc_samples() is the number of allocation events in the file.
  uint64_t alloc_sample_interval() const { return alloc_sample_interval_; }
  uint64_t alloc_samples() const { return alloc_samples_; }
  // Pause/resume (files of the mlpd agent only: each periodic sync point is a pause or a resume; the
  // header's args say whether it started paused). Empty when the file was never paused: it recorded
  // from its start to its end. Otherwise the stretches that were recorded, in time order (an
  // interval still open at the end ends at last_time()).
  bool pauses_recorded() const { return pauses_recorded_; }
  const std::vector<RecordedInterval>& recorded_intervals() const { return recorded_; }

 private:
  friend class Builder;
  friend class ParallelReplay;  // profile/parallel.cpp
  template <class>
  friend struct Fields;
};

// The model's fields, each struct's listed once: Fields<T>::visit(x, v) calls v(name, field) for
// every field of x (a T, const or not), so that what takes models whole -- the check that the
// one-thread and the parallel build give the same model, field by field
// (tests/support/profile_fingerprint.h) -- has a field the day it is added.
// tests/unit/reader/profile_fields_test.cpp holds each list to its struct's number of fields.
template <class T>
struct Fields;
// Fields<T>::visit for x of type T or const T.
template <class S, class V>
void visit_fields(S& x, V&& v) {
  Fields<std::remove_const_t<S>>::visit(x, v);
}

template <>
struct Fields<FileHeader> {
  template <class S, class V>
  static void visit(S& h, V& v) {
    v("major", h.major), v("minor", h.minor), v("data_version", h.data_version), v("ptr_size", h.ptr_size);
    v("startup_ms", h.startup_ms), v("startup_ns", h.startup_ns), v("timer_overhead", h.timer_overhead);
    v("flags", h.flags), v("pid", h.pid), v("port", h.port), v("args", h.args), v("arch", h.arch), v("os", h.os);
  }
};
template <>
struct Fields<Problem> {
  template <class S, class V>
  static void visit(S& p, V& v) {
    v("offset", p.offset), v("buffer", p.buffer), v("message", p.message);
  }
};
template <>
struct Fields<DecodeSummary> {
  template <class S, class V>
  static void visit(S& d, V& v) {
    v("header_ok", d.header_ok), v("buffers", d.buffers), v("events", d.events), v("bytes", d.bytes);
    v("problems", d.problems), v("truncated", d.truncated);
  }
};
template <>
struct Fields<Frame> {
  template <class S, class V>
  static void visit(S& f, V& v) {
    v("kind", f.kind), v("address", f.address), v("name", f.name), v("module", f.module);
  }
};
template <>
struct Fields<Node> {
  template <class S, class V>
  static void visit(S& n, V& v) {
    v("parent", n.parent), v("frame", n.frame), v("thread", n.thread), v("depth", n.depth);
  }
};
template <>
struct Fields<CallStat> {
  template <class S, class V>
  static void visit(S& c, V& v) {
    v("calls", c.calls), v("self_ns", c.self_ns), v("total_ns", c.total_ns);
  }
};
template <>
struct Fields<MethodStat> {
  template <class S, class V>
  static void visit(S& m, V& v) {
    v("samples_self", m.samples_self), v("samples_total", m.samples_total), v("calls", m.calls);
    v("self_ns", m.self_ns), v("total_ns", m.total_ns), v("alloc_objects", m.alloc_objects);
    v("alloc_bytes", m.alloc_bytes), v("throws", m.throws), v("contentions", m.contentions);
    v("jit_code_bytes", m.jit_code_bytes);
  }
};
template <>
struct Fields<TypeStat> {
  template <class S, class V>
  static void visit(S& t, V& v) {
    v("name", t.name), v("count", t.count), v("bytes", t.bytes);
  }
};
template <>
struct Fields<ThreadInfo> {
  template <class S, class V>
  static void visit(S& t, V& v) {
    v("id", t.id), v("name", t.name), v("first_time", t.first_time), v("last_time", t.last_time);
    v("started", t.started), v("ended", t.ended), v("wrote", t.wrote), v("start_time", t.start_time);
    v("end_time", t.end_time);
  }
};
template <>
struct Fields<GcPause> {
  template <class S, class V>
  static void visit(S& g, V& v) {
    v("start", g.start), v("end", g.end), v("generation", g.generation), v("thread", g.thread);
  }
};
template <>
struct Fields<CounterInfo> {
  template <class S, class V>
  static void visit(S& c, V& v) {
    v("index", c.index), v("name", c.name), v("section", c.section), v("type", c.type), v("unit", c.unit);
    v("variance", c.variance), v("samples", c.samples), v("last", c.last), v("last_string", c.last_string);
    v("is_string", c.is_string);
  }
};
template <>
struct Fields<RecordedInterval> {
  template <class S, class V>
  static void visit(S& r, V& v) {
    v("start", r.start), v("end", r.end);
  }
};
template <>
struct Fields<HeapshotInfo> {
  template <class S, class V>
  static void visit(S& h, V& v) {
    v("start", h.start), v("end", h.end), v("objects", h.objects), v("bytes", h.bytes), v("thread", h.thread);
  }
};
template <>
struct Fields<detail::ProfileFields> {
  template <class S, class V>
  static void visit(S& p, V& v) {
    v("header", p.header_), v("program", p.program_), v("program_exe", p.program_exe_);
    v("header_ok", p.header_ok_), v("summary", p.summary_), v("problems", p.problems_);
    v("problem_count", p.problem_count_), v("first_time", p.first_time_), v("last_time", p.last_time_);
    v("window_from", p.window_from_), v("window_to", p.window_to_), v("frames", p.frames_);
    v("nodes", p.nodes_), v("threads", p.threads_), v("weights", p.weights_), v("totals", p.totals_);
    v("present", p.present_), v("call_stats", p.call_stats_), v("methods", p.methods_);
    v("sample_hits", p.sample_hits_), v("call_count", p.call_count_), v("alloc_objects", p.alloc_objects_);
    v("alloc_bytes", p.alloc_bytes_), v("throws", p.throws_), v("monitor", p.monitor_);
    v("monitor_wait_ns", p.monitor_wait_ns_), v("jit_methods", p.jit_methods_), v("jit_helpers", p.jit_helpers_);
    v("jit_code_bytes", p.jit_code_bytes_), v("unmatched_leaves", p.unmatched_leaves_);
    v("unclosed_calls", p.unclosed_calls_), v("clauses", p.clauses_), v("alloc_types", p.alloc_types_);
    v("exception_types", p.exception_types_), v("gc_pauses", p.gc_pauses_), v("gc_collections", p.gc_collections_);
    v("gc_resizes", p.gc_resizes_), v("counters", p.counters_), v("heapshots", p.heapshots_);
    v("alloc_sample_interval", p.alloc_sample_interval_), v("alloc_samples", p.alloc_samples_);
    v("pauses_recorded", p.pauses_recorded_), v("recorded", p.recorded_);
  }
};
// A Profile's fields are its private base's.
template <>
struct Fields<Profile> {
  template <class S, class V>
  static void visit(S& p, V& v) {
    using Base = std::conditional_t<std::is_const_v<S>, const detail::ProfileFields, detail::ProfileFields>;
    Fields<detail::ProfileFields>::visit(static_cast<Base&>(p), v);
  }
};

// Decodes all of `input` and builds `out`. Never throws for malformed input: problems are collected
// (as `mlpd verify` words them) and what could be read is kept. Returns false when there was any
// problem.
bool build_profile(Input& input, Profile& out, const BuildOptions& options = {});
// The same over several inputs read in order as one profile (the files of one rotated run): the
// header is the first file's; calls open at the end of one file go on in the next.
bool build_profile(const std::vector<Input*>& inputs, Profile& out, const BuildOptions& options = {});

class Builder;

// The model of a file that grows (mlpd top): feed() decodes the next part of the file into the same
// model, snapshot() gives the model of everything fed so far -- what build_profile() gives over those
// bytes -- and leaves the builder ready for the next part. A snapshot costs what the model holds
// (distinct methods, stacks, threads), not what was read: nothing is decoded twice. LiveFile
// (mlpd/live.h) cuts a growing file into such parts.
class IncrementalBuilder {
 public:
  explicit IncrementalBuilder(const BuildOptions& options = {});
  ~IncrementalBuilder();
  IncrementalBuilder(const IncrementalBuilder&) = delete;
  IncrementalBuilder& operator=(const IncrementalBuilder&) = delete;

  // Decodes `part`: the file header (read again each time; the first one stands), then the next
  // buffers of the file, whose first is the file's buffer number `first_buffer` (problems name it).
  // Offsets are `part`'s (an Input whose offsets are the file's). With `names_only`, the part's
  // events only describe things (methods, classes, symbols, threads...: what names the frames and
  // types of the other parts, before or after it); nothing in it is counted (mlpd top reads the
  // file's history that way while it counts only what is written after it started).
  void feed(Input& part, uint64_t first_buffer, bool names_only = false);
  // The first feed on `jobs` threads (the parallel build, BuildOptions::jobs): `in`, the file from its
  // start, whole buffers only (its end is not waited for), into the model as feed() would put it;
  // later feeds go on by one thread. False, with nothing fed (the model as new), when it is not the
  // first feed, jobs < 2, or the file needs the one-thread build (then feed it as before).
  bool feed_whole(Input& in, unsigned jobs);
  // The model so far, as build_profile() would give it over the bytes fed (calls still open are
  // closed in the snapshot only).
  void snapshot(Profile& out);
  uint64_t events() const { return all_.events; }
  uint64_t buffers() const { return all_.buffers; }
  uint64_t problem_count() const;

 private:
  BuildOptions options_;
  Profile live_;
  std::unique_ptr<Builder> builder_;
  DecodeSummary all_;
  std::unique_ptr<Input> no_input_;  // what finish() is told about the input (nothing)
};

// Per-method numbers (indexed by FrameId) over the threads whose `thread_mask` entry is true (all
// threads when thread_mask is null): what Profile::methods() holds for all threads.
std::vector<MethodStat> method_stats(const Profile& p, const std::vector<bool>* thread_mask);

// Convenience for views: the name of a thread as a report shows it ("name (0xID)" or "thread 0xID").
std::string thread_label(const ThreadInfo& t);

}  // namespace mlpd::profile
