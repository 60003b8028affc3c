// Chrome's Trace Event format (JSON object form), which Perfetto UI and chrome://tracing open:
// * one track per thread (tid = thread index + 1, named by "thread_name" metadata), holding the method
//   spans from enter/leave as complete ("X") events, written when the span closes (balanced per
//   thread by OpenFrames), and instant ("i") events for samples, throws and monitor contention;
// * a "GC" track with one span per collection (its pause) and a "Heapshots" track;
// * counters as counter tracks ("C"), and JIT compilations as instants on a "JIT" track.
// Times are microseconds (with ns decimals) since the file's first event. Events come through the
// model's listener during its single pass and are spilled to a temporary file in that order; write()
// streams them out with the names, so memory stays bounded whatever the number of events.
#include <algorithm>
#include <cstring>

#include "export_common.h"
#include "mlpd/format.h"
#include "mlpd/views.h"

namespace mlpd::views {

namespace {

using profile::FrameId;
using profile::Profile;
using profile::ThreadIndex;
using profile::TimelineEvent;
using profile::TimelineKind;

enum class Rec : uint8_t { span, sample, exception, monitor, counter, jit };

struct Record {  // 32 bytes in the spill
  uint64_t time;
  uint64_t value;  // span: duration (ns); counter: the double's bits
  uint32_t id;     // span, jit: frame; sample, exception, monitor: stack node; counter: counter index
  ThreadIndex thread;
  Rec kind;
  uint8_t code;
  uint8_t pad[6];
};
static_assert(sizeof(Record) == 32);

constexpr size_t kMaxStackArg = 64;  // frames of a sample's stack shown in its args

class TraceExporter final : public Exporter, public profile::Listener {
 public:
  explicit TraceExporter(const ExportOptions& o) : o_(o), spill_(sizeof(Record), 2048) {}

  profile::Listener* listener() override { return this; }

  void on_event(const TimelineEvent& e) override {
    switch (e.kind) {
      case TimelineKind::enter:
        if (e.frame != profile::kNoFrame) open_.open(e.thread, e.frame, e.time);
        break;
      case TimelineKind::leave:
        closed_.clear();
        open_.close(e.thread, e.frame, closed_);
        for (const auto& c : closed_) span(e.thread, c.frame, c.start, e.time);
        last_time_ = std::max(last_time_, e.time);
        break;
      case TimelineKind::sample: put(Rec::sample, e.thread, e.time, e.node, 0, 0); break;
      case TimelineKind::exception: put(Rec::exception, e.thread, e.time, e.node, 0, 0); break;
      case TimelineKind::monitor:
        if (e.code == format::MONITOR_CONTENTION) put(Rec::monitor, e.thread, e.time, e.node, 0, e.code);
        break;
      case TimelineKind::counter: {
        uint64_t bits;
        std::memcpy(&bits, &e.number, sizeof bits);
        put(Rec::counter, e.thread, e.time, e.counter, bits, 0);
        break;
      }
      case TimelineKind::jit:
        if (e.frame != profile::kNoFrame) put(Rec::jit, e.thread, e.time, e.frame, 0, 0);
        break;
      default: break;  // GC and heapshots come from the model's lists; allocations are not drawn
    }
    last_time_ = std::max(last_time_, e.time);
  }

  // Each record as write() spells it: a span or JIT event with its frame's name, a sample, throw or
  // contention with the names of up to kMaxStackArg frames of its stack.
  uint64_t estimate(const Profile& p) override {
    const auto& frames = p.frames();
    const auto& nodes = p.nodes();
    uint64_t names = 0;
    for (const auto& f : frames) names += f.name.size();
    const uint64_t mean = frames.empty() ? 16 : names / frames.size() + 4;
    uint64_t total = estimate_names(p) + (p.gc_pauses().size() + p.heapshots().size()) * 160;
    spill_.for_each(0, [&](const void* raw) {
      Record r;
      std::memcpy(&r, raw, sizeof r);
      total += 80;
      if (r.kind == Rec::sample || r.kind == Rec::exception || r.kind == Rec::monitor)
        total += (r.id < nodes.size() ? std::min<uint64_t>(nodes[r.id].depth, kMaxStackArg) + 1 : 1) * (mean + 2);
      else if (r.kind == Rec::span || r.kind == Rec::jit)
        total += r.id < frames.size() ? frames[r.id].name.size() : mean;
    });
    return total;
  }

  bool write(const Profile& p, std::FILE* out, std::string& error) override {
    // Calls still open at the end (the model closes them itself; this is a safety net).
    for (ThreadIndex th = 0; th < open_.threads(); ++th) {
      closed_.clear();
      open_.close_all(th, closed_);
      for (const auto& c : closed_) span(th, c.frame, c.start, std::max(last_time_, c.start));
    }
    base_ = p.first_time();
    const int64_t pid = p.header().pid > 0 ? p.header().pid : 1;
    pid_ = std::to_string(pid);
    const auto& threads = p.threads();
    gc_tid_ = std::to_string(threads.size() + 1);
    heap_tid_ = std::to_string(threads.size() + 2);
    jit_tid_ = std::to_string(threads.size() + 3);

    detail::OutText t(out);
    std::string& b = t.buf();
    cur_ = &b;
    b += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"mlpd\",\"file\":\"";
    detail::json_escape(b, o_.input_name);
    b += "\"},\"traceEvents\":[\n";
    std::string name = o_.input_name;
    if (auto s = name.find_last_of('/'); s != std::string::npos) name = name.substr(s + 1);
    meta("process_name", "0", name);
    for (ThreadIndex th = 0; th < threads.size(); ++th) {
      meta("thread_name", std::to_string(th + 1), profile::thread_label(threads[th]));
      meta_sort(std::to_string(th + 1), th + 1);
    }
    meta("thread_name", gc_tid_, "GC");
    meta_sort(gc_tid_, 0);
    meta("thread_name", heap_tid_, "Heapshots");
    meta("thread_name", jit_tid_, "JIT");

    for (const auto& g : p.gc_pauses()) {
      begin_event("X", gc_tid_, g.start);
      b += ",\"dur\":";
      detail::append_us(b, g.end > g.start ? g.end - g.start : 0);
      b += ",\"cat\":\"gc\",\"name\":\"GC gen ";
      detail::append_u64(b, g.generation);
      b += "\",\"args\":{\"thread\":\"";
      detail::json_escape(b, g.thread < threads.size() ? profile::thread_label(threads[g.thread]) : "");
      b += "\"}}";
      end_event(t);
    }
    for (const auto& h : p.heapshots()) {
      begin_event("X", heap_tid_, h.start);
      b += ",\"dur\":";
      detail::append_us(b, h.end > h.start ? h.end - h.start : 0);
      b += ",\"cat\":\"heapshot\",\"name\":\"heapshot\",\"args\":{\"objects\":";
      detail::append_u64(b, h.objects);
      b += ",\"bytes\":";
      detail::append_u64(b, h.bytes);
      b += "}}";
      end_event(t);
    }

    const auto& frames = p.frames();
    auto frame_name = [&](uint32_t f) -> std::string_view {
      if (f < frames.size() && !frames[f].name.empty()) return frames[f].name;
      return "[unknown frame]";
    };
    std::vector<FrameId> stack;
    auto leaf_and_stack = [&](uint32_t node) {
      stack.clear();
      if (node < p.nodes().size()) p.stack(node, stack);
    };
    const auto& counters = p.counters();
    spill_.for_each(0, [&](const void* raw) {
      Record r;
      std::memcpy(&r, raw, sizeof r);
      const std::string tid = std::to_string(r.thread + 1);
      switch (r.kind) {
        case Rec::span:
          begin_event("X", tid, r.time);
          b += ",\"dur\":";
          detail::append_us(b, r.value);
          b += ",\"cat\":\"call\",\"name\":\"";
          detail::json_escape(b, frame_name(r.id));
          b += "\"}";
          break;
        case Rec::sample:
        case Rec::exception:
        case Rec::monitor: {
          leaf_and_stack(r.id);
          begin_event("i", tid, r.time);
          b += ",\"s\":\"t\",\"cat\":\"";
          b += r.kind == Rec::sample ? "sample" : r.kind == Rec::exception ? "exception" : "monitor";
          b += "\",\"name\":\"";
          if (r.kind == Rec::exception) b += "throw: ";
          if (r.kind == Rec::monitor) b += "contention: ";
          detail::json_escape(b, stack.empty() ? std::string_view("[no frames]") : frame_name(stack.back()));
          b += "\",\"args\":{\"stack\":\"";
          // Leaf first, as debuggers show it.
          for (size_t k = 0; k < stack.size() && k < kMaxStackArg; ++k) {
            if (k) b += "\\n";
            detail::json_escape(b, frame_name(stack[stack.size() - 1 - k]));
          }
          if (stack.size() > kMaxStackArg) b += "\\n...";
          b += "\"}}";
          break;
        }
        case Rec::counter: {
          double v;
          std::memcpy(&v, &r.value, sizeof v);
          begin_event("C", "0", r.time);
          b += ",\"name\":\"";
          detail::json_escape(b, r.id < counters.size() ? counters[r.id].name : "counter " + std::to_string(r.id));
          b += "\",\"args\":{\"value\":";
          detail::append_double(b, v);
          b += "}}";
          break;
        }
        case Rec::jit:
          begin_event("i", jit_tid_, r.time);
          b += ",\"s\":\"t\",\"cat\":\"jit\",\"name\":\"";
          detail::json_escape(b, frame_name(r.id));
          b += "\"}";
          break;
      }
      end_event(t);
    });
    b += "\n]}\n";
    if (!spill_.ok()) {
      error = spill_.error();
      return false;
    }
    if (!t.flush()) {
      error = "write error";
      return false;
    }
    return true;
  }

 private:
  void put(Rec kind, ThreadIndex th, uint64_t time, uint32_t id, uint64_t value, uint8_t code) {
    Record r{};
    r.time = time;
    r.value = value;
    r.id = id;
    r.thread = th;
    r.kind = kind;
    r.code = code;
    spill_.add(0, &r);
  }
  void span(ThreadIndex th, FrameId f, uint64_t start, uint64_t end) {
    put(Rec::span, th, start, f, end > start ? end - start : 0, 0);
  }

  // Event prefix: {"ph":"X","pid":P,"tid":T,"ts":US  (the caller adds the rest and the closing brace).
  void begin_event(const char* ph, const std::string& tid, uint64_t time) {
    std::string& b = *cur_;
    if (events_++) b += ",\n";
    b += "{\"ph\":\"";
    b += ph;
    b += "\",\"pid\":";
    b += pid_;
    b += ",\"tid\":";
    b += tid;
    b += ",\"ts\":";
    detail::append_us(b, time > base_ ? time - base_ : 0);
  }
  void end_event(detail::OutText& t) { t.maybe_flush(); }

  void meta(const char* what, const std::string& tid, std::string_view name) {
    std::string& b = *cur_;
    if (events_++) b += ",\n";
    b += "{\"ph\":\"M\",\"pid\":";
    b += pid_;
    b += ",\"tid\":";
    b += tid;
    b += ",\"name\":\"";
    b += what;
    b += "\",\"args\":{\"name\":\"";
    detail::json_escape(b, name);
    b += "\"}}";
  }
  void meta_sort(const std::string& tid, uint64_t index) {
    std::string& b = *cur_;
    b += ",\n{\"ph\":\"M\",\"pid\":";
    b += pid_;
    b += ",\"tid\":";
    b += tid;
    b += ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":";
    detail::append_u64(b, index);
    b += "}}";
  }

  ExportOptions o_;
  detail::RecordSpill spill_;
  detail::OpenFrames open_;
  std::vector<detail::OpenFrames::Closed> closed_;
  uint64_t last_time_ = 0, base_ = 0;
  uint64_t events_ = 0;
  std::string pid_, gc_tid_, heap_tid_, jit_tid_;
  std::string* cur_ = nullptr;  // the output buffer, set by write()
};

}  // namespace

std::unique_ptr<Exporter> make_trace_exporter(const ExportOptions& o) { return std::make_unique<TraceExporter>(o); }

}  // namespace mlpd::views
