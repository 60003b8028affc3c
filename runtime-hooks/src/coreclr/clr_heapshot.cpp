// Heapshots on .NET (clr_heapshot.h; docs/dotnet.md "Heapshots").
#include "coreclr/clr_heapshot.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "mlpd/format.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"

namespace mlpd::coreclr {

namespace {

using namespace mlpd::format;

// The roots' slots. CoreCLR names no slot address for a root (a stack root carries its method, a
// handle root its handle), and the reader labels a root by the registered range its slot lies in, as
// Mono registers its root areas. So each kind gets a range of made-up addresses of its own, registered
// before each heapshot with Mono's root source (MonoGCRootSource) and a name, and each root a slot in
// its kind's range. The finalizer queue is Mono's special slot 1 ("Finalizer Queue").
//
// The base is above every user-space address (bits 48-55 set: never a canonical x86-64 or arm64
// user pointer) and its top byte is 0: the first pointer written into a buffer becomes the buffer's
// ptr_base, and Mono's mprof-report reads a header's 64-bit fields with the 8th byte shifted by 54
// bits instead of 56 (its read_int64), so a base with a top byte decodes there as another value, and
// in that buffer every class and vtable is registered under the wrong address: the objects of later
// buffers then showed as "unresolved class (nil)" (117-210 of 1000 HeapB in the test's heapshot, when
// the base was 0x6d6c706400000000).
constexpr uint64_t kSlotBase = 0x006d6c7000000000ull;  // "mlp"
constexpr uint64_t kRegionSize = uint64_t{1} << 36;
enum Region : unsigned { kStackRegion, kStrongRegion, kPinnedRegion, kRefCountedRegion, kOtherRegion, kFrozenRegion, kRegions };
struct RegionInfo {
  uint8_t source;  // MonoGCRootSource: 1 stack, 6 gc_handle, 0 external
  const char* name;
};
constexpr RegionInfo kRegionInfo[kRegions] = {
    {1, "Thread Stack"},
    {6, "GC Handles (Strong)"},
    {6, "GC Handles (Pinned)"},
    {6, "GC Handles (RefCounted)"},
    {0, "Other Roots (CoreCLR)"},
    {0, "Frozen Objects (CoreCLR's non-GC heap)"},
};
// Every slot of every region: above user space, below 2^56 (mprof-report, above).
static_assert(kSlotBase >= (uint64_t{1} << 48) && ((kSlotBase + kRegions * kRegionSize) >> 56) == 0);
constexpr uint64_t kFinalizerSlot = 1;
constexpr uint8_t kNoGeneration = 0xFF;  // generation_of: in no generation's range

void say(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

}  // namespace

bool ClrHeapshots::configure(const runtime::Config& config, ProfilerInfo* info, int info_level, Hooks hooks) {
  info_ = info;
  hooks_ = std::move(hooks);
  // A later install (attach again after a detach) starts afresh: stop() ended the thread.
  stopping_.store(false);
  started_.store(false);
  thread_started_ = false;
  mode_ = config.heapshot_mode;
  every_ms_ = config.heapshot_ms;
  every_gc_ = config.heapshot_gc;
  keep_monitor_ = mode_ == HEAPSHOT_MAJOR;
  on_shutdown_ = config.heapshot_on_shutdown;
  final_taken_.store(false);
  frozen_check_ = info_level >= 10;  // IsFrozenObject is ICorProfilerInfo10's
  // Heapshots only when asked for by an option: MONITOR_GC at Initialize turns concurrent GC off for
  // the whole run, which a run that only opened the command port did not ask to pay.
  enabled_ = mode_ != HEAPSHOT_NONE || on_shutdown_;
  return enabled_;
}

void ClrHeapshots::runtime_started() {
  if (!enabled_ || started_.exchange(true)) return;
  monitor_on_.store(true, std::memory_order_release);  // asked for at Initialize
  if (!keep_monitor_ && hooks_.monitor_gc(false)) monitor_on_.store(false, std::memory_order_release);
  if (mode_ == HEAPSHOT_X_MS || mode_ == HEAPSHOT_X_GC || mode_ == HEAPSHOT_ON_DEMAND || on_shutdown_) ensure_thread();
}

uint64_t ClrHeapshots::add_request() {
  const uint64_t ticket = begun_.load(std::memory_order_acquire) + 1;
  uint64_t cur = requested_.load(std::memory_order_relaxed);
  while (cur < ticket && !requested_.compare_exchange_weak(cur, ticket, std::memory_order_acq_rel)) {
  }
  return ticket;
}

void ClrHeapshots::wake() { cv_.notify_one(); }  // our thread also looks every 100 ms: no wake-up is lost for long

std::string ClrHeapshots::refusal() const {
  if (!enabled_ && hooks_.active && hooks_.active())
    return "on .NET heapshots need a heapshot option at start (heapshot=ondemand, NUMms, NUMgc, heapshot or "
           "heapshot-on-shutdown): "
           "the runtime shows a profiler the heap only with concurrent GC off, which it turns off only then";
  return {};
}

uint64_t ClrHeapshots::request() {
  if (!enabled_ || !hooks_.active() || stopping_.load()) return 0;
  const uint64_t ticket = add_request();
  ensure_thread();
  wake();
  return ticket;
}

void ClrHeapshots::ensure_thread() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_started_ || stopping_.load()) return;
  thread_started_ = true;
  thread_ = std::thread([this] { thread_main(); });
}

// Our thread: one forced collection per pending request (requests made before it began share it).
// The runtime has no Thread of its own for this thread before its first ForceGC (ForceGC needs a
// thread that runs no managed code); a workstation collection runs here, so the walk's events go to
// this thread's buffers while the helper goes on writing the full ones out.
void ClrHeapshots::thread_main() {
  bool refused_said = false;
  // This thread's buffers registered now, not first during the collection it forces (the registry's
  // lock is then never taken with the world stopped).
  (void)hooks_.log();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_.load()) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stopping_.load()) break;
    if (!pending() || !started_.load() || !hooks_.active()) continue;
    lock.unlock();
    bool on = keep_monitor_;
    if (!on) {
      on = hooks_.monitor_gc(true);
      if (on) monitor_on_.store(true, std::memory_order_release);
    }
    if (!on) {
      if (!refused_said) say("mlpd: heapshot: the runtime refused COR_PRF_MONITOR_GC now: no heapshot can be taken\n");
      refused_said = true;
      failures_.fetch_add(1, std::memory_order_release);
    } else {
      forcing_.store(true, std::memory_order_release);
      const uint64_t t0 = rt::now_ns();
      const HRESULT hr = info_->table->ForceGC(info_);
      last_force_ns_.store(rt::now_ns() - t0, std::memory_order_relaxed);
      forcing_.store(false, std::memory_order_release);
      if (!keep_monitor_) {
        monitor_on_.store(false, std::memory_order_release);
        hooks_.monitor_gc(false);
      }
      if (!succeeded(hr)) failures_.fetch_add(1, std::memory_order_release);
      if (!succeeded(hr) && !refused_said) {
        char text[96];
        std::snprintf(text, sizeof text, "mlpd: heapshot: the runtime refused ForceGC (0x%08x)\n",
                      static_cast<unsigned>(hr));
        say(text);
        refused_said = true;
      }
    }
    lock.lock();
  }
}

bool ClrHeapshots::take_final(const char* when, uint32_t stall_ms, bool verbose) {
  if (!on_shutdown_ || final_taken_.exchange(true)) return false;
  const uint64_t t0 = rt::now_ns();
  const uint64_t failures = failures_.load(std::memory_order_acquire);
  const uint64_t ticket = request();
  char text[200];
  if (!ticket) {
    if (verbose) {
      std::snprintf(text, sizeof text, "mlpd: heapshot-on-shutdown (%s): no heapshot can be taken now\n", when);
      say(text);
    }
    return false;
  }
  uint64_t seen = progress_.load(std::memory_order_acquire);
  uint64_t since = t0;
  while (done() < ticket) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (failures_.load(std::memory_order_acquire) != failures) {  // our thread said why (one line)
      if (verbose) {
        std::snprintf(text, sizeof text, "mlpd: heapshot-on-shutdown (%s): the runtime refused the collection\n", when);
        say(text);
      }
      return false;
    }
    const uint64_t now = rt::now_ns();
    if (const uint64_t p = progress_.load(std::memory_order_acquire); p != seen) {
      seen = p;
      since = now;
    } else if (now - since >= uint64_t{stall_ms} * 1000000) {
      if (verbose) {
        std::snprintf(text, sizeof text,
                      "mlpd: heapshot-on-shutdown (%s): the runtime did not collect within %u ms: no heapshot, the "
                      "exit goes on\n",
                      when, stall_ms);
        say(text);
      }
      return false;
    }
  }
  if (verbose) {
    std::snprintf(text, sizeof text, "mlpd: heapshot-on-shutdown (%s): heapshot %llu taken in %.1f ms\n", when,
                  static_cast<unsigned long long>(ticket), static_cast<double>(rt::now_ns() - t0) / 1e6);
    say(text);
  }
  return true;
}

void ClrHeapshots::stop() {
  stopping_.store(true);
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (!t.joinable()) return;
  // A forced collection under way is waited for a little (bounded: the runtime may be shutting down);
  // the thread ends by itself after it.
  for (int i = 0; i < 200 && forcing_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (forcing_.load()) t.detach();
  else t.join();
}

void ClrHeapshots::gc_started(bool full) {
  if (!enabled_) return;
  armed_ = walking_ = false;
  if (!hooks_.active()) return;
  const bool ours = forcing_.load(std::memory_order_acquire);
  if (full && !ours) {
    // Mono's periodic modes, decided at the program's own full collections: the heapshot is taken by
    // the collection our thread forces right after this one.
    const bool paused = hooks_.paused();
    const uint64_t now = rt::now_ns();
    bool wanted = false;
    if (mode_ == HEAPSHOT_X_GC) wanted = every_gc_ && majors_ % every_gc_ == 0;
    else if (mode_ == HEAPSHOT_X_MS) wanted = (now - last_shot_ns_) / 1000000 >= every_ms_;
    ++majors_;
    if (wanted && !paused && !keep_monitor_) {
      add_request();
      wake();
    }
  }
  if (full && monitor_on_.load(std::memory_order_acquire) &&
      (pending() || (keep_monitor_ && !hooks_.paused()))) {
    progress_.fetch_add(1, std::memory_order_release);
    armed_ = true;
    shot_ = begun_.load(std::memory_order_relaxed) + 1;
    begun_.store(shot_, std::memory_order_release);
  }
}

void ClrHeapshots::begin_walk() {
  walking_ = true;
  log_ = hooks_.log();
  if (!log_) return;
  const uint64_t now = rt::now_ns();
  dropped_before_ = log_->dropped_events();
  log_->use_reserve(true);
  for (unsigned r = 0; r < kRegions; ++r) {
    const char* name = kRegionInfo[r].name;
    rt::write_root_register(*log_, now, kSlotBase + r * kRegionSize, kRegionSize, kRegionInfo[r].source, 0, name,
                            std::strlen(name));
  }
  std::memset(root_seq_, 0, sizeof root_seq_);
  std::memset(seen_, 0, sizeof seen_);
  seen_count_ = 0;
  bound_count_ = 0;
  if (!succeeded(info_->table->GetGenerationBounds(info_, 16, &bound_count_, bounds_))) bound_count_ = 0;
  bound_count_ = std::min<ULONG>(bound_count_, 16);
  rt::write_bare(*log_, TYPE_HEAP | TYPE_HEAP_START, now);
}

// Classes seen in the current walk (open addressing, cleared per walk); when full, every further class
// is looked up again (still correct, only slower).
bool ClrHeapshots::seen(ClassID klass) {
  size_t i = static_cast<size_t>(((klass >> 3) * 0x9E3779B97F4A7C15ull) >> 50) & (kSeenSlots - 1);
  for (;;) {
    if (seen_[i] == klass) return true;
    if (seen_[i] == 0) break;
    i = (i + 1) & (kSeenSlots - 1);
  }
  if (seen_count_ < kSeenSlots / 4 * 3) {
    seen_[i] = klass;
    ++seen_count_;
  }
  return false;
}

uint8_t ClrHeapshots::generation_of(ObjectID object) const {
  for (ULONG i = 0; i < bound_count_; ++i) {
    const GenerationRange& g = bounds_[i];
    if (object >= g.range_start && object - g.range_start < g.range_length) {
      const int gen = static_cast<int>(g.generation);
      return static_cast<uint8_t>(gen < 0 ? 0 : gen > 2 ? 2 : gen);  // LOH, POH: collected with gen 2
    }
  }
  return kNoGeneration;
}

void ClrHeapshots::root_references(ULONG count, const ObjectID* objects, const GcRootKind* kinds,
                                   const GcRootFlags* flags, const UINT_PTR*) {
  if (!armed_ || !objects || !kinds) return;
  progress_.fetch_add(1, std::memory_order_release);
  if (!walking_) begin_walk();
  if (!log_) return;
  constexpr uint32_t kChunk = 32;
  uint64_t slots[kChunk], objs[kChunk];
  uint32_t n = 0;
  const uint64_t now = rt::now_ns();
  for (ULONG i = 0; i < count; ++i) {
    if (!objects[i]) continue;
    const int f = flags ? static_cast<int>(flags[i]) : 0;
    uint64_t slot = 0;
    switch (kinds[i]) {
      case GcRootKind::kStack: slot = kSlotBase + kStackRegion * kRegionSize + 8 * root_seq_[kStackRegion]++; break;
      case GcRootKind::kFinalizer: slot = kFinalizerSlot; break;
      case GcRootKind::kHandle: {
        // A weak handle keeps nothing alive: not a root of the heapshot (counted).
        if (f & static_cast<int>(GcRootFlags::kWeakRef)) {
          weak_skipped_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const Region r = (f & static_cast<int>(GcRootFlags::kPinning))      ? kPinnedRegion
                         : (f & static_cast<int>(GcRootFlags::kRefCounted)) ? kRefCountedRegion
                                                                             : kStrongRegion;
        slot = kSlotBase + r * kRegionSize + 8 * root_seq_[r]++;
        break;
      }
      default: slot = kSlotBase + kOtherRegion * kRegionSize + 8 * root_seq_[kOtherRegion]++; break;
    }
    slots[n] = slot;
    objs[n] = objects[i];
    if (++n == kChunk) {
      rt::write_heap_roots(*log_, now, slots, objs, n);
      n = 0;
    }
  }
  if (n) rt::write_heap_roots(*log_, now, slots, objs, n);
}

HRESULT ClrHeapshots::object_references(ObjectID object, ClassID klass, ULONG count, const ObjectID* refs) {
  if (!armed_) return kE_FAIL;  // not a heapshot's collection: the runtime stops walking the heap
  progress_.fetch_add(1, std::memory_order_release);
  if (!walking_) begin_walk();
  if (!log_ || !object) return kS_OK;
  if (!klass) info_->table->GetClassFromObject(info_, object, &klass);
  if (klass && !seen(klass)) hooks_.describe_class(klass, *log_);
  SIZE_T size = 0;
  info_->table->GetObjectSize2(info_, object, &size);
  uint64_t sz = (static_cast<uint64_t>(size) + 7) & ~uint64_t{7};  // the heap's alignment, as Mono reports sizes
  uint8_t generation = generation_of(object);
  const uint64_t now = rt::now_ns();
  // An object of the runtime's non-GC heap (string literals, the preallocated RuntimeType objects) is
  // never collected and no GC root holds it: it is its own root (kind external), not "unreached".
  // Only an object outside every generation's range can be one (one runtime call fewer per object).
  const bool outside = generation == kNoGeneration;
  if (outside) generation = 2;
  BOOL frozen = 0;
  if (outside && frozen_check_ && succeeded(info_->table->IsFrozenObject(info_, object, &frozen)) && frozen) {
    const uint64_t slot = kSlotBase + kFrozenRegion * kRegionSize + 8 * root_seq_[kFrozenRegion]++;
    const uint64_t obj = object;
    rt::write_heap_roots(*log_, now, &slot, &obj, 1);
  }
  // The runtime gives the references in the order of their slots, without the slots' offsets: each
  // offset is found by reading the object's words in order (the world is stopped and the objects are
  // where the collection left them); a reference not found that way gets the offset after the last.
  const uint64_t* words = reinterpret_cast<const uint64_t*>(object);
  const uint64_t nwords = size / 8;
  uint64_t w = 1;  // past the MethodTable pointer
  uint64_t offs[kHeapRefsPerEvent], objs[kHeapRefsPerEvent];
  ULONG i = 0;
  uint64_t last = 0;
  do {
    const uint32_t n = static_cast<uint32_t>(std::min<ULONG>(count - i, kHeapRefsPerEvent));
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t target = refs ? refs[i + k] : 0;
      uint64_t found = 0;
      for (uint64_t probe = w; probe < nwords; ++probe)
        if (words[probe] == target) {
          found = probe;
          break;
        }
      if (found) {
        w = found + 1;
        last = found * 8;
      } else {
        w = nwords;  // the order is lost: the rest get made-up offsets (no quadratic search)
        last += 8;
      }
      offs[k] = last;
      objs[k] = target;
    }
    rt::write_heap_object(*log_, now, object, klass, sz, generation, offs, objs, n);
    sz = 0;
    i += n;
  } while (i < count);
  return kS_OK;
}

void ClrHeapshots::gc_finished(bool) {
  if (!armed_) return;
  armed_ = false;
  if (!walking_) begin_walk();  // a collection that reported nothing: an empty heapshot, still closed
  walking_ = false;
  last_shot_ns_ = rt::now_ns();
  if (log_) {
    rt::write_bare(*log_, TYPE_HEAP | TYPE_HEAP_END, last_shot_ns_);
    log_->use_reserve(false);
    log_->hand_off();  // the heapshot's end reaches the file before the next one's objects
    if (const uint64_t lost = log_->dropped_events() - dropped_before_) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "mlpd: heapshot %llu is incomplete: %llu events dropped (the output did not keep up; the "
                    "buffer pool is full)\n",
                    static_cast<unsigned long long>(shot_), static_cast<unsigned long long>(lost));
      say(text);
    }
  }
  log_ = nullptr;
  done_.store(shot_, std::memory_order_release);
}

}  // namespace mlpd::coreclr
