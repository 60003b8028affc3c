// The describer of an attached agent (late_describer.h).
#include "mlpd/hooks/late_describer.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "described.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/hooks/sampling.h"

namespace mlpd::hooks {

namespace {

// The drain waits this long for a description; a describer held up (its thread suspended by a
// collection) costs the frames above the unknown method in those samples, as before attach support.
constexpr auto kWait = std::chrono::milliseconds(200);

struct Shared {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<uint64_t> asked, code;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // the answer: code ranges described
  uint64_t asked_seq = 0, done_seq = 0;
  bool stop = false;
  bool serving = false;
};
Shared* g_shared = nullptr;  // never freed: the drain and the serving thread may both hold it

Shared& shared() {
  if (!g_shared) g_shared = new Shared;
  return *g_shared;
}

// With its code range when `code` is in it (the JIT info table knows), so that the samples' IPs
// resolve to it as to a method JIT'd after the attach. `m` null: the method whose code holds `code`,
// if any (a native leaf in JIT'd code compiled before the attach: a wrapper, a method the walk
// skipped). The range described goes to `ranges`; (code, 0) when no method's code holds `code`.
void describe(MonoMethod* m, uint64_t code, std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  if (code) {
    MonoJitInfo* ji = mono.mono_jit_info_table_find(mono.mono_domain_get(), reinterpret_cast<char*>(code));
    MonoMethod* owner = ji ? mono.mono_jit_info_get_method(ji) : nullptr;
    if (owner && (!m || owner == m)) {
      const auto start = reinterpret_cast<uint64_t>(mono.mono_jit_info_get_code_start(ji));
      const auto size = static_cast<uint64_t>(mono.mono_jit_info_get_code_size(ji));
      described::describe_method(owner, start, size);
      ranges.emplace_back(start, size);
      return;
    }
    if (!m) {
      ranges.emplace_back(code, 0);
      return;
    }
  }
  if (m) described::ensure_method(m);
}

void hand_over(const uint64_t* methods, const uint64_t* code, size_t count, std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  Shared& s = shared();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.serving || s.stop) return;
  // The describer has not finished the previous request: it is held up (suspended while the world is
  // stopped for a collection or a heap walk, which needs the helper to go on writing buffers). Not
  // waited for again until it has: these samples go without the frames it would have named.
  if (s.done_seq < s.asked_seq) return;
  s.asked.assign(methods, methods + count);
  s.code.assign(code, code + count);
  const uint64_t seq = ++s.asked_seq;
  s.cv.notify_all();
  if (s.cv.wait_for(lock, kWait, [&] { return s.done_seq >= seq || s.stop; }) && s.done_seq >= seq) {
    ranges.swap(s.ranges);
    s.ranges.clear();
  }
}

}  // namespace

void start_describer() {
  Shared& s = shared();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stop = false;
    s.serving = true;
    s.done_seq = s.asked_seq;  // nothing left over from an earlier attach
  }
  set_describe_methods(hand_over);
}

void serve_descriptions(int wait_ms) {
  Shared& s = shared();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.cv.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return s.stop || s.asked_seq > s.done_seq; }) || s.stop)
    return;
  std::vector<uint64_t> todo, code;
  todo.swap(s.asked);
  code.swap(s.code);
  const uint64_t seq = s.asked_seq;
  lock.unlock();  // never hold ours while calling into Mono
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (size_t i = 0; i < todo.size(); ++i) describe(reinterpret_cast<MonoMethod*>(todo[i]), i < code.size() ? code[i] : 0, ranges);
  lock.lock();
  s.ranges.swap(ranges);
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
