// The signals that end a process by default (TERM, INT, HUP): a kill at any moment leaves a file
// that reads to its last whole round (docs/production.md). Where the program has left the default
// action, a handler of ours cuts the output back (output_cut.h), puts the default action back and
// raises the signal again: the process ends the same way, by the same signal. A signal the program
// (or its parent: nohup) handles or ignores at our start stays its own; a handler it installs later
// replaces ours, and if that handler calls ours (chaining), ours does nothing.
#pragma once

namespace mlpd::agent {

// After profiling started (a file output): installs the handlers where the action is the default.
void install_exit_signals();
// Fork child: the handlers that are still ours go back to the default action.
void reset_exit_signals_after_fork();

}  // namespace mlpd::agent
