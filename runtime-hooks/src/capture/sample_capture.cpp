// The signal-context half of sampling, for every runtime: a signal (a thread's CPU-time timer, our
// sampler thread's, or the runtime's own sampler through its hook: Mono's sample-hit callback) lands
// in take_sample() on the interrupted thread, which fills a record of the pool.
//
// What the handler may do, and why each step is safe there:
// * pop a record from the pool's lock-free stack (CAS on a preallocated word; no lock);
// * read the clock (the cycle counter or the vDSO), pthread_self() (a TLS read), the ucontext's registers;
// * copy the top of the interrupted stack with process_vm_readv(2) on our own pid: a system call
//   (async-signal-safe) that stops at the first unmapped page instead of faulting, so it needs no
//   knowledge of where the thread's stack ends;
// * walk the managed frames with the runtime's async-safe walk when it gave one (set_handler_walk:
//   Mono's mono_stack_walk_async_safe, made for exactly this; .NET gives none: its frames are
//   unwound by the helper from the stack copy);
// * in CPU-time mode read the thread's CPU clock (clock_gettime, a system call) and look at the
//   interrupted instruction, to record only threads that used CPU (ThreadClock below); the
//   thread's clock state is in initial-exec TLS (no allocation, no lock, no dynamic linker).
// Nothing here allocates, takes a lock, or enters the dynamic linker (libmlpd is linked -z now, so
// every PLT slot is bound before the first signal). errno is saved and restored.
// The native frames are unwound later, on the helper thread (sample_drain.cpp).
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "mlpd/format.h"
#include "mlpd/rt/clock.h"
#include "cpu_timers.h"
#include "sample_pool.h"
#include "sample_capture.h"

namespace mlpd::hooks {

namespace sampling_detail {
Pool* g_pool = nullptr;
Counters g_counters;
rt::MetaLog* g_sample_meta = nullptr;
}  // namespace sampling_detail

using namespace sampling_detail;

namespace {

std::atomic<bool> g_sampling_on{false};
std::atomic<uint8_t> g_mode{kSampleOff};  // changed at run time by set_sample_rate()
pid_t g_pid = 0;  // getpid() is a system call in current glibc: taken once
std::atomic<uint64_t> g_period_ns{10'000'000};  // 1e9 / the rate asked for
std::atomic<uint32_t> g_freq{0};
std::atomic<HandlerWalk> g_handler_walk{nullptr};   // the runtime's async-safe walk of managed frames
std::atomic<const char*> g_runtime_sampler{nullptr};  // the runtime's sampler thread signals (its name)

// Each thread's clock as its signals saw it. `sample` (CPU time): Mono's sampler signals EVERY
// attached thread each time the process has used one period of CPU, so charging every signal
// would charge threads that were asleep. Instead a thread earns credit as its own CPU clock
// (CLOCK_THREAD_CPUTIME_ID: a system call, async-signal-safe) advances, and a signal records a
// sample only when the thread has earned a whole period since its last sample and is not blocked
// in the kernel right now; the sample then spends one period. The samples of a thread therefore
// follow its CPU time (hits = CPU seconds x rate while the signals keep up), and a thread that
// used no CPU is never charged. A new thread starts with a random phase in [0, period), so that
// a short-lived thread that used c < period is charged with probability c/period, not never.
// Credit is capped at kMaxCredit periods: when the signals come slower than the rate asked for
// (the kernel's CPU-time timers expire on scheduler ticks: about 250 Hz at most), the CPU they
// could not sample is not charged later, to a moment when the thread may be doing something else;
// the rate delivered is recorded instead (SampleStats::clock_ns, the "Sample rate delivered"
// counter). `sample-real` records every signal; its wall clock is accounted the same way.
struct ThreadClock {
  uint64_t last_cpu_ns;   // CPU clock at the previous signal; 0: no signal seen yet
  uint64_t last_wall_ns;  // `sample-real`: rt::now_ns() at the previous signal; 0: none yet
  int64_t credit_ns;      // CPU time used and not yet charged to a sample
  int64_t last_nvcsw;     // voluntary context switches at the previous signal
  uint64_t signal_ns;     // what one signal costs the thread when it wakes it (running mean)
  bool was_blocked;       // the previous signal found the thread blocked in the kernel
};
thread_local constinit ThreadClock tls_clock __attribute__((tls_model("initial-exec"), visibility("hidden"))) = {};
inline constexpr int64_t kMaxCredit = 2;

// `sample`: true when this signal is to be recorded (see ThreadClock).
bool charge_cpu(const ucontext_t* uc) {
  const bool blocked = uc && arch::blocked_in_kernel(*uc);
  rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return !blocked;
  const uint64_t cpu = (static_cast<uint64_t>(ru.ru_utime.tv_sec) + static_cast<uint64_t>(ru.ru_stime.tv_sec)) * 1'000'000'000u +
                       (static_cast<uint64_t>(ru.ru_utime.tv_usec) + static_cast<uint64_t>(ru.ru_stime.tv_usec)) * 1000u;
  const auto period = static_cast<int64_t>(g_period_ns.load(std::memory_order_relaxed));
  ThreadClock& t = tls_clock;
  if (t.last_cpu_ns == 0 || cpu < t.last_cpu_ns) {
    // First signal of this thread (or of a fork child's thread: its clock restarted): what it used
    // before counts, from a random phase (the cycle counter's low bits mixed with the thread).
    const uint64_t mix = (rt::now_ns() ^ static_cast<uint64_t>(pthread_self())) * 0x9E3779B97F4A7C15u;
    t.credit_ns = static_cast<int64_t>((mix >> 17) % static_cast<uint64_t>(period));
    t.last_cpu_ns = 0;
    t.last_nvcsw = ru.ru_nvcsw;
    t.was_blocked = false;
  }
  uint64_t used = cpu - t.last_cpu_ns;
  // Blocked at this signal and at the previous one, and switched out only once since (when it went
  // back to sleep after the previous signal): nothing but our signals woke the thread, and the CPU
  // it used is what receiving a signal costs it (waking, the handler, returning, waiting again:
  // 5-20 us here), the profiler's, not the program's. That cost, measured so (a running mean), is
  // also taken off the CPU a thread that this signal found blocked used since the previous one.
  const bool only_signals = blocked && t.was_blocked && ru.ru_nvcsw - t.last_nvcsw <= 1;
  t.last_cpu_ns = cpu ? cpu : 1;
  t.last_nvcsw = ru.ru_nvcsw;
  t.was_blocked = blocked;
  if (only_signals) {
    t.signal_ns = t.signal_ns == 0 ? used : t.signal_ns - t.signal_ns / 8 + used / 8;
    return false;
  }
  if (blocked) used = used > t.signal_ns ? used - t.signal_ns : 0;
  g_counters.clock_ns.fetch_add(used, std::memory_order_relaxed);
  t.credit_ns = std::min(t.credit_ns + static_cast<int64_t>(std::min<uint64_t>(used, INT64_MAX / 4)), kMaxCredit * period);
  // Earned, but not running now (blocked, or just back from a wait): the credit is kept.
  if (t.credit_ns < period || blocked || (uc && arch::back_from_wait(*uc))) return false;
  t.credit_ns -= period;
  return true;
}

// `sample-real`: every signal is recorded; the wall time since the thread's previous signal is the
// time the sample stands for.
void account_wall() {
  const uint64_t now = rt::now_ns();
  ThreadClock& t = tls_clock;
  if (t.last_wall_ns != 0 && now > t.last_wall_ns) g_counters.clock_ns.fetch_add(now - t.last_wall_ns, std::memory_order_relaxed);
  t.last_wall_ns = now;
}

inline void count(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

#if MLPD_ARCH_NATIVE_UNWIND
// Copies [sp, sp + kStackCopyBytes) as far as it is mapped, page by page so that the copy stops at
// the end of the stack mapping (process_vm_readv transfers whole iovec elements up to the first
// one that faults).
uint32_t copy_stack(uint64_t sp, unsigned char* out) {
  constexpr uint64_t kPage = 4096;
  iovec local[kStackCopyBytes / kPage + 1];
  iovec remote[kStackCopyBytes / kPage + 1];
  int n = 0;
  uint64_t at = sp;
  const uint64_t end = sp + kStackCopyBytes;
  while (at < end) {
    const uint64_t next = std::min(end, (at & ~(kPage - 1)) + kPage);
    local[n].iov_base = out + (at - sp);
    local[n].iov_len = next - at;
    remote[n].iov_base = reinterpret_cast<void*>(at);
    remote[n].iov_len = next - at;
    ++n;
    at = next;
  }
  const ssize_t got = process_vm_readv(g_pid, local, static_cast<unsigned long>(n), remote,
                                       static_cast<unsigned long>(n), 0);
  return got > 0 ? static_cast<uint32_t>(got) : 0;
}
#endif

// `managed`: the thread is attached to the runtime (Mono's sampler signals only those; ours signals
// every thread and asks the runtime in its handler). `timer_periods`: 0 for a signal of a sampler
// thread (Mono's or ours), which the thread's own clock then charges (charge_cpu, account_wall);
// else the signal is the expiry of this thread's CPU-time timer (cpu_timers.h): it stands for
// exactly that many periods of this thread's CPU (1 + the timer's overrun: the periods that passed
// before the kernel's tick found the thread running are in the clock, not in the hits).
void take_sample(const void* ip, const void* context, bool managed, uint64_t timer_periods) {
  const int saved_errno = errno;
  if (!g_sampling_on.load(std::memory_order_relaxed)) {
    count(g_counters.dropped_shutdown);
    errno = saved_errno;
    return;
  }
  const auto* uc = static_cast<const ucontext_t*>(context);
  if (timer_periods) {
    if (g_mode.load(std::memory_order_relaxed) != kSampleProcess) {  // a late expiry after a mode change
      count(g_counters.skipped_idle);
      errno = saved_errno;
      return;
    }
    g_counters.clock_ns.fetch_add(timer_periods * g_period_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
    // The period ended while the thread was entering or leaving a wait (the tick found it in the
    // kernel, going to sleep or just woken; the signal is handled on its way back): that CPU is the
    // wait's own cost, which `sample` does not charge to the wait (as charge_cpu does not). Counted
    // as idle; the clock has the period, so the rate delivered shows it.
    if (uc && (arch::blocked_in_kernel(*uc) || arch::back_from_wait(*uc))) {
      count(g_counters.skipped_idle);
      errno = saved_errno;
      return;
    }
  } else if (g_mode.load(std::memory_order_relaxed) == kSampleProcess) {
    if (!charge_cpu(uc)) {
      count(g_counters.skipped_idle);
      errno = saved_errno;
      return;
    }
  } else {
    account_wall();
  }
  Record* r = g_pool->pop();
  if (!r) {
    // Closed: the final drain has run (this handler passed the on-check just before the stop).
    count(g_pool->closed() ? g_counters.dropped_shutdown : g_counters.dropped_pool_full);
    errno = saved_errno;
    return;
  }
  std::atomic<uint32_t>& state = g_pool->state(r);
  state.store(kWriting, std::memory_order_relaxed);
  r->time = rt::now_ns();
  r->tid = static_cast<uint64_t>(pthread_self());
  r->os_tid = static_cast<int32_t>(syscall(SYS_gettid));
  r->ip = reinterpret_cast<uint64_t>(ip);
  r->nframes = 0;
  r->truncated = 0;
  r->stack_len = 0;
  r->stack_addr = 0;
  if (uc) {
    arch::signal_registers(*uc, r->regs);  // the machine's registers, libunwind's order (arch/)
#if MLPD_ARCH_NATIVE_UNWIND
    r->stack_addr = r->regs[arch::kRegSp];
#endif
    r->leaf_offset = -1;
    if (g_pool->maxframes && managed) {
      if (HandlerWalk walk = g_handler_walk.load(std::memory_order_relaxed)) walk(context, r);
    }
    // The leaf is managed code when the innermost managed frame is at the interrupted IP itself:
    // there are no native frames to unwind, so the stack copy (most of the handler's cost) is skipped.
    const bool managed_leaf = r->nframes > 0 && r->leaf_offset >= 0 &&
                              r->leaf_code_start + static_cast<uint64_t>(r->leaf_offset) == r->ip;
    // maxframes=0: the leaf IP only, nothing to unwind; a machine without native unwinding (arch/
    // generic) keeps the leaf IP only too.
#if MLPD_ARCH_NATIVE_UNWIND
    if (!managed_leaf && g_pool->maxframes > 0) {
      r->stack_len = copy_stack(r->stack_addr, r->stack);
      if (r->stack_len == 0) count(g_counters.stack_copy_failed);
    }
#else
    (void)managed_leaf;
#endif
  } else {
    for (uint64_t& reg : r->regs) reg = 0;
    r->regs[arch::kRegIp] = r->ip;
  }
  const uint64_t spent = rt::now_ns() - r->time;
  state.store(kReady, std::memory_order_release);
  g_counters.handler_ns.fetch_add(spent, std::memory_order_relaxed);
  errno = saved_errno;
}

}  // namespace

bool start_sample_pool(const SamplingConfig& config, rt::MetaLog* meta, std::string& error) {
  if (config.mode == kSampleOff) return true;
  const uint64_t want = std::clamp<uint64_t>(config.pool, 1, kMaxSamplePool);
  // Address space only: a record's pages are touched (faulted in) when a handler first fills it (the
  // free stack and the states are in the separate slot array), and the free stack hands out recently
  // freed records first, so a program sampled at a steady rate keeps only a few records resident.
  const size_t bytes = want * sizeof(Record);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) {
    error = "cannot map " + std::to_string(bytes >> 20) + " MiB for " + std::to_string(want) + " sample records";
    return false;
  }
  auto* pool = new (std::nothrow) Pool;
  auto* slots = new (std::nothrow) Slot[want]();  // zeroed: FREE, no link
  if (!pool || !slots) {
    munmap(mem, bytes);
    delete pool;
    delete[] slots;
    error = "out of memory";
    return false;
  }
  pool->records = static_cast<Record*>(mem);
  pool->slots = slots;
  pool->count = static_cast<uint32_t>(want);
  // maxframes below Mono's 32 limits samples too (0: the leaf IP only); the default (32) lets them
  // keep kMaxSampleFrames.
  pool->maxframes = config.maxframes < format::kMaxFrames ? config.maxframes : kMaxSampleFrames;
  // Free stack: record 0 on top. Touches the slot array only, no record page.
  for (uint32_t i = pool->count; i-- > 0;) pool->push(&pool->records[i]);
  install_fork_guard();
  g_pool = pool;
  g_sample_meta = meta;
  g_mode.store(config.mode);
  g_freq.store(config.freq);
  g_period_ns.store(1'000'000'000u / std::max<uint32_t>(config.freq, 1));
  g_pid = getpid();
  g_sampling_on.store(true, std::memory_order_release);
  return true;
}

void sample_from_signal(const void* context, bool managed) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  uint64_t regs[arch::kSignalRegs] = {};
  arch::signal_registers(*uc, regs);
  take_sample(reinterpret_cast<const void*>(regs[arch::kRegIp]), context, managed, 0);
}

void sample_from_timer(const void* context, bool managed, uint64_t periods) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  uint64_t regs[arch::kSignalRegs] = {};
  arch::signal_registers(*uc, regs);
  take_sample(reinterpret_cast<const void*>(regs[arch::kRegIp]), context, managed, periods ? periods : 1);
}

namespace {
std::atomic<bool (*)()> g_managed_check{nullptr};
}  // namespace

void set_managed_thread_check(bool (*check)()) { g_managed_check.store(check, std::memory_order_release); }

bool sampled_thread_managed() {
  bool (*check)() = g_managed_check.load(std::memory_order_acquire);
  return check && check();
}

bool managed_walk_in_handler() { return g_managed_check.load(std::memory_order_acquire) != nullptr; }

void set_sample_rate(uint8_t mode, uint32_t freq) {
  g_period_ns.store(1'000'000'000u / std::max<uint32_t>(freq, 1), std::memory_order_relaxed);
  g_freq.store(mode == kSampleOff ? 0 : freq, std::memory_order_relaxed);
  g_mode.store(mode, std::memory_order_relaxed);
}

void sample_hit(const void* ip, const void* context) { take_sample(ip, context, true, 0); }

void set_handler_walk(HandlerWalk walk) { g_handler_walk.store(walk, std::memory_order_release); }

void set_runtime_sampler(const char* name) { g_runtime_sampler.store(name, std::memory_order_release); }

void stop_sampling() { g_sampling_on.store(false, std::memory_order_release); }

void release_sample_pages() {
  Pool* pool = g_pool;
  if (pool && pool->records) madvise(pool->records, size_t{pool->count} * sizeof(Record), MADV_DONTNEED);
}

std::string cpu_timers_not_used() { return cpu_timers::running() ? std::string() : cpu_timers::why_not(); }

SampleStats sample_stats() {
  SampleStats s;
  const Counters& c = g_counters;
  s.taken = c.taken.load(std::memory_order_relaxed);
  s.written = c.written.load(std::memory_order_relaxed);
  s.skipped_idle = c.skipped_idle.load(std::memory_order_relaxed);
  s.dropped_pool_full = c.dropped_pool_full.load(std::memory_order_relaxed);
  s.dropped_shutdown = c.dropped_shutdown.load(std::memory_order_relaxed);
  s.dropped_unfinished = c.dropped_unfinished.load(std::memory_order_relaxed);
  s.stack_copy_failed = c.stack_copy_failed.load(std::memory_order_relaxed);
  s.unwind_failed = c.unwind_failed.load(std::memory_order_relaxed);
  s.frames_left_out = c.frames_left_out.load(std::memory_order_relaxed);
  s.handler_ns = c.handler_ns.load(std::memory_order_relaxed);
  s.drain_ns = c.drain_ns.load(std::memory_order_relaxed);
  s.truncated = c.truncated.load(std::memory_order_relaxed);
  s.cut_unnamed = c.cut_unnamed.load(std::memory_order_relaxed);
  s.cut_copy = c.cut_copy.load(std::memory_order_relaxed);
  s.clock_ns = c.clock_ns.load(std::memory_order_relaxed);
  s.freq = g_freq.load(std::memory_order_relaxed);
  const uint8_t mode = g_mode.load(std::memory_order_relaxed);
  const char* runtime_sampler = g_runtime_sampler.load(std::memory_order_acquire);
  s.engine = mode == kSampleProcess && cpu_timers::running() ? "per-thread CPU timers"
             : runtime_sampler                                ? runtime_sampler
                                                              : "mlpd-sampler thread";
  s.threads_without_timer = cpu_timers::threads_without_timer();
  return s;
}

}  // namespace mlpd::hooks
