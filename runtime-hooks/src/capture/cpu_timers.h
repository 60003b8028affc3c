// `sample` (CPU time) by per-thread CPU-time timers, the engine async-profiler calls "ctimer".
//
// A thread of ours ("mlpd-ctimer") scans /proc/self/task every 10 ms and gives each thread of the
// process (not ours) a POSIX timer on that thread's own CPU clock, interval one sampling period,
// whose expiry sends a real-time signal nobody uses to that very thread (SIGEV_THREAD_ID). The
// kernel checks a thread's CPU timers on the scheduler ticks that find it running, so each signal
// arrives while its thread uses CPU, once per period of that thread's CPU: hits = CPU-seconds x rate
// for every thread, a spinning one or one that runs in short bursts alike (up to the tick rate,
// CONFIG_HZ: periods shorter than a tick are counted as overruns, see sampler.cpp). A thread that
// is gone has its timer deleted at the next scan; all are deleted at stop. When the kernel (or an
// emulator) refuses such timers, start() says so and the caller keeps the signal-every-thread
// sampler (Mono's, or late_sampler.cpp's).
#pragma once

#include <cstdint>
#include <string>

namespace mlpd::hooks::cpu_timers {

// Installs the signal handler and starts the scanning thread, which first checks that the kernel
// gives a timer on another thread's CPU clock. False (nothing left installed) when it does not, when
// no real-time signal is free, or when MLPD_TEST_NO_CTIMER is set: then why_not() says why.
bool start(uint64_t period_ns);
// The period the timers run at (applied within one scan); 0: no timers (deleted), signals ignored.
void set_period(uint64_t period_ns);
bool running();
// Ends the thread (which deletes every timer), then puts the signal's previous action back once no
// thread has it pending. Does nothing when not running.
void stop();
std::string why_not();
// Threads the timers could not be given (timer_create failed: EAGAIN when RLIMIT_SIGPENDING is
// reached); they are not sampled. Cumulative.
uint64_t threads_without_timer();

}  // namespace mlpd::hooks::cpu_timers
