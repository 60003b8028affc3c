#include "mlpd/totals.h"

#include "mlpd/format.h"

namespace mlpd {

void Totals::add(const Event& e, const BufferInfo& buffer) {
  const uint64_t thread = buffer.header.thread_id;
  switch (e.kind) {
    case EventKind::method_enter: ++calls; break;
    case EventKind::method_jit: ++jit_methods; break;
    case EventKind::jit_helper: ++jit_helpers; break;
    case EventKind::sample_hit: ++sample_hits; break;
    case EventKind::alloc:
      ++alloc_objects;
      alloc_bytes += e.size;
      break;
    case EventKind::exception_throw: ++throws; break;
    case EventKind::exception_clause:
      if (e.code < clauses.size()) ++clauses[e.code];
      break;
    case EventKind::gc_resize: ++gc_resizes; break;
    case EventKind::gc_move: gc_moved_objects += e.objects.size() / 2; break;
    case EventKind::gc_event:
      if (e.code == format::GC_EVENT_START && e.generation < gc_collections.size()) ++gc_collections[e.generation];
      break;
    case EventKind::gc_handle_created:
      if (e.handle_type < handles_created.size()) ++handles_created[e.handle_type];
      break;
    case EventKind::gc_handle_destroyed:
      if (e.handle_type < handles_destroyed.size()) ++handles_destroyed[e.handle_type];
      break;
    case EventKind::monitor:
      if (e.code < monitor.size()) ++monitor[e.code];
      break;
    case EventKind::heap_start:
      // Like mprof-report, a heapshot belongs to the thread that started it.
      open_heapshot_[thread] = heapshots.size() + 1;
      heapshots.push_back({0, 0, thread});
      break;
    case EventKind::heap_object: {
      const uint64_t* open = open_heapshot_.find(thread);
      if (open && *open != 0 && e.size > 0) {
        ++heapshots[*open - 1].objects;
        heapshots[*open - 1].bytes += e.size;
      }
      break;
    }
    case EventKind::heap_end:
      if (uint64_t* open = open_heapshot_.find(thread)) *open = 0;
      break;
    default: break;
  }
}

}  // namespace mlpd
