// The agent of one profiling session (agent.cpp starts it): its output (file, pipe, ring), the
// command port, the header, the helper thread's side of the output (rotation, requests), the final
// flush and the fork child's forgetting. The process-level state it shares with the process hooks
// (signals, exit, fork) is in process_hooks.h.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "helper_thread.h"
#include "ring_sink.h"
#include "mlpd/agent/command_server.h"
#include "mlpd/agent/metrics_server.h"
#include "mlpd/agent/options.h"
#include "mlpd/rt/buffer_packer.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"
#include "mlpd/runtime/runtime.h"
#include "mlpd/sink.h"

namespace mlpd::agent {

inline constexpr uint32_t kBufferBytes = 64 * 1024;  // per-thread buffer, as Mono's
inline constexpr uint32_t kMaxBuffers = 4096;        // 256 MiB in flight at most; beyond, events are dropped
// Beyond kMaxBuffers, for a heap walk only (world stopped, the helper possibly held up by a suspended
// thread holding one of our mutexes): another 256 MiB, about 9M more objects, before a heapshot loses
// events.
inline constexpr uint32_t kHeapWalkReserve = 4096;
inline constexpr int kExitWriteLimitSeconds = 5;  // longest the host's exit waits for the last writes
// zip: the program's threads compress their own full buffers while more than this many bytes of full
// buffers wait for the helper (buffer_packer.h); below it the helper compresses everything, in
// bigger members (smaller files). Compressors for the threads: up to this many at once (~270 KiB each
// at level 1 with their output space, touched only when used); member buffers (4 KiB each, a 64 KiB
// buffer's member takes two or three) at most kMaxMembers: 64 MiB.
inline constexpr uint32_t kPackAboveBytes = 4 * 1024 * 1024;
static_assert(kDefaultZipPackAbove == kPackAboveBytes / kBufferBytes && kMaxZipPackAbove == kMaxBuffers);
inline constexpr uint32_t kPackCompressors = 4;
inline constexpr uint32_t kMaxMembers = 16384;
inline constexpr int kPackLevel = 1;  // libdeflate's level, as the gzip sink's default (SinkOptions::gzip_level)

// The agent: its start (output, command port, header, hooks), the output sink, shutdown and fork.
// The helper thread (helper_thread.h) does the rounds.
class Agent final : private HelperOutput {
 public:
  // `runtime`: the runtime profiled (its entry point's); it outlives the agent.
  Agent(Options options, runtime::Runtime& runtime);

  const Options& options() const { return options_; }
  runtime::Runtime& runtime() { return runtime_; }
  // Flight recorder: the ring is the sink; dumps go to files.
  void use_ring() {
    auto ring = std::make_unique<RingSink>(options_.ring_bytes);
    ring_ = ring.get();
    sink_ = std::move(ring);
  }

  // Writes a dump (helper thread, or the exit path after the helper stopped): the header, the metadata
  // of everything alive, then the ring's buffers in order. `file` empty: output= (or the default
  // name), with %p, %t and %n (the dump's number) expanded. Returns `OK dump FILE BYTES` or
  // `ERR dump: reason`; profiling goes on either way.
  std::string dump(const std::string& file, bool round_first);

  void set_sink(std::unique_ptr<OutputSink> sink, std::string file = {}) {
    sink_ = std::move(sink);
    file_started_ = std::chrono::steady_clock::now();
    if (!file.empty()) files_.push_back(std::move(file));
  }
  // Closes the output opened for a start that then failed, and removes the file if we created one.
  void abandon_output(const ResolvedOutput& where) {
    if (!sink_ || ring_) return;
    sink_->close();
    if (where.kind == ResolvedOutput::Kind::File) ::unlink(where.target.c_str());
  }
  rt::WriterShared& shared() { return shared_; }
  rt::ThreadRegistry& registry() { return registry_; }
  rt::MetaLog& meta() { return meta_; }

  bool write_header(std::string& why);

  // The command port, bound before the header is written (the header carries its port). A failure
  // (port busy, bad address) is one line; profiling goes on without the port.
  void start_server();
  // Profiling did not start after all: the port must not stay open in the host.
  void drop_server() {
    server_.reset();
    metrics_.reset();
  }
  // The metrics endpoint (metrics=PORT): a failure is one line; profiling goes on without it.
  void start_metrics();
  // push=URL: the sending thread; a failure is one line, profiling goes on without pushes.
  void start_push();
  void announce_server();

  bool start_helper() { return helper_.start(); }
  // Attached again: what the earlier attach described (and the runtime will not describe again),
  // right after the header.
  bool seed_metadata(const std::vector<uint8_t>& bytes) {
    if (bytes.empty()) return true;
    helper_.seed_metadata(bytes);
    if (ring_) return true;
    return write_out(bytes) && sink_->flush();
  }
  std::vector<uint8_t> metadata_now() const {
    std::vector<uint8_t> out;
    helper_.replay_metadata(out);
    return out;
  }
  const std::vector<std::string>& files() const { return files_; }
  // Async-signal-safe: a write(2) to the helper's eventfd.
  void wake_helper() { helper_.wake(); }
  bool live_round_and_wait(int limit_ms) { return helper_.live_round_and_wait(limit_ms); }
  bool shutting_down() const { return shutting_down_.load(std::memory_order_acquire); }

  // Final flush and close; the first caller does it. A caller that comes while it is under way (another
  // thread exiting at the same time) waits for it, bounded, so that it does not exit the process
  // under the final writes; later callers return at once.
  void shutdown();

  void finish();

  // Detached: the helper has ended and the file is closed; the buffers' pages go back to the system
  // (BufferPool::release_pages: nothing is unmapped, a thread may still hold or even write one).
  size_t release_memory() { return pool_.release_pages(); }
  // Detached, its metadata taken (metadata_now()): the helper's store is not needed any more (the
  // helper has ended; only it used the store).
  void drop_metadata() { helper_.drop_metadata(); }

  // Fork child: this process must not write into the parent's output. Nothing more is recorded. Our copy
  // of the output descriptor is let go at once: a child that does not exec would otherwise hold a
  // `|CMD` pipe open until it exits, and the command -- and the parent's exit, waiting for it -- with it.
  void forget_after_fork();

 private:
  CommandHandlers command_handlers();

  bool write_out(const std::vector<uint8_t>& bytes) { return sink_->write(bytes.data(), bytes.size()); }

  // Rotation (helper thread). Every file of a run carries the same header (process start time, pid,
  // port, options): they are windows of one run, with times on one scale.
  bool rotation_due() override;

  bool next_file(const std::vector<uint8_t>& metadata) override;

  // The helper loop: dumps (ring) or flush rounds (file) that the dump signal or TriggerHeapshot asked for.
  // Requests that came while one was under way are served by one more. The dump signal's handler is
  // looked at once a second: if the program (or Mono, e.g. `mono --trace` takes SIGUSR2) installed
  // its own since, one line says that the signal no longer dumps.
  void service_requests() override;

  // HelperOutput: the sink as the helper writes to it.
  bool write(const uint8_t* data, size_t size) override { return sink_->write(data, size); }
  bool write_member(const uint8_t* data, size_t size) override { return sink_->write_member(data, size); }
  bool flush() override { return sink_->flush(); }
  void round_written() override { sink_->mark_whole(); }
  void hurry(bool behind) override { sink_->set_hurry(behind); }
  bool failed() const override { return failed_; }
  void report_failure() override;

  Options options_;
  runtime::Runtime& runtime_;
  rt::BufferPool pool_;
  std::unique_ptr<rt::BufferPacker> packer_;  // zip: the threads' compressors and member buffers
  rt::FlushQueue queue_;
  rt::WriterShared shared_;
  rt::MetaLog meta_;
  rt::ThreadRegistry registry_;
  std::unique_ptr<OutputSink> sink_;
  std::vector<uint8_t> header_bytes_;
  RingSink* ring_ = nullptr;  // flight recorder: the sink, when ring= is given
  uint64_t dump_seq_ = 0;
  // service_requests(): requests served so far; the dump signal's handler check.
  uint64_t signals_served_ = 0;
  uint64_t triggers_served_ = 0;
  std::chrono::steady_clock::time_point signal_checked_{};
  bool signal_lost_ = false;
  // Rotation: when the current file was opened, its sequence number (%n), the files written (oldest
  // first, for rotate-keep) and the error of a next file that could not be opened.
  std::chrono::steady_clock::time_point file_started_;
  uint64_t file_seq_ = 0;
  std::vector<std::string> files_;
  std::string rotate_error_;
  std::unique_ptr<CommandServer> server_;  // the command port; only the helper uses it once started
  std::unique_ptr<MetricsServer> metrics_;  // metrics=PORT; the same
  std::unique_ptr<PushSender> push_;  // push=URL: the sending thread (started by start_push)
  HelperThread helper_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> shutdown_done_{false};
  std::atomic<bool> failed_{false};
};

}  // namespace mlpd::agent
