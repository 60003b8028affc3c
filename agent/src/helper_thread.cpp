#include "helper_thread.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "agent_metrics.h"
#include "push_sender.h"
#include "mlpd/format.h"
#include "mlpd/rt/buffer_packer.h"
#include "mlpd/rt/clock.h"

namespace mlpd::agent {

namespace {
// How often full buffers are written: often while threads are filling buffers (each recycled buffer
// is one the pool need not map and fault in), rarely when nothing is happening.
constexpr auto kBusyTick = std::chrono::milliseconds(10);
constexpr auto kIdleTick = std::chrono::milliseconds(100);
// A round with more than this waiting is far behind: the output favours speed (`zip` stores instead
// of compressing) so that the buffers go back to the pool before the threads need more of them. A
// safety valve against a helper starved of CPU for good, not the usual case: at 4 MiB most rounds of
// four busy threads on two cores stored (files 6-8x larger for ~12 MiB less peak RSS), so a user who
// asked for `zip` got mostly uncompressed files (measured in docs/performance.md).
constexpr size_t kBehindBytes = 32 * 1024 * 1024;
}  // namespace

HelperThread::HelperThread(const HelperParts& parts)
    : parts_(parts),
      flusher_(*parts.shared, *parts.registry, *parts.meta),
      counters_(*parts.runtime, *parts.registry, *parts.meta, ProfilerCounterSources{&flusher_.stats(), parts.pool, parts.shared,
                                                                     parts.options->calls_min_us ? parts.registry : nullptr}) {
  if (rotation_on(*parts.options) || parts.options->ring_bytes || parts.options->attached) flusher_.keep_metadata_in(&meta_store_);
  if (parts.push) {
    push_profile_ = std::make_unique<PushProfile>();
    push_profile_->set_alloc_sample_interval(parts.options->alloc_sample);  // as the reader reads the header's args
  }
}

namespace {
int64_t unix_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
}
// Pyroscope's name parameter, URL-encoded (its labels' values hold no reserved characters but '.').
std::string url_encoded(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string r;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' || c == '_' || c == '.' || c == '~') {
      r += c;
    } else {
      r += '%';
      r += hex[u >> 4];
      r += hex[u & 15];
    }
  }
  return r;
}
}  // namespace

// push=: the interval's samples as a gzipped pprof, to the sender's queue (which never waits on the
// network). An interval without samples sends nothing.
void HelperThread::push_interval(bool final) {
  if (!push_profile_) return;
  const uint64_t cpu0 = thread_cpu_ns();
  const int64_t now = unix_ns();
  uint64_t samples = 0, objects = 0;
  std::string cpu = push_profile_->take_pprof(push_start_unix_ns_, now - push_start_unix_ns_, samples);
  std::string alloc = push_profile_->take_alloc_pprof(push_start_unix_ns_, now - push_start_unix_ns_, objects);
  push_stats_.encode_ns += thread_cpu_ns() - cpu0;
  // from/until in whole seconds (the API's unit); until at least from + 1.
  const int64_t from = push_start_unix_ns_ / 1000000000;
  int64_t until = (now + 999999999) / 1000000000;
  if (until <= from) until = from + 1;
  const std::string query = "name=" + url_encoded(parts_.push_name) + "&from=" + std::to_string(from) +
                            "&until=" + std::to_string(until) + "&format=pprof&spyName=mlpd";
  if (cpu.empty() && alloc.empty()) ++push_stats_.empty;
  if (!cpu.empty()) {
    ++push_stats_.profiles;
    push_stats_.samples += samples;
    push_stats_.bytes += cpu.size();
    parts_.push->send(query, std::move(cpu), samples);
  }
  if (!alloc.empty()) {
    ++push_stats_.profiles;
    push_stats_.bytes += alloc.size();
    parts_.push->send(query, std::move(alloc), 0);
  }
  push_start_unix_ns_ = now;
  next_push_ = std::chrono::steady_clock::now() + std::chrono::seconds(parts_.options->push_interval_s);
  (void)final;
}

bool HelperThread::start() {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return false;
  // The helper must never receive the host's signals: block them all while creating it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&thread_, nullptr, &HelperThread::entry, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  // Named here, before start() returns, rather than by the thread itself when it first runs: `mlpd
  // attach` reports success once start has returned, and then looks for this name (a second attach
  // is refused as "profiled already"; a CI run's check found the thread unnamed 1 ms after attach).
  if (rc == 0) pthread_setname_np(thread_, "mlpd-helper");
  started_ = rc == 0;
  return started_;
}

void HelperThread::wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);  // EAGAIN (counter full) still leaves it readable
}

bool HelperThread::live_round_and_wait(int limit_ms) {
  if (!started_ || stop_.load(std::memory_order_acquire) || pthread_equal(pthread_self(), thread_)) return false;
  const uint64_t ticket = live_asked_.fetch_add(1, std::memory_order_acq_rel) + 1;
  wake();
  for (int i = 0; i < limit_ms; ++i) {
    if (live_done_.load(std::memory_order_acquire) >= ticket) return true;
    const timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  return live_done_.load(std::memory_order_acquire) >= ticket;
}

bool HelperThread::stop(int limit_seconds) {
  stop_.store(true, std::memory_order_release);
  wake();
  if (!started_ || pthread_equal(pthread_self(), thread_)) return true;
  timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += limit_seconds;
  return pthread_timedjoin_np(thread_, nullptr, &deadline) == 0;
}

void* HelperThread::entry(void* self) {
  static_cast<HelperThread*>(self)->main_loop();
  return nullptr;
}

int64_t HelperThread::ms_of(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// Rounds run on their tick (or when a thread needs buffers) whatever the command port's clients
// do: the server only adds descriptors to the poll set and does bounded, non-blocking work.
void HelperThread::main_loop() {
  using Clock = std::chrono::steady_clock;
  CommandServer* server = parts_.server->get();
  MetricsServer* metrics = parts_.metrics ? parts_.metrics->get() : nullptr;
  auto last_live = Clock::now();
  const auto flush_every = std::chrono::milliseconds(parts_.options->flush_ms);
  bool busy = true;  // until a round finds nothing: a program may be busy from its first instruction
  auto next_round = Clock::now() + std::min<std::chrono::milliseconds>(kBusyTick, flush_every);
  push_start_unix_ns_ = unix_ns();
  next_push_ = Clock::now() + std::chrono::seconds(parts_.options->push_interval_s);
  std::vector<pollfd> fds;
  while (!stop_.load(std::memory_order_acquire)) {
    auto now = Clock::now();
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    if (server) server->add_pollfds(fds, ms_of(now));
    const size_t server_fds = fds.size() - 1;
    if (metrics) metrics->add_pollfds(fds, ms_of(now));
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_round - now).count();
    bool woken = false;
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait + 1))) > 0 &&
        (fds[0].revents & POLLIN)) {
      uint64_t n;
      (void)!::read(wake_fd_, &n, sizeof n);
      woken = true;
    }
    if (stop_.load(std::memory_order_acquire)) break;
    now = Clock::now();
    if (server) server->service(fds.data() + 1, server_fds, ms_of(now));
    if (metrics) metrics->service(fds.data() + 1 + server_fds, fds.size() - 1 - server_fds, ms_of(now));
    parts_.output->service_requests();  // a dump signal's dump, say (it runs its own round)
    const uint64_t live_asked = live_asked_.load(std::memory_order_acquire);
    const bool server_flush = server && server->flush_wanted();
    const bool flush_asked = server_flush || live_asked != live_done_.load(std::memory_order_relaxed);
    if (!woken && !flush_asked && now < next_round) continue;
    const bool live = flush_asked || now - last_live >= flush_every;
    if (live) last_live = now;
    const uint64_t before = flusher_.stats().buffers_written;
    if (live || parts_.runtime->pause_generation() != pause_generation_) sample_counters();
    const bool ok = round(live);
    busy = flusher_.stats().buffers_written - before > (live ? 8u : 0u);
    next_round = Clock::now() + std::min<std::chrono::milliseconds>(busy ? kBusyTick : kIdleTick, flush_every);
    if (server_flush) server->flush_done(ok, ms_of(Clock::now()));
    live_done_.store(live_asked, std::memory_order_release);
    // push=: on a live round (everything committed is in), once the interval is over.
    if (push_profile_ && live && Clock::now() >= next_push_) push_interval(false);
  }
  // Final: everything committed, including threads that are still running or never exited. A push
  // another thread has half done holds the queue up: wait for it a little (bounded).
  // The last jitdump/perfmap code loads (JIT_CODE_CLOSE); sampling is stopped: a record still being
  // written is counted lost.
  parts_.runtime->final_round(parts_.options->verbose);
  sample_counters();  // after the last user events, before the final flush (as Mono's log profiler)
  // A thread compressing its buffer (zip) pushes the member soon: wait for it the same way.
  const auto waiting = [&] {
    return flusher_.queue_blocked() || parts_.shared->packing.load(std::memory_order_acquire) != 0;
  };
  for (int i = 0; i < 200 && (i < 3 || waiting()); ++i) {
    if (i >= 3) sched_yield();
    round(true);
  }
  push_interval(true);  // the last interval: everything written is in it
  if (metrics) metrics->stop();  // nothing is served after the last round
  if (server) {
    // Everything is written now: a `flush` or a `heapshot` already taken is answered OK (twice: a
    // heapshot taken moves on to wait for a flush round, which this also is). Then clients still
    // waiting get ERR; nothing is served after the last round.
    const int64_t t = ms_of(Clock::now());
    const bool failed = parts_.output->failed();
    server->flush_done(!failed, t);
    server->flush_done(!failed, t);
    server->stop();
  }
}

// The round's pieces go to the sink straight from the buffers (no copy: fresh memory is expensive
// to fault in), then the buffers go back to the pool.
bool HelperThread::round(bool live) {
  ++rounds_;
  // The TSC's scale against CLOCK_MONOTONIC: corrected here if it drifted (docs/design.md, "Clock").
  if (const std::string said = rt::check_clock(); !said.empty() && parts_.options->verbose) {
    const std::string l = said + "\n";
    (void)!::write(STDERR_FILENO, l.data(), l.size());
  }
  parts_.runtime->round();  // samples (and the native symbols they need) into the MetaLog first, perf records
  HelperOutput& out = *parts_.output;
  // Rotation happens between rounds: the closed file ends with a complete round, the next starts with
  // the header and the metadata of everything still alive (absorbed by earlier rounds), then this round.
  if (live && !out.failed() && out.rotation_due()) {
    std::vector<uint8_t> metadata;
    // Stamped no earlier than the last round, where the closed file's data ended: the new file's
    // times (its report's duration) start there, not at the process's start.
    meta_store_.replay(metadata, last_round_ns_);
    if (!out.next_file(metadata)) out.report_failure();
  }
  waiting_max_ = std::max(waiting_max_, parts_.shared->full_waiting.load(std::memory_order_relaxed));
  const uint64_t now = rt::now_ns();
  if (live) last_round_ns_ = now;
  const std::vector<Flusher::Piece>& pieces = flusher_.begin_round(live, now);
  if (push_profile_ && !pieces.empty()) {  // push=: the samples and names of what is written
    const uint64_t cpu0 = thread_cpu_ns();
    for (const Flusher::Piece& p : pieces) {
      if (p.member)
        push_profile_->absorb_member(p.data, p.size);
      else
        push_profile_->absorb(p.data, p.size);
    }
    push_stats_.absorb_ns += thread_cpu_ns() - cpu0;
  }
  bool ok = true;
  if (!out.failed()) {
    size_t total = 0;  // what the sink has to compress (members are compressed already)
    for (const Flusher::Piece& p : pieces) total += p.member ? 0 : p.size;
    out.hurry(total > kBehindBytes);
    for (const Flusher::Piece& p : pieces) {
      if (!(ok = p.member ? out.write_member(p.data, p.size) : out.write(p.data, p.size))) break;
    }
    if (ok && live && !pieces.empty()) ok = out.flush();
    if (ok) out.round_written();
    if (!ok) out.report_failure();
  }
  flusher_.end_round();
  return ok && !out.failed();
}

// The `counter` events (while the mask asks for them and the output works).
void HelperThread::sample_counters() {
  pause_generation_ = parts_.runtime->pause_generation();  // a pause or resume is sampled at the next round
  if (!parts_.output->failed() && (parts_.runtime->event_mask() & format::MASK_COUNTER)) counters_.sample();
}

std::string HelperThread::metrics_text() {
  MetricsInputs in;
  in.runtime = parts_.runtime;
  in.counters = &counters_;
  in.flush = &flusher_.stats();
  in.pool = parts_.pool;
  in.shared = parts_.shared;
  in.registry = parts_.registry;
  in.meta = parts_.meta;
  in.output_failed = parts_.output->failed();
  in.rounds = rounds_;
  if (const MetricsServer* m = parts_.metrics ? parts_.metrics->get() : nullptr) {
    in.scrapes = m->scrapes() ? m->scrapes() - 1 : 0;  // counted before rendering
    in.refused = m->refused();
  }
  if (parts_.push) {
    in.push = true;
    in.push_sender = parts_.push->stats();
    in.push_helper = push_stats_;
  }
  return render_metrics(in);
}

// The helper thread: the flusher's counters are its own.
std::string HelperThread::stats_line() {
  const FlushStats& f = flusher_.stats();
  uint64_t per_kind[kEventKindCount] = {};
  parts_.registry->add_counts_to(per_kind);
  parts_.meta->add_counts_to(per_kind);
  uint64_t events = 0;
  for (const uint64_t n : per_kind) events += n;
  const CommandServer* server = parts_.server->get();
  std::string s = "bytes=" + std::to_string(f.bytes) + " buffers=" + std::to_string(f.buffers_written) +
                  " meta_events=" + std::to_string(f.meta_events) +
                  " dropped_events=" + std::to_string(parts_.shared->dropped_events.load()) +
                  " buffers_allocated=" + std::to_string(parts_.pool->allocated()) +
                  " flush_rounds=" + std::to_string(rounds_) +
                  " clients=" + std::to_string(server ? server->clients() : 0);
  const runtime::SampleStats st = parts_.runtime->sample_stats();
  s += " events=" + std::to_string(events) + " samples=" + std::to_string(st.taken) + " samples_dropped=" +
       std::to_string(st.dropped_pool_full + st.dropped_shutdown + st.dropped_unfinished);
  s += " full_waiting_max=" + std::to_string(waiting_max_);
  if (parts_.shared->packer) s += " members=" + std::to_string(f.members);
  if (parts_.push) {
    const PushStats ps = parts_.push->stats();
    s += " push_profiles=" + std::to_string(push_stats_.profiles) + " push_sent=" + std::to_string(ps.sent) +
         " push_failed=" + std::to_string(ps.failed) + " push_dropped=" + std::to_string(ps.dropped_queue + ps.dropped_exit) +
         " push_queued=" + std::to_string(ps.queued) + " push_last_status=" + std::to_string(ps.last_status);
  }
  if (parts_.output->failed()) s += " output=failed";
  return s;
}

std::vector<std::string> HelperThread::summary_lines(bool with_samples) {
  std::vector<std::string> lines;
  const FlushStats& f = flusher_.stats();
  lines.push_back("mlpd: wrote " + std::to_string(f.bytes) + " bytes in " + std::to_string(f.buffers_written) +
                  " buffers; " + std::to_string(parts_.pool->allocated()) + " buffers of " +
                  std::to_string(parts_.pool->buffer_bytes() / 1024) + " KiB allocated; " +
                  std::to_string(parts_.shared->dropped_events.load()) + " events dropped; " +
                  std::to_string(rounds_) + " flush rounds");
  if (const rt::BufferPacker* packer = parts_.shared->packer) {
    const rt::BufferPacker::Stats p = packer->stats();
    const uint64_t left = p.no_compressor + p.no_member;
    lines.push_back("mlpd: zip: " + std::to_string(p.packed) + " buffers compressed by the program's threads (" +
                    std::to_string(p.input_bytes) + " bytes into " + std::to_string(p.member_bytes) + "; " +
                    std::to_string(packer->members_allocated()) + " member buffers of " +
                    std::to_string(packer->member_mapping_bytes() / 1024) + " KiB allocated), " + std::to_string(left) +
                    " left to the helper (" + std::to_string(p.no_compressor) + " no compressor free, " +
                    std::to_string(p.no_member) + " no member buffers); at most " + std::to_string(waiting_max_) +
                    " full buffers waiting at a round");
  }
  if (parts_.push) {
    const PushHelperStats& h = push_stats_;
    lines.push_back("mlpd: push: the helper made " + std::to_string(h.profiles) + " profiles (" +
                    std::to_string(h.samples) + " samples, " + std::to_string(h.bytes) + " bytes gzipped; " +
                    std::to_string(h.empty) + " intervals without samples or allocations) in " +
                    std::to_string(h.encode_ns / 1000) + " us of CPU, after " + std::to_string(h.absorb_ns / 1000) +
                    " us reading what it wrote");
  }
  lines.push_back(rt::clock_summary());
  if (parts_.runtime->max_frames() > 0) lines.push_back(parts_.runtime->backtrace_summary());
  if (with_samples) {
    const runtime::SampleStats st = parts_.runtime->sample_stats();
    const std::string no_timers = parts_.runtime->cpu_timers_not_used();
    lines.push_back(
        "mlpd: samples: " + std::to_string(st.taken) + " taken, " + std::to_string(st.written) + " written, " +
        std::to_string(st.skipped_idle) + " idle skipped; dropped: " + std::to_string(st.dropped_pool_full) +
        " pool full, " + std::to_string(st.dropped_shutdown) + " after stop, " + std::to_string(st.dropped_unfinished) +
        " unfinished; " + std::to_string(st.stack_copy_failed) + " without stack copy, " +
        std::to_string(st.unwind_failed) + " not unwound; " + std::to_string(st.frames_left_out) +
        " managed frames left out; " + std::to_string(st.taken ? st.handler_ns / st.taken : 0) + " ns in the handler and " +
        std::to_string(st.taken ? st.drain_ns / st.taken : 0) + " ns on the helper per sample; rate " +
        std::to_string(st.freq) + " Hz asked, " + std::to_string(st.delivered_hz()) + " Hz delivered; " +
        std::to_string(st.truncated) + " truncated (deeper than kept), " + std::to_string(st.cut_unnamed) +
        " cut at a frame not named, " + std::to_string(st.cut_copy) + " cut at the end of the stack copy; engine: " + st.engine +
        (st.threads_without_timer ? ", " + std::to_string(st.threads_without_timer) + " threads without a timer" : std::string()) +
        (no_timers.empty() ? std::string() : " (no CPU timers: " + no_timers + ")"));
    // Issue 33.5: compat mode's defaults (every exception thrown and every clause run) can outweigh
    // the samples many times over (a server: 7 GB an hour, 50-65x a `nodefaults,sample` file).
    if (parts_.options && parts_.options->compat) {
      uint64_t per_kind[kEventKindCount] = {};
      parts_.registry->add_counts_to(per_kind);
      parts_.meta->add_counts_to(per_kind);
      const uint64_t defaults = per_kind[static_cast<size_t>(EventKind::exception_throw)] +
                                per_kind[static_cast<size_t>(EventKind::exception_clause)];
      if (defaults > st.written)
        lines.push_back("mlpd: 'sample' without 'nodefaults' first also records Mono's default events: " +
                        std::to_string(defaults) + " exception throws and clauses beside " +
                        std::to_string(st.written) + " samples; 'nodefaults,sample' records the samples alone");
    }
  }
  return lines;
}

}  // namespace mlpd::agent
