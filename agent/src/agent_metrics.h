// What `GET /metrics` answers (`metrics=PORT`; docs/fleet.md has the table): the runtime's metrics
// under the names .NET's own runtime metrics use (System.Runtime, made Prometheus names: dots to
// underscores, the unit, `_total` on counters), from the runtime's counters (Mono's mono-counters,
// CoreCLR's counts; runtime::Runtime::take_new_counters/read_counter), the process's CPU and memory
// from /proc, and the profiler's own health (`mlpd_*`). A value the runtime does not give is left out,
// never written as 0. Rendered on the helper thread when a scrape comes; nothing here runs on a
// program thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "counters.h"
#include "push_sender.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::agent {

struct MetricsInputs {
  runtime::Runtime* runtime = nullptr;
  AgentCounters* counters = nullptr;
  const FlushStats* flush = nullptr;
  const rt::BufferPool* pool = nullptr;
  const rt::WriterShared* shared = nullptr;
  rt::ThreadRegistry* registry = nullptr;
  rt::MetaLog* meta = nullptr;
  bool output_failed = false;
  uint64_t rounds = 0;
  uint64_t scrapes = 0;  // answered before this one
  uint64_t refused = 0;  // connections refused or timed out by the endpoint
  // push= (docs/fleet.md): the sender's and the helper's figures.
  bool push = false;
  PushStats push_sender;
  PushHelperStats push_helper;
};

std::string render_metrics(const MetricsInputs& in);

// The process's figures from /proc/self/stat's text (unit tests): CPU ticks, threads, memory.
struct ProcStat {
  uint64_t utime = 0, stime = 0;  // clock ticks
  uint64_t threads = 0;
  uint64_t vsize = 0;      // bytes
  uint64_t rss_pages = 0;
};
bool parse_proc_self_stat(std::string_view text, ProcStat& out);

}  // namespace mlpd::agent
