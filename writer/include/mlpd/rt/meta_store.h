// MetaStore: what a new file needs to be complete on its own (docs/design.md, "Every file complete on
// its own"). The helper shows it every metadata buffer it writes (the MetaLog's stream); the store keeps
// the latest description of each thing still alive -- images, assemblies, classes, vtables, methods
// (method_jit), domains and their names, contexts, threads and their names, counter descriptors,
// native symbols (sample_usym), code buffers (jit_helper), registered roots and the AOT id -- and
// drops what an unload/end event retires. Its size is bounded by what is distinct, not by the number of
// events. replay() writes it all as metadata buffers: what a rotated file or a ring dump starts with,
// right after the file header.
//
// Used by the helper thread only (no lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlpd/event.h"

namespace mlpd::rt {

class MetaStore {
 public:
  // Takes in complete buffers (48-byte header + events), as MetaLog::take() writes them. Events of
  // kinds that describe nothing (samples, counter values...) are ignored. Malformed bytes end the
  // scan of that buffer (they are our own; this does not happen).
  void absorb(const uint8_t* data, size_t size);
  // Appends the kept descriptions, oldest first with their own times but none before `not_before`
  // (a rotated file's: its metadata must not make it start at the process's start), as buffers of
  // the given thread (the MetaLog's) of at most ~60 KiB each. Nothing when empty.
  void replay(std::vector<uint8_t>& out, uint64_t not_before = 0) const;
  // Adds one event (absorb() calls this for each decoded event).
  void add(const Event& e);

  size_t size() const { return by_seq_.size(); }
  // Bytes held, roughly (the strings and records): for the `verbose` summary and tests.
  size_t memory() const { return memory_; }

 private:
  // Only the fields metadata uses.
  struct Record {
    EventKind kind = EventKind::alloc;
    uint8_t code = 0;
    uint64_t time = 0, ptr = 0, ptr2 = 0, ptr3 = 0, method = 0, size = 0;
    std::string name, mvid;
    std::vector<CounterDesc> descs;
    bool same_as(const Record& o) const;  // all but the time
  };
  // What a record describes: (group, id). Group is the load kind; names live in groups of their own.
  using Key = std::pair<uint8_t, uint64_t>;
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.second * 131 + k.first); }
  };

  void put(uint8_t group, uint64_t id, Record r);
  void erase(uint8_t group, uint64_t id);
  static size_t record_memory(const Record& r);

  std::map<uint64_t, Record> by_seq_;                    // replay order
  std::unordered_map<Key, uint64_t, KeyHash> seq_of_;  // key -> its record's sequence number
  uint64_t next_seq_ = 0;
  uint64_t thread_id_ = 0;
  size_t memory_ = 0;
};

}  // namespace mlpd::rt
