// The helper thread: the agent's only thread of its own. Each round it drains the samples, takes
// the MetaLog and the full (or, on a live round, all) thread buffers from the flusher and writes
// them to the output; on live rounds it samples the counters; between rounds it serves the command
// port. Not attached to the runtime: it never calls Mono. Rounds run on a tick, faster while
// threads are filling buffers, and at once when a thread needs buffers (wake()).
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "counters.h"
#include "mlpd/agent/command_server.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/agent/metrics_server.h"
#include "mlpd/agent/options.h"
#include "mlpd/agent/push_profile.h"
#include "push_sender.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/meta_store.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::agent {

// The output as the helper uses it. The Agent (agent.cpp) owns the sink and its failure state.
class HelperOutput {
 public:
  virtual bool write(const uint8_t* data, size_t size) = 0;
  // A complete gzip member a thread made (zip: OutputSink::write_member).
  virtual bool write_member(const uint8_t* /*data*/, size_t /*size*/) { return false; }
  virtual bool flush() = 0;
  // A round was written whole (after its flush, if live): a kill cuts the file back to here
  // (OutputSink::mark_whole).
  virtual void round_written() {}
  // The helper is behind (OutputSink::set_hurry): favour speed over size for this round.
  virtual void hurry(bool /*behind*/) {}
  // The output failed (now or earlier): nothing more is written.
  virtual bool failed() const = 0;
  // A write or flush failed: one message, profiling stops, the program goes on.
  virtual void report_failure() = 0;
  // Rotation (rotate=, rotate-size=): whether the current file is due to be closed at this flush round,
  // and the switch: close it, open the next, write the file header and `metadata` (the MetaStore's
  // replay) to it. False when the switch failed (then report_failure()).
  virtual bool rotation_due() { return false; }
  virtual bool next_file(const std::vector<uint8_t>& /*metadata*/) { return true; }
  // Requests made outside the helper (dumpsignal=, LogProfiler.TriggerHeapshot in ring mode) that it
  // performs: called on every wake-up of the helper loop; cheap when there is nothing to do.
  virtual void service_requests() {}

 protected:
  ~HelperOutput() = default;
};

// What the helper works on, owned by the Agent, which outlives the helper.
struct HelperParts {
  const Options* options = nullptr;
  rt::BufferPool* pool = nullptr;
  rt::WriterShared* shared = nullptr;
  rt::MetaLog* meta = nullptr;
  rt::ThreadRegistry* registry = nullptr;
  std::unique_ptr<CommandServer>* server = nullptr;  // the command port, if any; only the helper uses it once started
  std::unique_ptr<MetricsServer>* metrics = nullptr;  // the metrics endpoint (metrics=), if any; the same
  HelperOutput* output = nullptr;
  runtime::Runtime* runtime = nullptr;  // the runtime profiled: its rounds, statistics and counters
  // push= (docs/fleet.md): the thread that sends the profiles (agent_instance.cpp's), and the
  // Pyroscope name of every push (SERVICE{labels}, not yet URL-encoded). nullptr: push is off.
  PushSender* push = nullptr;
  std::string push_name;
};


class HelperThread {
 public:
  explicit HelperThread(const HelperParts& parts);
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

  // Creates the thread (with every signal blocked: the host's signals are not ours). False on failure.
  bool start();
  // Wakes the helper for a round now. Only a write(2) to an eventfd: no user-space lock, so it is
  // safe from any thread at any time, including the GC thread while the world is stopped.
  void wake();
  // Ends the loop: the final rounds write everything committed, then the helper exits. Waits for
  // it at most `limit_seconds` (an output that stops draining must not hang the host's exit); false
  // when it did not finish in time. Returns at once when called on the helper itself or when it was
  // never started.
  bool stop(int limit_seconds);
  // A live round (every thread's committed events written) as soon as possible, waited for at most
  // `limit_ms`; false when it did not happen in time (or the helper is not running). For a thread
  // whose process is about to end without an exit (an unhandled .NET exception aborts it).
  bool live_round_and_wait(int limit_ms);

  // Flight recorder (helper thread, or after stop()): a live round now, so that a dump holds what
  // threads have committed; the MetaStore's replay.
  void round_now() { round(true); }
  void replay_metadata(std::vector<uint8_t>& out, uint64_t not_before = 0) const { meta_store_.replay(out, not_before); }
  // Attached again: the earlier attach's metadata, kept for rotation and dumps (before start()).
  void seed_metadata(const std::vector<uint8_t>& bytes) { meta_store_.absorb(bytes.data(), bytes.size()); }
  // Detached (the helper has ended): the store's memory given back.
  void drop_metadata() { meta_store_ = rt::MetaStore(); }

  // The metrics endpoint's answer (helper thread; agent_metrics.h).
  std::string metrics_text();

  // The `stats` answer of the command port (helper thread).
  std::string stats_line();
  // The `verbose` summary at exit (after stop()): one line each.
  std::vector<std::string> summary_lines(bool with_samples);

 private:
  static void* entry(void* self);
  void main_loop();
  bool round(bool live);
  void sample_counters();
  void push_interval(bool final);
  static int64_t ms_of(std::chrono::steady_clock::time_point t);

  HelperParts parts_;
  Flusher flusher_;
  rt::MetaStore meta_store_;  // with rotation: what each new file starts with
  AgentCounters counters_;
  pthread_t thread_{};
  bool started_ = false;
  int wake_fd_ = -1;  // eventfd: threads and shutdown wake the helper through it
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> live_asked_{0};  // live_round_and_wait(): rounds asked, rounds done
  std::atomic<uint64_t> live_done_{0};
  uint64_t rounds_ = 0;
  uint64_t last_round_ns_ = 0;  // the last live round's time: where a rotated file's metadata is stamped
  uint32_t waiting_max_ = 0;  // the most full buffers waiting at a round's start (WriterShared::full_waiting)
  uint64_t pause_generation_ = 0;  // the runtime's pause_generation() at the last counter sample
  // push=: the interval's profile, where it started (CLOCK_REALTIME ns) and when the next is due.
  std::unique_ptr<PushProfile> push_profile_;
  int64_t push_start_unix_ns_ = 0;
  std::chrono::steady_clock::time_point next_push_;
  PushHelperStats push_stats_;
};

}  // namespace mlpd::agent
