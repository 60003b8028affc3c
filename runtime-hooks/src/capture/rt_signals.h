// Real-time signals of our own (late_sampler.cpp): shared by the attach sampler and the CPU timers.
#pragma once

namespace mlpd::hooks {

// The highest real-time signal with the default action and no handler (the runtime takes its own
// from the lowest); 0 when none is free.
int free_rt_signal();
// Whether any thread of the process still has `sig` pending (sent, not yet handled).
bool signal_pending_anywhere(int sig);
// Waits (bounded, ~1 s) until no thread has `sig` pending, then puts `previous` back as its action
// and returns true; false (the handler stays, doing nothing) when one stays pending.
bool restore_when_not_pending(int sig, const struct sigaction& previous);

}  // namespace mlpd::hooks
