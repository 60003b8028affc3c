#include "agent_metrics.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <optional>

#include "cpu_counters.h"
#include "mlpd/agent/prometheus_text.h"
#include "mlpd/event.h"
#include "mlpd/format.h"

namespace mlpd::agent {

namespace {

// The runtime's counters this endpoint knows, by the name each runtime gives them (Mono's
// mono-counters names; CoreCLR's as runtime-hooks/src/coreclr/clr_runtime.cpp names them).
enum class Rc {
  GcMinor,        // Mono: collections of the nursery
  GcMajor,        // Mono: collections of the old generation (GC.MaxGeneration is 1)
  GcMinorTime,    // Mono: 100 ns units (COUNTER_UNIT_TIME)
  GcMajorTime,
  ClrGen0,        // CoreCLR: GC.CollectionCount(0) (every collection)
  ClrGen1,        // GC.CollectionCount(1)
  ClrGen2,        // GC.CollectionCount(2)
  ClrPauseNs,
  JitMethods,
  Exceptions,
  HeapBytes,
  Threads,
  Contentions,
};
struct Known {
  std::string_view name;
  Rc id;
  // The events the runtime counts this from (CoreCLR counts in the callbacks the event mask turns
  // on): while they are not recorded the count is not the runtime's, and the series is left out.
  uint32_t needs_mask;
};
constexpr Known kKnown[] = {
    {"Minor GC collections", Rc::GcMinor, 0},
    {"Major GC collections", Rc::GcMajor, 0},
    {"Minor GC time", Rc::GcMinorTime, 0},
    {"Major GC time", Rc::GcMajorTime, 0},
    {"Methods JITted using mono JIT", Rc::JitMethods, 0},
    {"dotnet.gc.collections.gen0", Rc::ClrGen0, format::MASK_GC},
    {"dotnet.gc.collections.gen1", Rc::ClrGen1, format::MASK_GC},
    {"dotnet.gc.collections.gen2", Rc::ClrGen2, format::MASK_GC},
    {"dotnet.gc.pause.time (ns)", Rc::ClrPauseNs, format::MASK_GC},
    {"dotnet.jit.compiled_methods", Rc::JitMethods, 0},
    {"dotnet.exceptions", Rc::Exceptions, format::MASK_EXCEPTION},
    {"dotnet.gc.heap.size", Rc::HeapBytes, format::MASK_GC},
    {"dotnet.thread.count", Rc::Threads, 0},
};

using Values = std::map<Rc, uint64_t>;

std::optional<uint64_t> get(const Values& v, Rc id) {
  const auto it = v.find(id);
  if (it == v.end()) return std::nullopt;
  return it->second;
}

Values read_runtime(AgentCounters& counters) {
  Values v;
  runtime::Runtime& rt = counters.runtime();
  const uint32_t mask = rt.event_mask();
  for (const runtime::Counter& c : counters.runtime_counters()) {
    for (const Known& k : kKnown) {
      if (c.desc.name != k.name) continue;
      if ((mask & k.needs_mask) != k.needs_mask) break;
      uint64_t bits = 0;
      if (!rt.read_counter(c, bits)) break;
      // Signed 4-byte counters zero-extend (runtime_counters.cpp); a negative one is not a count.
      if (c.desc.type == format::COUNTER_INT && c.size == 4 && (bits & 0x80000000u)) break;
      if (c.desc.type == format::COUNTER_DOUBLE) break;
      v[k.id] = bits;
      break;
    }
  }
  return v;
}

double seconds_of_ticks(uint64_t ticks) {
  static const long hz = ::sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks) / static_cast<double>(hz > 0 ? hz : 100);
}

bool read_proc_stat(ProcStat& out) {
  char buf[1024];
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  return parse_proc_self_stat(std::string_view(buf, static_cast<size_t>(n)), out);
}

void runtime_metrics(PromText& p, const Values& v) {
  // dotnet.gc.collections: the collections whose oldest generation collected was gc.heap.generation
  // (.NET: GC.CollectionCount(g) - GC.CollectionCount(g + 1)).
  const auto c0 = get(v, Rc::ClrGen0), c1 = get(v, Rc::ClrGen1), c2 = get(v, Rc::ClrGen2);
  const auto minor = get(v, Rc::GcMinor), major = get(v, Rc::GcMajor);
  if ((c0 && c1 && c2) || (minor && major)) {
    p.family("dotnet_gc_collections_total", "counter",
             "Garbage collections since the process started, by the oldest generation collected.");
    if (c0 && c1 && c2) {
      p.sample("dotnet_gc_collections_total", {{"gc_heap_generation", "gen0"}}, *c0 >= *c1 ? *c0 - *c1 : uint64_t{0});
      p.sample("dotnet_gc_collections_total", {{"gc_heap_generation", "gen1"}}, *c1 >= *c2 ? *c1 - *c2 : uint64_t{0});
      p.sample("dotnet_gc_collections_total", {{"gc_heap_generation", "gen2"}}, *c2);
    } else {
      // Mono's SGen: a minor collection collects the nursery (gen0), a major one the whole heap
      // (gen1, Mono's GC.MaxGeneration).
      p.sample("dotnet_gc_collections_total", {{"gc_heap_generation", "gen0"}}, *minor);
      p.sample("dotnet_gc_collections_total", {{"gc_heap_generation", "gen1"}}, *major);
    }
  }
  std::optional<double> pause;
  if (const auto ns = get(v, Rc::ClrPauseNs)) pause = static_cast<double>(*ns) / 1e9;
  const auto tmin = get(v, Rc::GcMinorTime), tmaj = get(v, Rc::GcMajorTime);
  if (tmin && tmaj) pause = static_cast<double>(*tmin + *tmaj) / 1e7;  // 100 ns units
  if (pause) {
    p.family("dotnet_gc_pause_time_seconds_total", "counter", "Time the runtime spent in garbage collections.");
    p.sample("dotnet_gc_pause_time_seconds_total", {}, *pause);
  }
  if (const auto b = get(v, Rc::HeapBytes)) {
    p.family("dotnet_gc_last_collection_heap_size_bytes", "gauge",
             "Size of the managed heap (all generations) after the last collection.");
    p.sample("dotnet_gc_last_collection_heap_size_bytes", {}, *b);
  }
  if (const auto j = get(v, Rc::JitMethods)) {
    p.family("dotnet_jit_compiled_methods_total", "counter", "Methods the JIT compiled.");
    p.sample("dotnet_jit_compiled_methods_total", {}, *j);
  }
  if (const auto m = get(v, Rc::Contentions)) {
    p.family("dotnet_monitor_lock_contentions_total", "counter", "Times a thread waited for a monitor lock held by another.");
    p.sample("dotnet_monitor_lock_contentions_total", {}, *m);
  }
  if (const auto e = get(v, Rc::Exceptions)) {
    p.family("dotnet_exceptions_total", "counter", "Exceptions thrown.");
    p.sample("dotnet_exceptions_total", {}, *e);
  }
  if (const auto t = get(v, Rc::Threads)) {
    p.family("dotnet_threads", "gauge", "Managed threads alive.");
    p.sample("dotnet_threads", {}, *t);
  }
}

}  // namespace

bool parse_proc_self_stat(std::string_view s, ProcStat& out) {
  uint64_t fields[25] = {};
  if (!proc_stat_fields(s, 24, fields)) return false;
  out.utime = fields[14];
  out.stime = fields[15];
  out.threads = fields[20];
  out.vsize = fields[23];
  out.rss_pages = fields[24];
  return true;
}

std::string render_metrics(const MetricsInputs& in) {
  PromText p;
  runtime::Runtime& rt = *in.runtime;

  p.family("mlpd_info", "gauge", "The mlpd agent profiling this process (always 1), with the runtime profiled.");
  p.sample("mlpd_info", {{"runtime", rt.name()}}, uint64_t{1});

  Values values = read_runtime(*in.counters);
  uint64_t per_kind[kEventKindCount] = {};
  in.registry->add_counts_to(per_kind);
  in.meta->add_counts_to(per_kind);
  // Mono counts no exceptions among its counters: the throws the agent records stand in while it
  // records them (`exception`, on unless `nodefaults`); left out while it does not.
  if (!values.count(Rc::Exceptions) && (rt.event_mask() & format::MASK_EXCEPTION))
    values[Rc::Exceptions] = per_kind[static_cast<size_t>(EventKind::exception_throw)];
  runtime_metrics(p, values);

  if (runtime::GcPauses gp; rt.gc_pauses(gp)) {
    // Cumulative buckets, the count the +Inf bucket's (so they always agree).
    p.family("mlpd_gc_pause_seconds", "histogram", "The program's pauses for garbage collection (the world stopped).");
    uint64_t cumulative = 0;
    for (size_t i = 0; i < runtime::GcPauses::kBounds; ++i) {
      cumulative += gp.buckets[i];
      const std::string le = prom_le(static_cast<double>(runtime::GcPauses::kBoundNs[i]) / 1e9);
      p.sample("mlpd_gc_pause_seconds_bucket", {{"le", le}}, cumulative);
    }
    cumulative += gp.buckets[runtime::GcPauses::kBounds];
    p.sample("mlpd_gc_pause_seconds_bucket", {{"le", "+Inf"}}, cumulative);
    p.sample("mlpd_gc_pause_seconds_sum", {}, static_cast<double>(gp.sum_ns) / 1e9);
    p.sample("mlpd_gc_pause_seconds_count", {}, cumulative);
  }

  if (ProcStat ps; read_proc_stat(ps)) {
    p.family("process_cpu_seconds_total", "counter", "CPU time of the process, user and system.");
    p.sample("process_cpu_seconds_total", {}, seconds_of_ticks(ps.utime + ps.stime));
    p.family("process_resident_memory_bytes", "gauge", "Resident memory of the process.");
    static const long page = ::sysconf(_SC_PAGESIZE);
    p.sample("process_resident_memory_bytes", {}, ps.rss_pages * static_cast<uint64_t>(page > 0 ? page : 4096));
    p.family("process_virtual_memory_bytes", "gauge", "Virtual memory of the process.");
    p.sample("process_virtual_memory_bytes", {}, ps.vsize);
    p.family("process_threads", "gauge", "Threads of the process (all, the runtime's and ours included).");
    p.sample("process_threads", {}, ps.threads);
  }

  // The profiler's health.
  const runtime::SampleStats st = rt.sample_stats();
  if (st.freq) {
    p.family("mlpd_samples_taken_total", "counter", "CPU samples taken by the signal handler.");
    p.sample("mlpd_samples_taken_total", {}, st.taken);
    p.family("mlpd_samples_written_total", "counter", "CPU samples written as events.");
    p.sample("mlpd_samples_written_total", {}, st.written);
    p.family("mlpd_samples_skipped_idle_total", "counter", "Sampling signals skipped: the thread used no CPU since its last.");
    p.sample("mlpd_samples_skipped_idle_total", {}, st.skipped_idle);
    p.family("mlpd_samples_dropped_total", "counter", "Sampling signals that could not be recorded, by reason.");
    p.sample("mlpd_samples_dropped_total", {{"reason", "pool_full"}}, st.dropped_pool_full);
    p.sample("mlpd_samples_dropped_total", {{"reason", "stopped"}}, st.dropped_shutdown);
    p.sample("mlpd_samples_dropped_total", {{"reason", "unfinished"}}, st.dropped_unfinished);
    p.family("mlpd_sample_rate_asked_hertz", "gauge", "Sampling rate asked for (per second of each thread's clock).");
    p.sample("mlpd_sample_rate_asked_hertz", {}, st.freq);
    p.family("mlpd_sample_rate_delivered_hertz", "gauge",
             "Samples written per second of the sampled threads' clock (CPU time with sample, wall with sample-real).");
    p.sample("mlpd_sample_rate_delivered_hertz", {}, st.delivered_hz());
    p.family("mlpd_sample_handler_seconds_total", "counter", "Time spent in the sampling signal handler.");
    p.sample("mlpd_sample_handler_seconds_total", {}, static_cast<double>(st.handler_ns) / 1e9);
  }
  p.family("mlpd_events_total", "counter", "Events written into the profile, by kind (kinds not seen yet left out).");
  for (size_t k = 0; k < kEventKindCount; ++k)
    if (per_kind[k]) p.sample("mlpd_events_total", {{"kind", kEventKindNames[k]}}, per_kind[k]);
  p.family("mlpd_events_dropped_total", "counter", "Events lost because no buffer was free.");
  p.sample("mlpd_events_dropped_total", {}, in.shared->dropped_events.load(std::memory_order_relaxed));
  p.family("mlpd_buffers_written_total", "counter", "Buffers written to the output.");
  p.sample("mlpd_buffers_written_total", {}, in.flush->buffers_written);
  p.family("mlpd_written_bytes_total", "counter", "Bytes written to the output (before compression by the sink).");
  p.sample("mlpd_written_bytes_total", {}, in.flush->bytes);
  p.family("mlpd_buffers_allocated", "gauge", "Event buffers the agent has allocated.");
  p.sample("mlpd_buffers_allocated", {}, static_cast<uint64_t>(in.pool->allocated()));
  p.family("mlpd_flush_latency_seconds", "gauge", "From a full buffer's hand-over to its write: the last one and the most.");
  p.sample("mlpd_flush_latency_seconds", {{"which", "last"}}, static_cast<double>(in.flush->latency_last_ns) / 1e9);
  p.sample("mlpd_flush_latency_seconds", {{"which", "max"}}, static_cast<double>(in.flush->latency_max_ns) / 1e9);
  p.family("mlpd_flush_rounds_total", "counter", "Rounds of the agent's helper thread.");
  p.sample("mlpd_flush_rounds_total", {}, in.rounds);
  p.family("mlpd_output_failed", "gauge", "1 once the output failed (profiling stopped), else 0.");
  p.sample("mlpd_output_failed", {}, uint64_t{in.output_failed ? 1u : 0u});
  // This endpoint runs on the helper thread: its CPU time is the agent's, the sampling handler's
  // (above) aside.
  if (timespec ts{}; ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
    p.family("mlpd_helper_cpu_seconds_total", "counter", "CPU time of the agent's helper thread (writing, draining samples, serving ports).");
    p.sample("mlpd_helper_cpu_seconds_total", {}, static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9);
  }
  p.family("mlpd_metrics_scrapes_total", "counter", "Metrics requests answered before this one.");
  p.sample("mlpd_metrics_scrapes_total", {}, in.scrapes);
  p.family("mlpd_metrics_refused_total", "counter", "Connections to the metrics port refused, answered with an error or timed out.");
  p.sample("mlpd_metrics_refused_total", {}, in.refused);
  if (in.push) {  // push= (docs/fleet.md)
    const PushStats& s = in.push_sender;
    const PushHelperStats& h = in.push_helper;
    p.family("mlpd_push_profiles_total", "counter", "Intervals' profiles made by push= and handed to its sender.");
    p.sample("mlpd_push_profiles_total", {}, h.profiles);
    p.family("mlpd_push_sent_total", "counter", "Pushed profiles the server took (2xx).");
    p.sample("mlpd_push_sent_total", {}, s.sent);
    p.family("mlpd_push_failed_total", "counter", "Push requests that failed (no connection, timeout, an answer not 2xx); not retried.");
    p.sample("mlpd_push_failed_total", {}, s.failed);
    p.family("mlpd_push_dropped_total", "counter", "Profiles dropped before being sent: the queue was full, or the exit's time was up.");
    p.sample("mlpd_push_dropped_total", {{"reason", "queue_full"}}, s.dropped_queue);
    p.sample("mlpd_push_dropped_total", {{"reason", "exit"}}, s.dropped_exit);
    p.family("mlpd_push_queued", "gauge", "Profiles waiting to be sent.");
    p.sample("mlpd_push_queued", {}, s.queued);
    p.family("mlpd_push_sent_bytes_total", "counter", "Gzipped pprof bytes the server took.");
    p.sample("mlpd_push_sent_bytes_total", {}, s.bytes_sent);
    p.family("mlpd_push_sent_samples_total", "counter", "CPU samples in the profiles the server took.");
    p.sample("mlpd_push_sent_samples_total", {}, s.samples_sent);
    p.family("mlpd_push_last_status", "gauge", "HTTP status of the last push's answer (0: none or no connection).");
    p.sample("mlpd_push_last_status", {}, static_cast<uint64_t>(s.last_status));
    p.family("mlpd_push_helper_seconds_total", "counter", "CPU time of the helper thread on push=: reading what is written, building the pprof.");
    p.sample("mlpd_push_helper_seconds_total", {{"part", "read"}}, static_cast<double>(h.absorb_ns) / 1e9);
    p.sample("mlpd_push_helper_seconds_total", {{"part", "encode"}}, static_cast<double>(h.encode_ns) / 1e9);
  }
  return p.take();
}

}  // namespace mlpd::agent
