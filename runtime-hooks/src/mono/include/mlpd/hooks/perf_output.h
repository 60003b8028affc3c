// The `jitdump` and `perfmap` options: perf's files about JIT'd code (docs/perf.md), written from the
// JIT callbacks (copied there) by the agent's helper thread.
#pragma once

#include <cstdint>
#include <string>

namespace mlpd::hooks::perf {

struct OutputConfig {
  bool jitdump = false;
  std::string jitdump_dir = ".";  // DIR/jit-PID.dump
  bool perfmap = false;           // /tmp/perf-PID.map
  void (*wake)(void*) = nullptr;  // asks the helper for an early drain (async-signal-safe)
  void* wake_ctx = nullptr;
};

// Opens the files (before the runtime JITs anything). False with a one-line reason: the agent says
// it and goes on without them.
bool start(const OutputConfig& config, std::string& error);
bool enabled();

// The JIT callbacks' side (a method's code, a code buffer): mono/perf_callbacks.h.

// Helper thread: write what the callbacks queued; finish() also closes the jitdump with
// JIT_CODE_CLOSE. A write failure is said once (stderr) and that file is written no more.
void drain();
void finish(bool verbose);
// Fork child: the parent's files are left alone; the child writes none.
void forget_after_fork();

}  // namespace mlpd::hooks::perf
