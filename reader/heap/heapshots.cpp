#include "mlpd/heap/heapshots.h"
#include "mlpd/hex.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>
#include <utility>

namespace mlpd {

void HeapshotCollector::on_buffer(const BufferInfo& b) {
  // mprof-report's "startup": the time_base of the first buffer of the file.
  if (!have_start_) {
    have_start_ = true;
    start_ = b.header.time_base;
  }
  thread_ = b.header.thread_id;
  const uint32_t* slot = open_by_thread_.find(thread_);
  cur_ = slot ? *slot : 0;
  last_count_ = nullptr;
}

void HeapshotCollector::close(uint32_t slot) {
  Open& o = open_[slot];
  std::vector<HeapshotClass>& raw = shots_[o.shot].classes;
  raw.reserve(o.counts.size());
  o.counts.for_each([&raw](uint64_t vtable, const Count& c) {
    HeapshotClass k;
    k.vtable = vtable;
    k.objects = c.objects;
    k.bytes = c.bytes;
    raw.push_back(std::move(k));
  });
  o.counts = {};
  free_.push_back(slot);
  last_count_ = nullptr;
}

void HeapshotCollector::start_shot(uint64_t time) {
  // A second HEAP_START on the same thread replaces the open heapshot (which stays incomplete),
  // as mprof-report's thread->current_heap_shot does.
  uint32_t& slot = open_by_thread_[thread_];
  if (slot != 0) close(slot - 1);
  HeapshotSummary s;
  s.index = shots_.size();
  s.thread = thread_;
  s.start_time = time;
  s.time_ns = static_cast<int64_t>(time - start_);
  if (free_.empty()) {
    free_.push_back(static_cast<uint32_t>(open_.size()));
    open_.emplace_back();
  }
  slot = free_.back() + 1;
  free_.pop_back();
  open_[slot - 1].shot = shots_.size();
  shots_.push_back(std::move(s));
  cur_ = slot;
}

void HeapshotCollector::end_shot(uint64_t time) {
  if (cur_ == 0) return;
  HeapshotSummary& s = shots_[open_[cur_ - 1].shot];
  s.complete = true;
  s.end_time = time;
  close(cur_ - 1);
  *open_by_thread_.find(thread_) = 0;
  cur_ = 0;
}

void HeapshotCollector::on_event(const Event& e, const EventInfo&) {
  switch (e.kind) {
    case EventKind::heap_object: {
      if (e.size == 0) break;  // a continuation chunk of an object already counted
      if (cur_ == 0) {
        ++stray_objects_;
        break;
      }
      Open& o = open_[cur_ - 1];
      HeapshotSummary& s = shots_[o.shot];
      ++s.objects;
      s.bytes += e.size;
      if (!last_count_ || last_vtable_ != e.ptr) {
        last_count_ = &o.counts[e.ptr];
        last_vtable_ = e.ptr;
      }
      ++last_count_->objects;
      last_count_->bytes += e.size;
      break;
    }
    case EventKind::heap_root:
      if (cur_ != 0) shots_[open_[cur_ - 1].shot].roots += e.roots.size();
      break;
    case EventKind::heap_start:
      start_shot(e.time);
      break;
    case EventKind::heap_end:
      end_shot(e.time);
      break;
    default:
      if (Names::observes(e.kind)) names_.observe(e);
      break;
  }
}

void HeapshotCollector::finish() {
  if (finished_) return;
  finished_ = true;
  open_by_thread_.for_each([this](uint64_t, uint32_t slot) {
    if (slot != 0) close(slot - 1);
  });
  open_by_thread_.clear();
  open_ = {};
  free_ = {};
  for (HeapshotSummary& shot : shots_) {
    // Several vtables (one per domain) can share a class: merge them, keyed by class pointer, or
    // by vtable when the vtable was never described.
    std::map<std::pair<uint64_t, uint64_t>, HeapshotClass> merged;
    for (const HeapshotClass& count : shot.classes) {
      const uint64_t vtable = count.vtable;
      uint64_t klass = 0;
      const bool known = names_.vtable_class(vtable, klass);
      HeapshotClass& c = merged[known ? std::pair{klass, uint64_t{0}} : std::pair{uint64_t{0}, vtable}];
      if (c.name.empty()) {
        c.klass = known ? klass : 0;
        c.vtable = known ? 0 : vtable;
        if (!known) {
          c.name = "unresolved vtable " + hex(vtable);
        } else if (const std::string* n = names_.class_name(klass)) {
          c.name = *n;
        } else {
          c.name = "unresolved class " + hex(klass);
        }
      }
      c.objects += count.objects;
      c.bytes += count.bytes;
    }
    std::vector<HeapshotClass> out;
    out.reserve(merged.size());
    for (auto& [key, c] : merged) out.push_back(std::move(c));
    std::sort(out.begin(), out.end(), [](const HeapshotClass& a, const HeapshotClass& b) {
      if (a.bytes != b.bytes) return a.bytes > b.bytes;
      if (a.objects != b.objects) return a.objects > b.objects;
      if (a.name != b.name) return a.name < b.name;
      return std::pair{a.klass, a.vtable} < std::pair{b.klass, b.vtable};
    });
    shot.classes = std::move(out);
  }
}

HeapshotDiff diff_heapshots(const HeapshotSummary& from, const HeapshotSummary& to, bool by_name) {
  HeapshotDiff d;
  d.from = from.index;
  d.to = to.index;
  d.objects = static_cast<int64_t>(to.objects - from.objects);
  d.bytes = static_cast<int64_t>(to.bytes - from.bytes);
  std::map<std::tuple<std::string, uint64_t, uint64_t>, HeapshotClassDelta> m;
  auto entry = [&m, by_name](const HeapshotClass& c) -> HeapshotClassDelta& {
    HeapshotClassDelta& x = by_name ? m[{c.name, 0, 0}] : m[{std::string(), c.klass, c.vtable}];
    if (x.name.empty()) {
      x.klass = c.klass;
      x.vtable = c.vtable;
      x.name = c.name;
    }
    return x;
  };
  for (const HeapshotClass& c : from.classes) {
    HeapshotClassDelta& x = entry(c);
    x.from_objects += c.objects;
    x.from_bytes += c.bytes;
  }
  for (const HeapshotClass& c : to.classes) {
    HeapshotClassDelta& x = entry(c);
    x.to_objects += c.objects;
    x.to_bytes += c.bytes;
  }
  d.classes.reserve(m.size());
  for (auto& [key, x] : m) {
    x.objects = static_cast<int64_t>(x.to_objects - x.from_objects);
    x.bytes = static_cast<int64_t>(x.to_bytes - x.from_bytes);
    d.classes.push_back(std::move(x));
  }
  std::sort(d.classes.begin(), d.classes.end(), [](const HeapshotClassDelta& a, const HeapshotClassDelta& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.objects != b.objects) return a.objects > b.objects;
    if (a.name != b.name) return a.name < b.name;
    return std::pair{a.klass, a.vtable} < std::pair{b.klass, b.vtable};
  });
  return d;
}

}  // namespace mlpd
