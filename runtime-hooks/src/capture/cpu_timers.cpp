// Per-thread CPU-time timers for `sample` (cpu_timers.h).
#include "cpu_timers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "mlpd/capture/sampling.h"
#include "rt_signals.h"

namespace mlpd::hooks::cpu_timers {

namespace {

// The clock id of thread `tid`'s CPU clock (CPUCLOCK_SCHED: the scheduler's precise runtime).
// The encoding is the kernel's ABI: include/linux/posix-timers_types.h (kernel) and glibc's
// sysdeps/unix/sysv/linux/kernel-posix-cpu-timers.h define MAKE_THREAD_CPUCLOCK(tid, clock) as
// ((~tid) << 3) | clock | CPUCLOCK_PERTHREAD_MASK, with CPUCLOCK_SCHED 2 and CPUCLOCK_PERTHREAD_MASK
// 4; glibc's pthread_getcpuclockid returns exactly this, and start() checks it does here before
// relying on it. The kernel lets a thread use another thread's clock only in the same process.
clockid_t thread_cpu_clock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
}

int g_signal = 0;
struct sigaction g_previous {};
pthread_t g_thread{};
bool g_started = false;
std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_want_ns{0};  // the period asked for; 0: no timers
std::atomic<uint64_t> g_without{0};
// Why start() failed. Plain storage, no constructor: start() runs from the preload's constructor,
// possibly before this file's dynamic initialisers.
char g_why[160];
void set_why(const char* what, int err = 0) {
  std::snprintf(g_why, sizeof g_why, "%s%s%s", what, err ? ": " : "", err ? std::strerror(err) : "");
}
pid_t g_probe_tid = 0;  // start()'s thread: the scanner's first timer is on its clock
sem_t g_probed;
int g_probe_errno = 0;
bool g_atfork = false;

void on_timer(int, siginfo_t* si, void* context) {
  const int saved = errno;
  // Only our timers' expiries: anything else on this signal (a stray kill) is not a CPU period.
  if (si && si->si_code == SI_TIMER) {
    // Whether the runtime walks this thread's managed frames (sampling.h).
    const bool managed = sampled_thread_managed();
    sample_from_timer(context, managed, 1 + static_cast<uint64_t>(si->si_overrun > 0 ? si->si_overrun : 0));
  }
  errno = saved;
}

timespec as_timespec(uint64_t ns) { return {static_cast<time_t>(ns / 1'000'000'000u), static_cast<long>(ns % 1'000'000'000u)}; }

// A timer on `tid`'s CPU clock signalling `tid`; 0 or the errno of the failure.
int make_timer(pid_t tid, uint64_t period_ns, timer_t* out) {
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = g_signal;
  sev._sigev_un._tid = tid;  // sigev_notify_thread_id (glibc 2.35 names it; this works with all)
  if (timer_create(thread_cpu_clock(tid), &sev, out) != 0) return errno;
  // The first expiry at a random point of the first period (the thread's CPU from now on): a thread
  // that uses c < one period is then sampled with probability c / period, not never.
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t mix = (static_cast<uint64_t>(now.tv_nsec) ^ (static_cast<uint64_t>(tid) << 32)) * 0x9E3779B97F4A7C15u;
  const itimerspec its{as_timespec(period_ns), as_timespec(1 + (mix >> 17) % period_ns)};
  if (timer_settime(*out, 0, &its, nullptr) != 0) {
    const int e = errno;
    timer_delete(*out);
    return e;
  }
  return 0;
}

// One of our own threads (named mlpd-...): not sampled.
bool ours(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[17] = {};
  const ssize_t n = read(fd, name, 16);
  close(fd);
  return n >= 5 && std::memcmp(name, "mlpd-", 5) == 0;
}

enum class State : uint8_t { armed, none, ours };
struct Entry {
  timer_t id{};
  uint64_t seen = 0;
  State state = State::none;
  bool rechecked = false;  // named again at its second scan (a thread may name itself after starting)
};

void* scanner_main(void*) {
  pthread_setname_np(pthread_self(), "mlpd-ctimer");
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  // The check start() waits for: a timer on another thread's CPU clock, signalling that thread.
  timer_t probe{};
  g_probe_errno = make_timer(g_probe_tid, 1'000'000'000'000u, &probe);
  if (g_probe_errno == 0) timer_delete(probe);
  DIR* tasks = g_probe_errno == 0 ? opendir("/proc/self/task") : nullptr;
  if (g_probe_errno == 0 && !tasks) g_probe_errno = errno ? errno : EIO;
  sem_post(&g_probed);
  if (!tasks) return nullptr;
  std::unordered_map<pid_t, Entry> timers;
  uint64_t armed_ns = 0, scan = 0;
  auto arm = [&](pid_t tid, Entry& e) {
    const int err = make_timer(tid, armed_ns, &e.id);
    if (err == 0) {
      e.state = State::armed;
    } else {
      // EAGAIN: no room for another timer (RLIMIT_SIGPENDING); EINVAL: the thread just ended.
      if (err == EAGAIN && e.state != State::none) g_without.fetch_add(1, std::memory_order_relaxed);
      e.state = State::none;
    }
  };
  auto drop_all = [&] {
    for (auto& [tid, e] : timers) {
      if (e.state == State::armed) timer_delete(e.id);
    }
    timers.clear();
  };
  const timespec pause = as_timespec(10'000'000);
  while (!g_stop.load(std::memory_order_acquire)) {
    const uint64_t want = g_want_ns.load(std::memory_order_relaxed);
    if (want != armed_ns) {
      drop_all();
      armed_ns = want;
    }
    if (armed_ns) {
      ++scan;
      rewinddir(tasks);
      while (dirent* d = readdir(tasks)) {
        if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
        const pid_t tid = static_cast<pid_t>(std::atoi(d->d_name));
        if (tid == self) continue;
        auto [it, fresh] = timers.try_emplace(tid);
        Entry& e = it->second;
        e.seen = scan;
        if (fresh) {
          e.state = State::armed;  // so that a first EAGAIN is counted (arm() compares)
          if (ours(tid)) e.state = State::ours;
          else arm(tid, e);
          continue;
        }
        if (e.state == State::none) {
          if (scan % 100 == 0) arm(tid, e);  // retried every second
        } else if (e.state == State::armed) {
          if (!e.rechecked) {
            e.rechecked = true;
            if (ours(tid)) {
              timer_delete(e.id);
              e.state = State::ours;
              continue;
            }
          }
          // The thread the timer was made for has ended and a new one got its id since the last
          // scan: the kernel reports such a timer disarmed (no interval); the new thread gets its own.
          itimerspec cur{};
          if (scan % 4 == 0 && timer_gettime(e.id, &cur) == 0 && cur.it_interval.tv_sec == 0 && cur.it_interval.tv_nsec == 0) {
            timer_delete(e.id);
            arm(tid, e);
          }
        }
      }
      for (auto it = timers.begin(); it != timers.end();) {
        if (it->second.seen == scan) {
          ++it;
          continue;
        }
        if (it->second.state == State::armed) timer_delete(it->second.id);  // the thread has ended
        it = timers.erase(it);
      }
    }
    nanosleep(&pause, nullptr);
  }
  drop_all();
  closedir(tasks);
  return nullptr;
}

void after_fork_child() {
  // Neither the thread nor the timers exist in a fork child; the handler stays (no signal comes).
  g_started = false;
}

}  // namespace

bool start(uint64_t period_ns) {
  g_why[0] = 0;
  if (g_started) {
    set_why("running already");
    return false;
  }
  if (const char* no = std::getenv("MLPD_TEST_NO_CTIMER"); no && *no && *no != '0') {
    set_why("turned off by MLPD_TEST_NO_CTIMER");
    return false;
  }
  // The clock encoding we rely on is glibc's for this very thread.
  clockid_t mine{};
  g_probe_tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (pthread_getcpuclockid(pthread_self(), &mine) != 0 || mine != thread_cpu_clock(g_probe_tid)) {
    set_why("thread CPU clock ids are not encoded as expected");
    return false;
  }
  g_signal = free_rt_signal();
  if (!g_signal) {
    set_why("no free real-time signal");
    return false;
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_timer;
  sigfillset(&sa.sa_mask);  // every signal held off while the handler walks the stack (late_sampler.cpp)
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  if (sigaction(g_signal, &sa, &g_previous) != 0) {
    set_why("cannot install a signal handler", errno);
    g_signal = 0;
    return false;
  }
  g_stop.store(false);
  g_want_ns.store(period_ns);
  sem_init(&g_probed, 0, 0);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the host's signals are not ours to take
  const int rc = pthread_create(&g_thread, nullptr, scanner_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    sigaction(g_signal, &g_previous, nullptr);
    g_signal = 0;
    set_why("cannot start the timer thread", rc);
    return false;
  }
  while (sem_wait(&g_probed) != 0 && errno == EINTR) {
  }
  if (g_probe_errno != 0) {
    pthread_join(g_thread, nullptr);
    sigaction(g_signal, &g_previous, nullptr);  // no timer was armed: nothing can be pending
    g_signal = 0;
    set_why("no timer on another thread's CPU clock", g_probe_errno);
    return false;
  }
  if (!g_atfork) {
    pthread_atfork(nullptr, nullptr, after_fork_child);
    g_atfork = true;
  }
  g_started = true;
  return true;
}

void set_period(uint64_t period_ns) { g_want_ns.store(period_ns, std::memory_order_relaxed); }

bool running() { return g_started; }

void stop() {
  if (!g_started) return;
  g_stop.store(true, std::memory_order_release);
  pthread_join(g_thread, nullptr);
  g_started = false;
  if (restore_when_not_pending(g_signal, g_previous)) g_signal = 0;
}

std::string why_not() { return g_why; }

uint64_t threads_without_timer() { return g_without.load(std::memory_order_relaxed); }

}  // namespace mlpd::hooks::cpu_timers
