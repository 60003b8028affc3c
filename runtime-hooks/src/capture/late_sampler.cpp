// Our own sampler for an attached agent (late_sampler.h).
#include "mlpd/capture/late_sampler.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mlpd/capture/sampling.h"
#include "sample_capture.h"
#include "cpu_timers.h"
#include "rt_signals.h"

namespace mlpd::hooks {

namespace {

int g_signal = 0;                // the signal we took (0: none)
struct sigaction g_previous {};  // its action before us, put back by stop_late_sampling()
pthread_t g_thread{};
bool g_thread_started = false;
std::atomic<bool> g_stop{false};
uint8_t g_mode = kSampleProcess;
uint64_t g_period_ns = 10'000'000;

void on_signal(int, siginfo_t*, void* context) {
  const int saved = errno;
  const bool managed = sampled_thread_managed();  // sampling.h
  sample_from_signal(context, managed);
  errno = saved;
}

uint64_t clock_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void* sampler_main(void*) {
  pthread_setname_np(pthread_self(), "mlpd-sampler");
  const pid_t pid = getpid();
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return nullptr;
  uint64_t last_cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  const timespec period{static_cast<time_t>(g_period_ns / 1'000'000'000u), static_cast<long>(g_period_ns % 1'000'000'000u)};
  while (!g_stop.load(std::memory_order_acquire)) {
    nanosleep(&period, nullptr);
    if (g_mode == kSampleProcess) {
      // `sample`: a round each time the process has used one period of CPU (as Mono's sampler); the
      // handler then charges each thread by its own CPU clock.
      const uint64_t cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
      if (cpu - last_cpu < g_period_ns) continue;
      last_cpu = cpu;
    }
    rewinddir(tasks);
    while (dirent* e = readdir(tasks)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      if (tid != self && !g_stop.load(std::memory_order_relaxed)) syscall(SYS_tgkill, pid, tid, g_signal);
    }
  }
  closedir(tasks);
  return nullptr;
}

}  // namespace

// The highest real-time signal with the default action: the runtime takes its own from the lowest.
int free_rt_signal() {
  for (int s = SIGRTMAX; s > SIGRTMIN + 2; --s) {
    struct sigaction cur {};
    if (sigaction(s, nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) return s;
  }
  return 0;
}

// Whether any thread of the process still has `sig` pending (sent, not yet handled).
bool signal_pending_anywhere(int sig) {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return false;
  bool pending = false;
  const uint64_t bit = uint64_t{1} << (sig - 1);
  while (dirent* e = readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/status";
    FILE* f = std::fopen(path.c_str(), "re");
    if (!f) continue;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "SigPnd:", 7) == 0 || std::strncmp(line, "ShdPnd:", 7) == 0) {
        if (std::strtoull(line + 7, nullptr, 16) & bit) pending = true;
      }
    }
    std::fclose(f);
  }
  closedir(tasks);
  return pending;
}

bool restore_when_not_pending(int sig, const struct sigaction& previous) {
  // A signal sent just before the stop may still be on its way to a thread; the default action of
  // a real-time signal ends the process, so the handler stays until none is pending (a thread that
  // blocks the signal keeps it pending: then the handler, which does nothing now, stays for good).
  for (int i = 0; i < 200 && signal_pending_anywhere(sig); ++i) {
    const timespec ms{0, 5'000'000};
    nanosleep(&ms, nullptr);
  }
  if (signal_pending_anywhere(sig)) return false;
  sigaction(sig, &previous, nullptr);
  return true;
}

bool start_late_sampling(const SamplingConfig& config, rt::MetaLog* meta, std::string& error) {
  if (config.mode == kSampleOff) return true;
  if (g_thread_started || cpu_timers::running()) {
    error = "sampling is running already";
    return false;
  }
  if (!start_sample_pool(config, meta, error)) return false;
  // `sample`: per-thread CPU-time timers (cpu_timers.h) when the kernel has them; else our sampler
  // thread below, as before.
  if (config.mode == kSampleProcess && cpu_timers::start(1'000'000'000u / std::max<uint32_t>(config.freq, 1))) return true;
  g_signal = free_rt_signal();
  if (!g_signal) {
    stop_sampling();
    error = "sampling: no free real-time signal in this process";
    return false;
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  // Every signal held off while the handler walks the stack: the runtime's suspend signal must not
  // stop a thread in the middle of its walk (Mono's own sampling handler marks itself an async
  // context for that, which an agent cannot).
  sigfillset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  if (sigaction(g_signal, &sa, &g_previous) != 0) {
    stop_sampling();
    error = std::string("sampling: cannot install a signal handler: ") + std::strerror(errno);
    g_signal = 0;
    return false;
  }
  g_mode = config.mode;
  g_period_ns = 1'000'000'000u / std::max<uint32_t>(config.freq, 1);
  g_stop.store(false);
  // Every signal blocked in our thread: the host's signals are not ours to take.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&g_thread, nullptr, sampler_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    stop_sampling();
    sigaction(g_signal, &g_previous, nullptr);
    g_signal = 0;
    error = "sampling: cannot start the sampler thread";
    return false;
  }
  g_thread_started = true;
  return true;
}

void stop_late_sampling() {
  if (cpu_timers::running()) {
    stop_sampling();
    cpu_timers::stop();
    release_sample_pages();
    return;
  }
  if (!g_thread_started) return;
  g_stop.store(true, std::memory_order_release);
  pthread_join(g_thread, nullptr);
  g_thread_started = false;
  stop_sampling();
  if (restore_when_not_pending(g_signal, g_previous)) g_signal = 0;
  release_sample_pages();  // this session's records; the next attach makes its own pool
}

}  // namespace mlpd::hooks
