#include "mlpd/rt/meta_store.h"

#include <algorithm>
#include <cstring>

#include "mlpd/buffer_decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"

namespace mlpd::rt {

namespace {

// Groups: what a record describes (names of a thread or a domain are separate from their load).
enum Group : uint8_t {
  kImage, kAssembly, kClass, kVtable, kMethod, kDomain, kDomainName, kContext, kThread, kThreadName,
  kCounter, kUsym, kJitHelper, kRoot, kAot,
};

constexpr size_t kReplayBufferLimit = 60 * 1024;  // Mono-sized buffers, as the MetaLog's

}  // namespace

size_t MetaStore::record_memory(const Record& r) {
  size_t n = sizeof(Record) + 64 + r.name.capacity() + r.mvid.capacity();  // + map/hash nodes
  for (const CounterDesc& d : r.descs) n += sizeof d + d.name.capacity() + d.section_name.capacity();
  return n;
}

bool MetaStore::Record::same_as(const Record& o) const {
  return kind == o.kind && code == o.code && ptr == o.ptr && ptr2 == o.ptr2 && ptr3 == o.ptr3 && method == o.method &&
         size == o.size && name == o.name && mvid == o.mvid && descs == o.descs;
}

void MetaStore::put(uint8_t group, uint64_t id, Record r) {
  // The same description again (a class named at its vtable's load and again at Mono's class_loaded,
  // which 6.12 raises after the vtable's for some arrays) keeps its place: moved to the end, it would
  // come after what uses it (a ring dump once replayed a vtable before its class: verify --strict
  // refused the dump). A description that changed moves: it is new.
  if (const auto it = seq_of_.find({group, id}); it != seq_of_.end()) {
    if (const auto rec = by_seq_.find(it->second); rec != by_seq_.end() && rec->second.same_as(r)) return;
  }
  erase(group, id);
  memory_ += record_memory(r);
  const uint64_t seq = next_seq_++;
  by_seq_.emplace(seq, std::move(r));
  seq_of_[{group, id}] = seq;
}

void MetaStore::erase(uint8_t group, uint64_t id) {
  const auto it = seq_of_.find({group, id});
  if (it == seq_of_.end()) return;
  const auto rec = by_seq_.find(it->second);
  if (rec != by_seq_.end()) {
    memory_ -= record_memory(rec->second);
    by_seq_.erase(rec);
  }
  seq_of_.erase(it);
}

void MetaStore::add(const Event& e) {
  Record r;
  r.kind = e.kind;
  r.code = e.code;
  r.time = e.time;
  r.ptr = e.ptr;
  r.ptr2 = e.ptr2;
  r.ptr3 = e.ptr3;
  r.method = e.method;
  r.size = e.size;
  switch (e.kind) {
    case EventKind::image_load:
      r.name = e.name;
      r.mvid = e.mvid;
      return put(kImage, e.ptr, std::move(r));
    case EventKind::image_unload: return erase(kImage, e.ptr);
    case EventKind::assembly_load:
      r.name = e.name;
      return put(kAssembly, e.ptr, std::move(r));
    case EventKind::assembly_unload: return erase(kAssembly, e.ptr);
    case EventKind::class_load:
      r.name = e.name;
      return put(kClass, e.ptr, std::move(r));
    case EventKind::vtable_load: return put(kVtable, e.ptr, std::move(r));
    case EventKind::method_jit:
      r.name = e.name;
      return put(kMethod, e.method, std::move(r));
    case EventKind::domain_load: return put(kDomain, e.ptr, std::move(r));
    case EventKind::domain_name:
      r.name = e.name;
      return put(kDomainName, e.ptr, std::move(r));
    case EventKind::domain_unload:
      erase(kDomain, e.ptr);
      return erase(kDomainName, e.ptr);
    case EventKind::context_load: return put(kContext, e.ptr, std::move(r));
    case EventKind::context_unload: return erase(kContext, e.ptr);
    case EventKind::thread_start: return put(kThread, e.ptr, std::move(r));
    case EventKind::thread_name:
      r.name = e.name;
      return put(kThreadName, e.ptr, std::move(r));
    case EventKind::thread_end:
      erase(kThread, e.ptr);
      return erase(kThreadName, e.ptr);
    case EventKind::counter_descriptors:
      // One record per counter, so that a counter described again replaces only itself.
      for (const CounterDesc& d : e.counter_descs) {
        Record c;
        c.kind = e.kind;
        c.time = e.time;
        c.descs.push_back(d);
        put(kCounter, d.index, std::move(c));
      }
      return;
    case EventKind::sample_usym:
      r.name = e.name;
      return put(kUsym, e.ptr, std::move(r));
    case EventKind::jit_helper:
      r.name = e.name;
      return put(kJitHelper, e.ptr, std::move(r));
    case EventKind::heap_root_register:
      r.name = e.name;
      return put(kRoot, e.ptr, std::move(r));
    case EventKind::heap_root_unregister: return erase(kRoot, e.ptr);
    case EventKind::aot_id:
      r.name = e.name;
      return put(kAot, 0, std::move(r));
    default: return;  // events that describe nothing
  }
}

void MetaStore::absorb(const uint8_t* data, size_t size) {
  Event e;
  std::string problem;
  size_t pos = 0;
  while (size - pos >= format::kBufferHeaderSize) {
    const uint8_t* h = data + pos;
    BufferHeader bh;
    if (decode_buffer_header(h, bh) != format::kBufferId || bh.length > size - pos - format::kBufferHeaderSize) return;
    thread_id_ = bh.thread_id;
    BufferDecoder dec(bh, h + format::kBufferHeaderSize, 0);
    uint64_t offset = 0;
    while (dec.next(e, problem, offset)) add(e);
    pos += format::kBufferHeaderSize + bh.length;
  }
}

void MetaStore::replay(std::vector<uint8_t>& out, uint64_t not_before) const {
  if (by_seq_.empty()) return;
  BufferEncoder enc(thread_id_, std::max(by_seq_.begin()->second.time, not_before));
  Event e;
  for (const auto& [seq, r] : by_seq_) {
    e.reset(r.kind);
    e.time = std::max(r.time, not_before);
    e.code = r.code;
    e.ptr = r.ptr;
    e.ptr2 = r.ptr2;
    e.ptr3 = r.ptr3;
    e.method = r.method;
    e.size = r.size;
    e.name = r.name;
    e.mvid = r.mvid;
    e.counter_descs = r.descs;
    enc.add(e);
    if (enc.data_size() >= kReplayBufferLimit) {
      enc.finish_into(out);
      enc.reset(thread_id_, std::max(r.time, not_before));
    }
  }
  if (!enc.empty()) enc.finish_into(out);
}

}  // namespace mlpd::rt
