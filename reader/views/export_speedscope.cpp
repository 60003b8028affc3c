// speedscope's file format (https://www.speedscope.app/file-format-schema.json): one JSON object with
// the shared frame table and a list of profiles.
// * --what calls: one "evented" profile per thread, the method enters and leaves as open/close frame
//   events in nanoseconds, balanced per profile (OpenFrames closes what unwinding left open).
//   The events arrive through the model's listener during its single pass and are spilled per thread
//   to a temporary file (RecordSpill), so memory does not grow with the number of calls.
// * anything else: "sampled" profiles, one stack per weighted node of the model with its weight; one
//   profile for all threads, or one per thread with --threads.
#include <algorithm>
#include <cstring>

#include "export_common.h"
#include "mlpd/views.h"

namespace mlpd::views {

namespace {

using profile::FrameId;
using profile::NodeId;
using profile::Profile;
using profile::ThreadIndex;
using profile::TimelineEvent;
using profile::TimelineKind;
using profile::What;

struct FrameEvent {  // one open or close, 16 bytes in the spill
  uint64_t time;
  FrameId frame;
  uint32_t open;
};

std::string unit_of(What w) { return w == What::alloc_bytes ? "bytes" : w == What::calls ? "nanoseconds" : "none"; }

class SpeedscopeExporter final : public Exporter, public profile::Listener {
 public:
  explicit SpeedscopeExporter(const ExportOptions& o) : o_(o), spill_(sizeof(FrameEvent)) {}

  // Calls need the time-ordered events; without --what the file decides (calls only when it has no
  // samples), so the events are kept in case.
  profile::Listener* listener() override { return !o_.what_given || o_.what == What::calls ? this : nullptr; }

  void on_event(const TimelineEvent& e) override {
    if (e.kind == TimelineKind::enter) {
      if (e.frame == profile::kNoFrame) return;
      if (open_.open(e.thread, e.frame, e.time)) put(e.thread, e.time, e.frame, 1);
    } else if (e.kind == TimelineKind::leave) {
      closed_.clear();
      open_.close(e.thread, e.frame, closed_);
      for (const auto& c : closed_) put(e.thread, e.time, c.frame, 0);
    }
  }

  // Evented: an open or close object of about 40 bytes per event kept; sampled: the frame indexes.
  uint64_t estimate(const Profile& p) override {
    const What w = effective_what(p, o_);
    if (w != What::calls) return estimate_names(p) + estimate_stacks(p, w, false, 7, 30);
    uint64_t events = 0;
    for (ThreadIndex th = 0; th < spill_.keys(); ++th) events += spill_.count(th);
    return estimate_names(p) + events * 40;
  }

  bool write(const Profile& p, std::FILE* out, std::string& error) override {
    what_ = effective_what(p, o_);
    if (std::string m = missing_what_error(p, what_); !m.empty()) {
      error = m;
      return false;
    }
    detail::OutText t(out);
    std::string& b = t.buf();
    b += "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"mlpd\",\"name\":\"";
    detail::json_escape(b, title(p));
    b += "\",\"shared\":{\"frames\":[";
    const auto& frames = p.frames();
    for (size_t i = 0; i < frames.size(); ++i) {
      if (i) b.push_back(',');
      b += "{\"name\":\"";
      detail::json_escape(b, frames[i].name.empty() ? std::string("[unnamed]") : frames[i].name);
      b.push_back('"');
      if (!frames[i].module.empty()) {
        b += ",\"file\":\"";
        detail::json_escape(b, frames[i].module);
        b.push_back('"');
      }
      b.push_back('}');
      t.maybe_flush();
    }
    // A placeholder for weight on a node without frames (not expected from the model: kept, not dropped).
    no_frames_ = static_cast<uint32_t>(frames.size());
    b += frames.empty() ? "" : ",";
    b += "{\"name\":\"[no frames]\"}]},\"profiles\":[";
    const size_t active = what_ == What::calls ? write_evented(p, t) : write_sampled(p, t);
    b += "],\"activeProfileIndex\":";
    detail::append_u64(b, active);
    b += "}\n";
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
  std::string title(const Profile& p) const {
    std::string name = o_.input_name;
    const auto slash = name.find_last_of('/');
    if (slash != std::string::npos) name = name.substr(slash + 1);
    (void)p;
    return name + " (" + std::string(profile::what_name(what_)) + ")";
  }

  void put(ThreadIndex t, uint64_t time, FrameId f, uint32_t open) {
    const FrameEvent ev{time, f, open};
    spill_.add(t, &ev);
  }

  // One evented profile per thread that has calls; returns the index of the busiest one.
  size_t write_evented(const Profile& p, detail::OutText& t) {
    std::string& b = t.buf();
    const uint64_t base = p.first_time();
    size_t written = 0, active = 0;
    uint64_t most = 0;
    const size_t nthreads = std::max(spill_.keys(), open_.threads());
    for (ThreadIndex th = 0; th < nthreads; ++th) {
      if (spill_.count(th) == 0) continue;
      // Frames still open at the end (the model closes them; this is a safety net).
      closed_.clear();
      open_.close_all(th, closed_);
      uint64_t first = UINT64_MAX, last = 0;
      spill_.for_each(th, [&](const void* r) {
        FrameEvent ev;
        std::memcpy(&ev, r, sizeof ev);
        first = std::min(first, ev.time);
        last = std::max(last, ev.time);
      });
      if (written) b.push_back(',');
      b += "{\"type\":\"evented\",\"name\":\"";
      detail::json_escape(b, th < p.threads().size() ? profile::thread_label(p.threads()[th])
                                                      : "thread " + std::to_string(th));
      b += "\",\"unit\":\"nanoseconds\",\"startValue\":";
      detail::append_u64(b, rel(first, base));
      b += ",\"endValue\":";
      detail::append_u64(b, rel(last, base));
      b += ",\"events\":[";
      bool any = false;
      uint64_t prev = 0;  // events of a profile must not go back in time
      auto emit = [&](uint64_t time, FrameId f, bool open) {
        prev = std::max(prev, rel(time, base));
        if (any) b.push_back(',');
        any = true;
        b += open ? "{\"type\":\"O\",\"frame\":" : "{\"type\":\"C\",\"frame\":";
        detail::append_u64(b, f);
        b += ",\"at\":";
        detail::append_u64(b, prev);
        b.push_back('}');
        t.maybe_flush();
      };
      spill_.for_each(th, [&](const void* r) {
        FrameEvent ev;
        std::memcpy(&ev, r, sizeof ev);
        emit(ev.time, ev.frame, ev.open != 0);
      });
      for (const auto& c : closed_) emit(last, c.frame, false);
      b += "]}";
      if (spill_.count(th) > most) {
        most = spill_.count(th);
        active = written;
      }
      ++written;
      t.maybe_flush();
    }
    return active;
  }

  static uint64_t rel(uint64_t time, uint64_t base) { return time > base ? time - base : 0; }

  // Sampled profiles: one for all threads, or one per thread (--threads).
  size_t write_sampled(const Profile& p, detail::OutText& t) {
    std::string& b = t.buf();
    const auto& nodes = p.nodes();
    const std::string unit = unit_of(what_);
    // The weighted nodes, grouped by thread when there is one profile per thread.
    std::vector<NodeId> weighted;
    for (NodeId n = 0; n < nodes.size(); ++n)
      if (p.weight(what_, n) != 0) weighted.push_back(n);
    if (o_.threads)
      std::stable_sort(weighted.begin(), weighted.end(),
                       [&](NodeId x, NodeId y) { return nodes[x].thread < nodes[y].thread; });
    std::vector<FrameId> stack;
    size_t written = 0, active = 0;
    uint64_t most = 0;
    auto write_profile = [&](const std::string& name, size_t from, size_t to) {
      uint64_t total = 0;
      for (size_t i = from; i < to; ++i) total += p.weight(what_, weighted[i]);
      if (written) b.push_back(',');
      b += "{\"type\":\"sampled\",\"name\":\"";
      detail::json_escape(b, name);
      b += "\",\"unit\":\"" + unit + "\",\"startValue\":0,\"endValue\":";
      detail::append_u64(b, total);
      b += ",\"samples\":[";
      for (size_t i = from; i < to; ++i) {
        p.stack(weighted[i], stack);
        if (i != from) b.push_back(',');
        b.push_back('[');
        if (stack.empty()) detail::append_u64(b, no_frames_);
        for (size_t k = 0; k < stack.size(); ++k) {
          if (k) b.push_back(',');
          detail::append_u64(b, stack[k] == profile::kNoFrame ? no_frames_ : stack[k]);
        }
        b.push_back(']');
        t.maybe_flush();
      }
      b += "],\"weights\":[";
      for (size_t i = from; i < to; ++i) {
        if (i != from) b.push_back(',');
        detail::append_u64(b, p.weight(what_, weighted[i]));
        t.maybe_flush();
      }
      b += "]}";
      if (total > most || written == 0) {
        most = total;
        active = written;
      }
      ++written;
    };
    if (!o_.threads || weighted.empty()) {
      write_profile("all threads", 0, weighted.size());
      return active;
    }
    for (size_t from = 0; from < weighted.size();) {
      const ThreadIndex th = nodes[weighted[from]].thread;
      size_t to = from;
      while (to < weighted.size() && nodes[weighted[to]].thread == th) ++to;
      write_profile(th < p.threads().size() ? profile::thread_label(p.threads()[th]) : "thread " + std::to_string(th),
                    from, to);
      from = to;
    }
    return active;
  }

  ExportOptions o_;
  What what_ = What::cpu;
  detail::RecordSpill spill_;
  detail::OpenFrames open_;
  std::vector<detail::OpenFrames::Closed> closed_;
  uint32_t no_frames_ = 0;
};

}  // namespace

std::unique_ptr<Exporter> make_speedscope_exporter(const ExportOptions& o) {
  return std::make_unique<SpeedscopeExporter>(o);
}

}  // namespace mlpd::views
