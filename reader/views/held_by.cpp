// The report's "Held by" section built in the profile build's one pass (mlpd/heap_views.h, HeldByTap):
// the heap model's collector of the last heapshot fed by the build's tap, the graph labelled and
// analysed once the file has been read -- what `mlpd heapshots --retained` gives for that heapshot.
#include "mlpd/budget.h"
#include "mlpd/heap_views.h"

namespace mlpd::views {

HeldByTap::HeldByTap() {
  // What the heap graph's collector and its analysis read: the heap events, and the names they use
  // (classes through vtables, threads for their stacks: heap_graph.cpp's labels, retention.cpp).
  for (const EventKind k : {EventKind::heap_start, EventKind::heap_end, EventKind::heap_object, EventKind::heap_root,
                            EventKind::heap_root_register, EventKind::heap_root_unregister, EventKind::class_load,
                            EventKind::vtable_load, EventKind::thread_start, EventKind::thread_end,
                            EventKind::thread_name})
    wants_[static_cast<size_t>(k)] = true;
  restart();
}

HeldByTap::~HeldByTap() = default;

void HeldByTap::restart() {
  last_.reset();
  HeapGraphCollector::Options o;
  o.last_only = true;  // the others are never resolved
  o.budget = &process_budget();
  o.done = [this](HeapGraph&& g) { last_ = std::move(g); };
  collector_ = std::make_unique<HeapGraphCollector>(std::move(o));
}

void HeldByTap::on_buffer(const BufferInfo& b) {
  buffer_ = b;
  collector_->on_buffer(b);
}

void HeldByTap::on_event(const Event& e) {
  EventInfo info;
  info.buffer = &buffer_;
  collector_->on_event(e, info);
}

std::optional<report::HeldBySection> HeldByTap::section(size_t top) {
  HeapGraphMalloc tuned;
  collector_->finish();  // resolves the last heapshot and hands it to last_
  if (!last_) return std::nullopt;
  collector_->label(*last_);
  RetentionOptions ro;
  ro.fold_depth = 0;
  ro.budget = &process_budget();
  const RetentionAnalysis a(std::move(*last_), collector_->names(), ro);
  last_.reset();
  return held_by_section(a.result(), top);
}

}  // namespace mlpd::views
