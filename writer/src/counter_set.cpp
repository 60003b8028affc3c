#include "mlpd/counter_set.h"

#include "mlpd/format.h"

namespace mlpd {

using namespace mlpd::format;

uint64_t CounterSet::add(CounterDesc desc) {
  if (desc.type > kMaxCounterType || desc.type == COUNTER_STRING) return 0;
  desc.index = counters_.size() + 1;
  counters_.push_back({std::move(desc), 0, false, false});
  return counters_.back().desc.index;
}

bool CounterSet::describe(Event& e) {
  e.reset(EventKind::counter_descriptors);
  for (Counter& c : counters_) {
    if (c.described) continue;
    e.counter_descs.push_back(c.desc);
    c.described = true;
  }
  return !e.counter_descs.empty();
}

namespace {

// The value written for a change from `last` to `now` (both raw), in CounterValue::bits form: sleb
// types as two's complement of the signed change, uleb types zero-extended, doubles absolute.
uint64_t sample_bits(uint64_t type, uint64_t last, uint64_t now) {
  switch (type) {
    case COUNTER_INT: {
      const auto d = static_cast<int32_t>(static_cast<uint32_t>(now) - static_cast<uint32_t>(last));
      return static_cast<uint64_t>(static_cast<int64_t>(d));
    }
    case COUNTER_UINT:
      return static_cast<uint32_t>(static_cast<uint32_t>(now) - static_cast<uint32_t>(last));
    case COUNTER_DOUBLE:
      return now;
    default:  // word (64-bit), long, time interval: sleb of the int64 change; ulong: uleb of it
      return now - last;
  }
}

}  // namespace

size_t CounterSet::sample(const std::vector<Raw>& current, Event& e) {
  e.reset(EventKind::counter_samples);
  const size_t n = current.size() < counters_.size() ? current.size() : counters_.size();
  for (size_t i = 0; i < n; ++i) {
    Counter& c = counters_[i];
    const Raw& r = current[i];
    if (!r.valid || !c.described) continue;  // a value must never come before its descriptor
    if (c.sampled && r.bits == c.last) continue;
    CounterValue& v = e.counter_values.emplace_back();
    v.index = c.desc.index;
    v.type = c.desc.type;
    v.bits = sample_bits(c.desc.type, c.last, r.bits);
    c.last = r.bits;
    c.sampled = true;
  }
  return e.counter_values.size();
}

uint64_t accumulate_counter(uint64_t type, uint64_t previous, uint64_t bits) {
  switch (type) {
    case COUNTER_INT:
    case COUNTER_UINT:
      return static_cast<uint32_t>(static_cast<uint32_t>(previous) + static_cast<uint32_t>(bits));
    case COUNTER_DOUBLE:
      return bits;
    default:
      return previous + bits;
  }
}

}  // namespace mlpd
