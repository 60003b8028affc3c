// The describer of an attached agent (late_describer.h).
#include "mlpd/hooks/late_describer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

#include "described.h"
#include "late_describer_hand_over.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/capture/sampling.h"
#include "state.h"

namespace mlpd::hooks {

namespace {

// The drain waits this long for a description; a describer held up (its thread suspended by a
// collection) costs the frames above the unknown method in those samples, as before attach support.
constexpr auto kWait = std::chrono::milliseconds(200);

struct Shared {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<uint64_t> asked, code, resolved;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // the answer: code ranges described
  uint64_t asked_seq = 0, done_seq = 0;
  bool stop = false;
  bool serving = false;
  bool (*wake)() = nullptr;  // wakes the serving thread (preload: the finalizer); false: it cannot now
};
Shared* g_shared = nullptr;  // never freed: the drain and the serving thread may both hold it

Shared& shared() {
  if (!g_shared) g_shared = new Shared;
  return *g_shared;
}

// With its code range when `code` is in it (the JIT info table knows), so that the samples' IPs
// resolve to it as to a method JIT'd after the attach. `m` null: the method whose code holds `code`, if
// any: a frame the walk gave without a method (AOT code met in an async context; the JIT info table
// loads an AOT method's JIT info outside a signal handler), or a native leaf in JIT'd code compiled
// before the attach (a wrapper, a method the walk skipped). The range described goes to `ranges`;
// (code, 0) when no method's code holds `code`. Returns the method described (0: none).
uint64_t describe(MonoMethod* m, uint64_t code, std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  if (code) {
    MonoJitInfo* ji = mono.mono_jit_info_table_find(mono.mono_domain_get(), reinterpret_cast<char*>(code));
    MonoMethod* owner = ji ? mono.mono_jit_info_get_method(ji) : nullptr;
    if (owner && (!m || owner == m)) {
      const auto start = reinterpret_cast<uint64_t>(mono.mono_jit_info_get_code_start(ji));
      const auto size = static_cast<uint64_t>(mono.mono_jit_info_get_code_size(ji));
      described::describe_method(owner, start, size);
      ranges.emplace_back(start, size);
      return reinterpret_cast<uint64_t>(owner);
    }
    if (!m) {
      ranges.emplace_back(code, 0);
      return 0;
    }
  }
  if (!m) return 0;
  described::ensure_method(m);
  return reinterpret_cast<uint64_t>(m);
}

}  // namespace

// Outside the anonymous namespace only to be declared in late_describer_hand_over.h (the unit tests).
void late_describer_detail::hand_over(const uint64_t* methods, const uint64_t* code, uint64_t* resolved, size_t count,
                                      std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  std::fill(resolved, resolved + count, kNotAnswered);
  Shared& s = shared();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.serving || s.stop) return;
  // The describer has not finished the previous request: it is held up (suspended while the world is
  // stopped for a collection or a heap walk, which needs the helper to go on writing buffers; the
  // finalizer running a long finalizer). Not waited for again until it has: these samples go without
  // the frames it would have named.
  if (s.done_seq < s.asked_seq) return;
  s.asked.assign(methods, methods + count);
  s.code.assign(code, code + count);
  s.resolved.clear();
  s.ranges.clear();
  const uint64_t seq = ++s.asked_seq;
  s.cv.notify_all();
  if (s.wake && !s.wake()) {
    s.done_seq = seq;  // nobody can serve it now (the runtime is not initialised): not waited for
    return;
  }
  if (!s.cv.wait_for(lock, kWait, [&] { return s.done_seq >= seq || s.stop; }) || s.done_seq < seq) return;
  for (size_t i = 0; i < count && i < s.resolved.size(); ++i) resolved[i] = s.resolved[i];
  ranges.swap(s.ranges);
  s.ranges.clear();
}

namespace {

using late_describer_detail::hand_over;

// Preload: the runtime's finalizer thread serves (gc_finalized, describer_finalized()), woken as
// heapshot requests wake it. A sem_post: safe from the helper, which is not attached to the runtime.
bool wake_finalizer() {
  if (!state::runtime_ready()) return false;
  mono.mono_gc_finalize_notify();
  return true;
}

void start(bool (*wake)()) {
  Shared& s = shared();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stop = false;
    s.serving = true;
    s.wake = wake;
    s.done_seq = s.asked_seq;  // nothing left over from an earlier attach
  }
  set_describe_methods(hand_over);
}

}  // namespace

void start_describer() { start(nullptr); }

void start_preload_describer() { start(wake_finalizer); }

void describer_finalized() {
  Shared& s = shared();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.wake != wake_finalizer || s.asked_seq == s.done_seq) return;  // the common case: one lock
  }
  serve_descriptions(0);
}

void serve_descriptions(int wait_ms) {
  Shared& s = shared();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.cv.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return s.stop || s.asked_seq > s.done_seq; }) || s.stop)
    return;
  std::vector<uint64_t> todo, code, resolved;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  todo.swap(s.asked);
  code.swap(s.code);
  const uint64_t seq = s.asked_seq;
  lock.unlock();  // never hold ours while calling into Mono
  resolved.reserve(todo.size());
  for (size_t i = 0; i < todo.size(); ++i)
    resolved.push_back(describe(reinterpret_cast<MonoMethod*>(todo[i]), i < code.size() ? code[i] : 0, ranges));
  lock.lock();
  if (seq == s.asked_seq) {
    s.resolved.swap(resolved);
    s.ranges.swap(ranges);
  }
  s.done_seq = seq;
  s.cv.notify_all();
}

void stop_describer() {
  set_describe_methods(nullptr);
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stop = true;
  s.serving = false;
  s.cv.notify_all();
}

}  // namespace mlpd::hooks
