#include "mlpd/hooks/runtime_counters.h"

#include <cstring>
#include <atomic>
#include <mutex>
#include <new>
#include <unordered_set>

#include "mlpd/format.h"
#include "mlpd/hooks/mono_api.h"

namespace mlpd::hooks {

namespace {

// Counters Mono has told us about and the helper has not taken yet. Allocated once: Mono may call the
// register callback from any thread at any time until exit, and statics with destructors would be
// gone by then.
struct Pending {
  std::mutex mutex;
  std::vector<MonoCounter*> fresh;        // not yet taken by the helper
  std::unordered_set<MonoCounter*> seen;  // every counter ever noted (Mono may report one twice)
};
std::atomic<Pending*> g_pending{nullptr};  // set once, when the runtime is initialised

void note(MonoCounter* c) {
  Pending* p = g_pending.load(std::memory_order_acquire);
  if (!c || !p) return;
  std::lock_guard<std::mutex> lock(p->mutex);
  if (p->seen.insert(c).second) p->fresh.push_back(c);
}

void on_register(MonoCounter* c) { note(c); }  // Mono's counters mutex is held here

mono_bool on_existing(MonoCounter* c, void*) {
  note(c);
  return 1;
}

}  // namespace

void runtime_counters_start() {
  if (g_pending.load(std::memory_order_acquire)) return;
  auto* p = new (std::nothrow) Pending;
  if (!p) return;
  g_pending.store(p, std::memory_order_release);
  // First the hook, then the walk: a counter registered in between is seen twice and noted once.
  mono.mono_counters_on_register(on_register);
  mono.mono_counters_foreach(on_existing, nullptr);
}

void take_new_runtime_counters(std::vector<RuntimeCounter>& out) {
  Pending* p = g_pending.load(std::memory_order_acquire);
  if (!p) return;
  std::vector<MonoCounter*> fresh;
  {
    std::lock_guard<std::mutex> lock(p->mutex);
    fresh.swap(p->fresh);
  }
  // Outside our lock: Mono's getters take no lock, but keep the rule "no Mono call under our lock".
  for (MonoCounter* c : fresh) {
    RuntimeCounter r;
    r.handle = c;
    const int type = mono.mono_counter_get_type(c);
    const size_t size = mono.mono_counter_get_size(c);
    if (type < 0 || static_cast<uint64_t>(type) > format::kMaxCounterType || type == format::COUNTER_STRING ||
        size == 0 || size > 8) {
      continue;
    }
    const char* name = mono.mono_counter_get_name(c);
    r.desc.name = name ? name : "";
    r.desc.section = static_cast<uint32_t>(mono.mono_counter_get_section(c));
    r.desc.type = static_cast<uint64_t>(type);
    r.desc.unit = static_cast<uint32_t>(mono.mono_counter_get_unit(c));
    r.desc.variance = static_cast<uint32_t>(mono.mono_counter_get_variance(c));
    r.size = size;
    out.push_back(std::move(r));
  }
}

bool read_runtime_counter(const RuntimeCounter& c, uint64_t& bits) {
  alignas(8) unsigned char buf[8] = {};
  const int n = mono.mono_counters_sample(static_cast<MonoCounter*>(c.handle), buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) > sizeof buf) return false;
  uint64_t v = 0;
  std::memcpy(&v, buf, static_cast<size_t>(n));  // little-endian: a 4-byte value zero-extends
  bits = v;
  return true;
}

}  // namespace mlpd::hooks
