// The agent's process shell, runtime-neutral: start (called by a runtime's entry points, e.g. Mono's ELF
// constructor check or mono_profiler_init_mlpd, with that runtime behind the door of
// mlpd/runtime/runtime.h), the helper thread, shutdown (runtime shutdown, exit, Environment.Exit), fork.
#pragma once

#include <string>
#include <string_view>

namespace mlpd::runtime {
class Runtime;
}

namespace mlpd::agent {

// Starts profiling with `options` (the MLPD_OPTIONS syntax). `desc` is the whole profiler
// description for the file header when started by Mono (`mlpd:calls`), empty otherwise. Does nothing
// when `runtime` is not present in the process (Runtime::present), and nothing the second time. Never aborts the host: a bad option or
// an output that cannot be opened prints one line on stderr and leaves profiling off.
// `note`: a line to print once the agent knows it is in Mono (choose_options: MLPD_OPTIONS ignored).
// `runtime` is the runtime profiled; it must outlive the process's profiling (a runtime keeps one
// instance for good).
void start(std::string_view options, runtime::Runtime& runtime, std::string_view note = {});

// Attach (`mlpd attach`, docs/attach.md): starts profiling in a runtime that runs already, with what
// the runtime still allows then (Runtime::late_refusal). `message` gets the lines that would have gone to stderr (the output file,
// or why not); false when profiling did not start (refused options, profiled already, ...).
bool start_attached(std::string_view options, runtime::Runtime& runtime, std::string& message);
// Detach: the last data written, the output closed, the helper and sampler ended, the callbacks out
// of the runtime, the signals and the command port given back. Attaching again works afterwards.
bool detach(std::string& message);
// Whether profiling runs (attach: the control thread serves while it does).
bool profiling();

// Writes out everything recorded and closes the output. Idempotent; safe from exit handlers.
void shutdown();

}  // namespace mlpd::agent
