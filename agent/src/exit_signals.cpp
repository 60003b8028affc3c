#include "exit_signals.h"

#include <errno.h>
#include <signal.h>

#include <atomic>

#include "mlpd/output_cut.h"

namespace mlpd::agent {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};
// How long the ending waits for a write under way (one buffer: microseconds, unless the disk stalls).
constexpr int kWaitForWriteMs = 5000;
std::atomic<bool> g_ours[3];

void on_exit_signal(int sig);

bool is_ours(const struct sigaction& sa) { return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == &on_exit_signal; }

void set_default(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

// Async-signal-safe: sigaction, the output cut (atomics, nanosleep, fstat, ftruncate), raise.
void on_exit_signal(int sig) {
  const int saved = errno;
  struct sigaction cur {};
  // Called by a handler the program installed after ours (chaining to what it found): the program
  // decides what this signal does, and before us the action was the default, which it would not have
  // called. Nothing to do.
  if (sigaction(sig, nullptr, &cur) != 0 || !is_ours(cur)) {
    errno = saved;
    return;
  }
  output_cut::cut(kWaitForWriteMs);
  set_default(sig);
  // The signal is blocked while its handler runs: it stays pending and, when this returns, the default
  // action ends the process, by this signal, as it would have without us.
  raise(sig);
  errno = saved;
}

}  // namespace

void install_exit_signals() {
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    struct sigaction old {};
    if (sigaction(kSignals[i], nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
      continue;  // the program's (or its parent's) choice
    }
    struct sigaction sa {};
    sa.sa_handler = on_exit_signal;
    sigemptyset(&sa.sa_mask);
    for (const int other : kSignals) sigaddset(&sa.sa_mask, other);  // one ending at a time per thread
    sa.sa_flags = SA_RESTART;
    if (sigaction(kSignals[i], &sa, nullptr) == 0) g_ours[i].store(true);
  }
}

void reset_exit_signals_after_fork() {
  output_cut::forget();
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    if (!g_ours[i].exchange(false)) continue;
    struct sigaction cur {};
    if (sigaction(kSignals[i], nullptr, &cur) == 0 && is_ours(cur)) set_default(kSignals[i]);
  }
}

}  // namespace mlpd::agent
