// decode_heapshots(): HeapshotCollector's decoding on every core (issue 25). A worker decodes a buffer
// and counts its heap events; the reading thread applies the counts in file order (BufferPipeline).
#include <algorithm>
#include <thread>
#include <vector>

#include "mlpd/decode_loop.h"
#include "mlpd/heap/heapshots.h"

namespace mlpd {

// What one buffer holds for the heapshots, in its order: stretches of heap_object/heap_root events (their
// counts) between its HEAP_START and HEAP_END events, and where the events Names describes start.
class HeapshotTally {
 public:
  struct VtableCount {
    uint64_t vtable = 0;
    uint64_t objects = 0;
    uint64_t bytes = 0;
  };
  struct Item {
    enum Kind : uint8_t { stretch, start, end } kind = stretch;
    uint64_t time = 0;                          // start, end: the event's time
    uint64_t objects = 0, bytes = 0, roots = 0;  // stretch: heap_object events with a size, and roots
    size_t first = 0, last = 0;                 // stretch: its classes, counts_[first, last)
  };

  // On a worker: decodes the buffer (its events and the problem that ends them, as decode() does).
  void count(const PipelineSlot& b) {
    items_.clear();
    counts_.clear();
    names_.clear();
    message_.clear();
    BufferDecoder dec(b.info.header, b.bytes, b.info.offset + format::kBufferHeaderSize);
    dec.keep_heap_refs(false);  // only counted
    Event e;
    uint64_t offset = 0;
    uint64_t n = 0;
    Item cur;
    HeapshotCollector::Count* last = nullptr;
    uint64_t last_vtable = 0;
    for (;;) {
      const BufferDecoder::Mark mark = dec.mark();
      if (!dec.next(e, message_, offset)) break;
      ++n;
      switch (e.kind) {
        case EventKind::heap_object:
          if (e.size == 0) break;  // a continuation chunk
          ++cur.objects;
          cur.bytes += e.size;
          if (!last || last_vtable != e.ptr) {
            last = &open_[e.ptr];
            last_vtable = e.ptr;
          }
          ++last->objects;
          last->bytes += e.size;
          break;
        case EventKind::heap_root:
          cur.roots += e.roots.size();
          break;
        case EventKind::heap_start:
        case EventKind::heap_end: {
          flush(cur);
          last = nullptr;
          Item boundary;
          boundary.kind = e.kind == EventKind::heap_start ? Item::start : Item::end;
          boundary.time = e.time;
          items_.push_back(boundary);
          break;
        }
        default:
          if (Names::observes(e.kind)) names_.push_back(mark);
          break;
      }
    }
    flush(cur);
    events_ = n;
    problem_offset_ = dec.problem_offset();
  }

  // How the buffer's decoding ended.
  void result(PipelineResult& r) {
    r.events = events_;
    r.message.swap(message_);
    r.problem_offset = problem_offset_;
  }

  // On the reading thread, in file order, after c.on_buffer(b.info).
  void apply(const PipelineSlot& b, HeapshotCollector& c) const {
    if (!names_.empty()) {
      BufferDecoder dec(b.info.header, b.bytes, b.info.offset + format::kBufferHeaderSize);
      Event e;
      std::string message;
      uint64_t offset = 0;
      for (const BufferDecoder::Mark& m : names_) {
        dec.resume(m);
        if (dec.next(e, message, offset)) c.names_.observe(e);
      }
    }
    for (const Item& it : items_) {
      switch (it.kind) {
        case Item::start:
          c.start_shot(it.time);
          break;
        case Item::end:
          c.end_shot(it.time);
          break;
        case Item::stretch: {
          if (c.cur_ == 0) {  // no open heapshot on this thread: its objects are strays, its roots nobody's
            c.stray_objects_ += it.objects;
            break;
          }
          HeapshotCollector::Open& o = c.open_[c.cur_ - 1];
          HeapshotSummary& s = c.shots_[o.shot];
          s.objects += it.objects;
          s.bytes += it.bytes;
          s.roots += it.roots;
          for (size_t i = it.first; i < it.last; ++i) {
            HeapshotCollector::Count& k = o.counts[counts_[i].vtable];
            k.objects += counts_[i].objects;
            k.bytes += counts_[i].bytes;
          }
          c.last_count_ = nullptr;  // counts may have moved
          break;
        }
      }
    }
  }

 private:
  // Ends the stretch `cur` (kept when it counted anything) and starts the next.
  void flush(Item& cur) {
    if (cur.objects != 0 || cur.roots != 0) {
      cur.first = counts_.size();
      open_.for_each([this](uint64_t vtable, const HeapshotCollector::Count& k) {
        counts_.push_back({vtable, k.objects, k.bytes});
      });
      cur.last = counts_.size();
      items_.push_back(cur);
    }
    if (!open_.empty()) open_.clear();
    cur = Item{};
  }

  std::vector<Item> items_;
  std::vector<VtableCount> counts_;
  std::vector<BufferDecoder::Mark> names_;  // the events Names::observes, in order
  IdMap<HeapshotCollector::Count> open_;    // the current stretch's classes
  uint64_t events_ = 0;                      // events decoded, and the problem that ended them
  std::string message_;
  uint64_t problem_offset_ = 0;
};

namespace {

class HeapshotStage final : public PipelineStage {
 public:
  HeapshotStage(HeapshotCollector& c, size_t slots) : c_(c), tallies_(slots) {}
  void work(PipelineSlot& s, unsigned) override { tallies_[s.index].count(s); }
  void use(PipelineSlot& s, PipelineResult& r) override {
    HeapshotTally& t = tallies_[s.index];
    t.apply(s, c_);
    t.result(r);
  }

 private:
  HeapshotCollector& c_;
  std::vector<HeapshotTally> tallies_;
};

}  // namespace

DecodeSummary decode_heapshots(Input& in, HeapshotCollector& c, const DecodeOptions& opt, unsigned jobs) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  if (jobs < 2 || in.compressed()) return decode_as(in, c, opt);
  HeapshotStage stage(c, parallel_slots(jobs));
  BufferPipeline p(in, c, opt);
  if (!p.start()) return p.finish();
  if (p.run(stage, jobs, parallel_slots(jobs), true) == BufferPipeline::Run::kNoWorkers) return decode_rest(p, c, opt);
  return p.finish();
}

}  // namespace mlpd
