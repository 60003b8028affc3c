// The helper-thread half of sampling: completed sample records become TYPE_SAMPLE_HIT events.
//
// Each drain takes the completed records, oldest first; their native chains are unwound
// (native_unwind.h) and named (native_names.h), methods compiled before a late attach are described,
// and each record becomes one hit: its native IPs, then those of its managed frames that were
// described, ended by a marker where the stack was cut short ([truncated]: deeper than the frames
// kept; [stack cut]: any other reason).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mlpd/format.h"
#include "mlpd/capture/sampling.h"
#include "mlpd/rt/clock.h"
#include "native_names.h"
#include "native_unwind.h"
#include "os_threads.h"
#include "sample_capture.h"
#include "sample_pool.h"

namespace mlpd::hooks {

using namespace sampling_detail;

namespace {

// The marker of a sample stack cut for another reason than depth (a managed frame nobody could
// name), as format::kTruncatedMethod is for depth: a method_jit event names it, code
// [kCutMethod, +1) in page 0, never mapped. The profiler counters give each reason's count.
constexpr uint64_t kCutMethod = 0x180;
constexpr char kCutName[] = "[stack cut]";

struct DrainState {
  Snapshot snapshot;  // the modules loaded at the last chunk unwound
  std::vector<Pending> batch;
  NativeNames names;
  uint32_t max_native = kMaxSampleFrames;
  uint64_t truncated_in = 0;  // the serial of the MetaLog that has the [truncated] marker's method_jit
  uint64_t cut_in = 0;        // the same for the [stack cut] marker
  // Frames the walk gave without a method (AOT code met in an async context), named by their code
  // start: the method the describer found (0: none).
  std::unordered_map<uint64_t, uint64_t> by_code;
  std::unordered_set<uint64_t> named;  // attached: the sampled threads whose name was looked for
  // Attached: JIT'd code compiled before the attach that the describer found (start -> end), and the
  // native IPs outside every module that no method's code holds (trampolines): asked about once.
  std::map<uint64_t, uint64_t> jit_ranges;
  std::unordered_set<uint64_t> no_method;
  // Samples kept back for the next drain, with the drains they waited: the describer did not answer
  // in time (held up: the finalizer busy, the machine loaded), and the frames it would have named
  // would otherwise be cut (kMaxDeferrals, below).
  std::unordered_map<const Record*, uint32_t> deferred;
  const Pool* deferred_pool = nullptr;  // the pool those records are in
};

// A sample whose frames the describer did not name in time waits for up to this many later drains
// (the describer names them meanwhile), while at most a quarter of the pool waits; then, and at the
// final drain, it is cut as before.
constexpr uint32_t kMaxDeferrals = 8;

constexpr size_t kMaxJitAsk = 512;        // native IPs asked about per drain
constexpr size_t kMaxJitKnown = 1 << 16;  // ranges and IPs remembered (then forgotten: asked again)

bool in_jit_range(const DrainState& d, uint64_t ip) {
  auto it = d.jit_ranges.upper_bound(ip);
  if (it == d.jit_ranges.begin()) return false;
  --it;
  return ip < it->second;
}

// The OS name of thread `os_tid` of this process (/proc/self/task/TID/comm), empty if it is gone.
std::string os_thread_name(int32_t os_tid) {
  if (os_tid <= 0) return {};
  const std::string path = "/proc/self/task/" + std::to_string(os_tid) + "/comm";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return {};
  std::string name(buf, static_cast<size_t>(n));
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name;
}

// Attached late (issue 33.3): the threads that started before the attach had their thread_started
// and thread_name callbacks before the agent was there, so their samples would be `thread 0x7f...`.
// Each sampled thread the runtime has not named since (thread_ids::has_name) is named once, before
// its first hit, with its OS name: Mono gives a thread's managed name to the OS thread (truncated to
// 15 bytes by the kernel), and the OS name of one it did not name (the main thread: the program's).
void name_thread(DrainState& d, const Record& r) {
  if (d.named.count(r.tid)) return;
  if (d.named.size() >= 65536) d.named.clear();  // bounded: a name given again is harmless
  d.named.insert(r.tid);
  if (thread_ids::has_name(r.tid)) return;
  const std::string name = os_thread_name(r.os_tid);
  if (name.empty()) return;
  Event e;
  e.kind = EventKind::thread_name;
  e.ptr = r.tid;
  e.name = name;
  g_sample_meta->add(e, rt::now_ns);
}
DrainState* g_drain = nullptr;

// A marker ([truncated], [stack cut]: format.h), described once before its first use in each MetaLog.
void describe_marker(uint64_t& described_in, uint64_t method, const char* name) {
  // By serial, not address: a stream made after another was freed (a test's, a fork child's) can have
  // the same address and must still get the marker's description.
  if (described_in == g_sample_meta->serial()) return;
  Event e;
  e.kind = EventKind::method_jit;
  e.method = method;
  e.ptr = method;
  e.size = 1;
  e.name = name;
  g_sample_meta->add(e, rt::now_ns);
  described_in = g_sample_meta->serial();
}

std::atomic<bool (*)(uint64_t)> g_method_known{nullptr};
std::atomic<bool> g_late{false};

bool method_known(uint64_t method) {
  bool (*known)(uint64_t) = g_method_known.load(std::memory_order_acquire);
  return !known || known(method);
}

}  // namespace

void set_method_known(bool (*known)(uint64_t method)) { g_method_known.store(known, std::memory_order_release); }
void set_attached_late(bool late) { g_late.store(late, std::memory_order_release); }

std::atomic<DescribeMethods> g_describe_methods{nullptr};
void set_describe_methods(DescribeMethods fn) { g_describe_methods.store(fn, std::memory_order_release); }

void drain_samples(bool final) {
  Pool* pool = g_pool;
  // Closed by the final drain: a record filled after it was counted there as dropped_unfinished.
  if (!pool || !g_sample_meta || pool->closed()) return;
  if (!g_drain) {
    g_drain = new DrainState;
    // Without libunwind (not installed) the samples keep their leaf IP only.
    (void)native_unwind_open();
    g_drain->max_native = std::max<uint32_t>(1, pool->maxframes);
  }
  DrainState& d = *g_drain;
  d.batch.clear();
  // Records kept back belong to their pool: an attach after a detach makes a new one.
  if (d.deferred_pool != pool) {
    d.deferred.clear();
    d.deferred_pool = pool;
  }
  // Final: close the free stack first, so that a handler that passed the on-check before the stop
  // can no longer take a record (it counts dropped_shutdown). Every record not on the closed stack
  // and not READY now was popped by a handler that has not finished (state WRITING, or not yet
  // marked): dropped_unfinished, and nothing pushes it back.
  const uint32_t on_stack = final ? pool->close() : 0;
  for (uint32_t i = 0; i < pool->count; ++i) {
    if (pool->slots[i].state.load(std::memory_order_acquire) == kReady) d.batch.push_back({&pool->records[i], {}});
  }
  if (final) {
    const uint64_t unfinished = pool->count - on_stack - d.batch.size();
    if (unfinished) g_counters.dropped_unfinished.fetch_add(unfinished, std::memory_order_relaxed);
  }
  if (d.batch.empty()) return;
  const uint64_t t0 = rt::now_ns();
  size_t waited = 0;  // records kept back by an earlier drain: taken then
  for (const Pending& p : d.batch) waited += d.deferred.count(p.record);
  g_counters.taken.fetch_add(d.batch.size() - waited, std::memory_order_relaxed);
  std::sort(d.batch.begin(), d.batch.end(),
            [](const Pending& a, const Pending& b) { return a.record->time < b.record->time; });
  native_chains(d.batch, d.snapshot, d.max_native);
  // Frames whose method is not described: methods compiled before a late attach (no jit_done of
  // ours) and AOT-compiled methods (no jit_done at all; method 0 when the walk met their code in an
  // async context). A thread attached to the runtime describes them now, before the samples that name
  // them (late_describer.h), and names the method-0 frames by their code start.
  // Attached late (not the preload describer of AOT frames): pre-attach JIT code and thread names.
  const bool late = g_late.load(std::memory_order_acquire);
  bool not_answered = false;  // the describer was asked and did not answer in time
  if (DescribeMethods describe = g_describe_methods.load(std::memory_order_acquire)) {
    std::vector<std::pair<uint64_t, uint64_t>> unknown;  // (method or 0, code start or 0)
    for (const Pending& p : d.batch) {
      for (uint32_t i = 0; i < p.record->nframes; ++i) {
        const uint64_t m = p.record->methods[i], c = p.record->code[i];
        if (m ? method_known(m) : (!c || d.by_code.count(c))) continue;
        unknown.emplace_back(m, c);
      }
    }
    std::sort(unknown.begin(), unknown.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;  // one with a code address first
    });
    // One entry per method; per code start for the frames without one.
    unknown.erase(std::unique(unknown.begin(), unknown.end(),
                              [](const auto& a, const auto& b) { return a.first == b.first && (a.first || a.second == b.second); }),
                  unknown.end());
    // Attached: native IPs in no module are JIT'd code (Mono's code memory is anonymous). Those
    // compiled after the attach are described at jit_done; the others (wrappers such as the managed
    // allocator, a leaf the walk did not give) by the describer, through the runtime's JIT info
    // table. (Under LD_PRELOAD every JIT'd range had its jit_done: nothing to ask.)
    std::vector<uint64_t> ips;
    for (const Pending& p : d.batch) {
      for (size_t i = 0; late && i < p.ips.size() && ips.size() < kMaxJitAsk; ++i) {
        const uint64_t probe = i == 0 ? p.ips[i] : p.ips[i] - 1;
        if (probe && !d.snapshot.find(probe) && !in_jit_range(d, probe) && !d.no_method.count(probe)) ips.push_back(probe);
      }
    }
    std::sort(ips.begin(), ips.end());
    ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
    if (!unknown.empty() || !ips.empty()) {
      std::vector<uint64_t> methods, code;
      for (const auto& [m, c] : unknown) {
        methods.push_back(m);
        code.push_back(c);
      }
      for (uint64_t ip : ips) {
        methods.push_back(0);
        code.push_back(ip);
      }
      std::vector<uint64_t> resolved(methods.size());
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      describe(methods.data(), code.data(), resolved.data(), methods.size(), ranges);
      not_answered = std::find(resolved.begin(), resolved.end(), kNotAnswered) != resolved.end();
      // A code start the runtime could not name is not asked again (AOT code is never freed).
      for (size_t i = 0; i < unknown.size(); ++i)
        if (!methods[i] && resolved[i] != kNotAnswered) d.by_code.emplace(code[i], resolved[i]);
      if (d.jit_ranges.size() >= kMaxJitKnown) d.jit_ranges.clear();
      if (d.no_method.size() >= kMaxJitKnown) d.no_method.clear();
      for (const auto& [start, size] : ranges) {
        if (size) d.jit_ranges[start] = start + size;
        else d.no_method.insert(start);
      }
    }
  }
  Event hit;
  uint64_t frames_left_out = 0, truncated = 0, cut_unnamed = 0, cut_copy = 0;
  size_t kept_back = 0;
  for (Pending& p : d.batch) {
    const Record* r = p.record;
    if (late) name_thread(d, *r);
    // A managed leaf is named by its method's code range, even in AOT code (a loaded module whose
    // symbols would otherwise name it as native code).
    const bool managed_leaf = r->nframes > 0 && r->leaf_offset >= 0 && r->code[0] + static_cast<uint64_t>(r->leaf_offset) == r->ip;
    for (size_t i = managed_leaf ? 1 : 0; i < p.ips.size(); ++i) d.names.describe(d.snapshot, p.ips[i], i == 0);
    hit.reset(EventKind::sample_hit);
    hit.time = r->time;
    hit.ptr = r->tid;
    hit.ips = p.ips;
    bool unnamed = false;
    for (uint32_t i = 0; i < r->nframes; ++i) {
      uint64_t method = r->methods[i];
      if (!method) {
        const auto it = d.by_code.find(r->code[i]);
        if (it != d.by_code.end()) method = it->second;
      }
      // This thread must not call Mono (it is not attached: Mono aborts in mono_method_full_name or
      // mono_jit_info_table_find), so a frame is kept only if its method was described already
      // (JIT'd methods are, at jit_done; AOT ones by the describer above). Not kept: a frame nobody
      // could name (the describer held up, or not running: before the runtime is initialised, after
      // its shutdown began). The chain stops at the first such frame, and the frames above it are
      // left out too: skipping only that frame would join its callee to its caller (A -> C for
      // A -> B -> C), a call that never happened.
      if (!method || !method_known(method)) {
        unnamed = true;
        break;
      }
      hit.frames.push_back(method);
    }
    if (unnamed && not_answered && !final) {
      // Kept READY in the pool: the next drain takes it again, when the describer has answered.
      const auto it = d.deferred.find(r);
      const uint32_t waits = it == d.deferred.end() ? 0 : it->second;
      if (waits < kMaxDeferrals && (it != d.deferred.end() || d.deferred.size() < pool->count / 4)) {
        d.deferred[r] = waits + 1;
        ++kept_back;
        continue;
      }
    }
    d.deferred.erase(r);
    if (unnamed) frames_left_out += r->nframes - hit.frames.size();
    // A stack cut short ends with a marker at its root, so that flame graphs group the cut stacks
    // under one name instead of scattering them as towers of their own: [truncated] when it is
    // deeper than the frames kept, [stack cut] for any other reason. Each reason is counted.
    if (unnamed || p.past_copy) {
      describe_marker(d.cut_in, kCutMethod, kCutName);
      hit.frames.push_back(kCutMethod);
      cut_unnamed += unnamed;
      cut_copy += p.past_copy;
    } else if (p.truncated || r->truncated) {
      describe_marker(d.truncated_in, format::kTruncatedMethod, format::kTruncatedName);
      hit.frames.push_back(format::kTruncatedMethod);
      ++truncated;
    }
    g_sample_meta->add_at(hit);
    pool->push(p.record);
  }
  g_counters.written.fetch_add(d.batch.size() - kept_back, std::memory_order_relaxed);
  g_counters.frames_left_out.fetch_add(frames_left_out, std::memory_order_relaxed);
  g_counters.truncated.fetch_add(truncated, std::memory_order_relaxed);
  g_counters.cut_unnamed.fetch_add(cut_unnamed, std::memory_order_relaxed);
  g_counters.cut_copy.fetch_add(cut_copy, std::memory_order_relaxed);
  g_counters.drain_ns.fetch_add(rt::now_ns() - t0, std::memory_order_relaxed);
}

}  // namespace mlpd::hooks
