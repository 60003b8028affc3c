// A second runtime behind the door (issue 34), for tests only: FakeRuntime implements
// mlpd/runtime/runtime.h with no runtime at all and emits synthetic events through the writer, the
// way a runtime's callbacks would (threads and their names, an image, an assembly, classes, methods
// and their code, enter/leave, sample hits at each helper round, a counter of its own). The program
// drives the runtime-neutral agent shell (mlpd_agent_shell, linked without Mono) through its whole
// life: agent::start(options, runtime), the helper's rounds, the command port (stats, events, pause,
// resume, heapshot, flush), and agent::detach. test_door_fake.py then checks the file with
// `mlpd verify --strict` and the report. If the shell still reached into Mono, this would not link.
//
// Usage: door_fake OPTIONS PORT   (OPTIONS: the MLPD_OPTIONS syntax; PORT: the command port in it)
// Prints one line per step ("step: answer") on stdout; exits 0 when every step went as expected.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mlpd/agent/agent.h"
#include "mlpd/format.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"
#include "mlpd/runtime/runtime.h"

namespace {

using namespace mlpd;

constexpr uint64_t kImage = 0x10000;
constexpr uint64_t kAssembly = 0x20000;
constexpr uint64_t kClass = 0x30000;
constexpr int kMethods = 3;
constexpr uint64_t kMethod[kMethods] = {0x40010, 0x40020, 0x40030};
constexpr uint64_t kCode[kMethods] = {0x7000000, 0x7001000, 0x7002000};
const char* const kMethodName[kMethods] = {"Fake.Program:Main ()", "Fake.Program:Work (int)", "Fake.Program:Leaf ()"};

class FakeRuntime final : public runtime::Runtime {
 public:
  std::string_view name() const override { return "fake"; }
  bool present() const override { return true; }
  std::string summary() const override { return "runtime: fake (tests/door), no runtime at all"; }
  bool takes_option(std::string_view n) const override { return n == "fake-threads"; }
  std::string late_refusal(const runtime::Config& c) const override {
    return (c.mask & format::MASK_GC_ALLOC) ? "alloc (the fake runtime has no allocator)" : std::string();
  }

  bool install(const runtime::Config& c, const runtime::Env& env, std::string& error) override {
    if (!env.shared || !env.registry || !env.meta) {
      error = "the agent gave no writer";
      return false;
    }
    if (!c.options.empty()) {  // the agent passes only what takes_option() accepted; the fake takes none
      error = "unexpected runtime options '" + c.options + "'";
      return false;
    }
    config_ = c;
    env_ = env;
    mask_.store(c.start_paused ? 0 : c.mask);
    saved_mask_ = c.mask;
    depth_.store(c.calldepth);
    paused_.store(c.start_paused);
    installed_.store(true);
    ++installs;
    // What a runtime describes when it starts: its image, assembly, class and methods.
    describe(EventKind::image_load, kImage, 0, "fake.exe");
    describe(EventKind::assembly_load, kAssembly, kImage, "fake, Version=1.0.0.0");
    describe(EventKind::class_load, kClass, kImage, "Fake.Program");
    for (int i = 0; i < kMethods; ++i) {
      Event e;
      e.kind = EventKind::method_jit;
      e.method = kMethod[i];
      e.ptr = kCode[i];
      e.size = 0x100;
      e.name = kMethodName[i];
      env_.meta->add(e, rt::now_ns);
    }
    return true;
  }
  void stop() override { stopped_.store(true); }
  void detach() override {
    stop();
    installed_.store(false);
    ++detaches;
  }
  void end_remaining_threads() override {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    for (runtime::OsThread& t : threads_) {
      if (t.os_tid > 0) {
        meta(EventKind::thread_end, t.tid, "");
        t.os_tid = -t.os_tid;
      }
    }
  }

  uint32_t event_mask() const override { return paused_.load() ? saved_mask_ : mask_.load(); }
  void set_event_mask(uint32_t mask) override {
    if (paused_.load()) saved_mask_ = mask;
    else mask_.store(mask);
  }
  bool calls_enabled() const override { return config_.calls; }
  uint32_t call_depth() const override { return depth_.load(); }
  void set_call_depth(uint32_t depth) override { depth_.store(depth); }
  uint32_t max_frames() const override { return 0; }
  bool pause() override {
    if (paused_.exchange(true)) return false;
    saved_mask_ = mask_.exchange(0);
    paused_since_read_.store(true);
    sync_point();
    return true;
  }
  bool resume() override {
    if (!paused_.exchange(false)) return false;
    mask_.store(saved_mask_);
    sync_point();
    return true;
  }
  bool paused() const override { return paused_.load(); }
  uint64_t pause_generation() const override { return generation_.load(); }
  uint64_t paused_since_last_read() override { return paused_since_read_.exchange(paused_.load()) ? 1 : 0; }

  // The helper's round: the "sampler" (one sample per live thread per round, its stack Main > Work >
  // Leaf) is drained into the MetaLog, as the capture code's drain does.
  void round() override {
    ++rounds;
    if (stopped_.load() || !installed_.load() || !(mask_.load() & format::MASK_SAMPLE)) return;
    std::lock_guard<std::mutex> lock(threads_mutex_);
    for (const runtime::OsThread& t : threads_) {
      if (t.os_tid <= 0) continue;
      Event e;
      e.kind = EventKind::sample_hit;
      e.time = rt::now_ns();
      e.ptr = t.tid;
      e.ips = {kCode[2] + 0x10};
      e.frames = {kMethod[2], kMethod[1], kMethod[0]};
      env_.meta->add_at(e);
      ++samples_written_;
    }
  }
  void final_round(bool) override {
    round();
    ++final_rounds;
  }

  runtime::SampleStats sample_stats() const override {
    runtime::SampleStats s;
    s.taken = s.written = samples_written_.load();
    s.freq = config_.sample_mode != runtime::kSampleOff ? config_.sample_freq : 0;
    s.engine = "the fake runtime's rounds";
    return s;
  }
  uint64_t alloc_sample_bytes() const override { return 0; }
  void take_new_counters(std::vector<runtime::Counter>& out) override {
    if (counter_given_) return;
    counter_given_ = true;
    runtime::Counter c;
    c.handle = &widgets_;
    c.desc.section = uint64_t{1} << 13;  // mono-counters.h's RUNTIME section (the format has no other)
    c.desc.name = "Fake widgets made";
    c.desc.type = format::COUNTER_ULONG;
    c.desc.unit = format::COUNTER_UNIT_COUNT;
    c.desc.variance = format::COUNTER_VARIANCE_MONOTONIC;
    c.size = 8;
    out.push_back(c);
  }
  bool read_counter(const runtime::Counter& c, uint64_t& bits) override {
    bits = static_cast<const std::atomic<uint64_t>*>(c.handle)->load();
    return true;
  }
  std::vector<runtime::OsThread> os_threads() const override {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    return threads_;
  }

  // -- the "program" (what a runtime's callbacks see)
  void thread_started(const std::string& thread_name) {
    const uint64_t tid = static_cast<uint64_t>(pthread_self());
    meta(EventKind::thread_start, tid, "");
    meta(EventKind::thread_name, tid, thread_name);
    std::lock_guard<std::mutex> lock(threads_mutex_);
    threads_.push_back(runtime::OsThread{static_cast<int>(gettid()), tid, thread_name});
  }
  void thread_stopped() {
    const uint64_t tid = static_cast<uint64_t>(pthread_self());
    {
      std::lock_guard<std::mutex> lock(threads_mutex_);
      for (runtime::OsThread& t : threads_) {
        if (t.tid == tid && t.os_tid > 0) t.os_tid = -t.os_tid;
      }
    }
    meta(EventKind::thread_end, tid, "");
    env_.registry->thread_exit();
  }
  // One call of `m` at nesting `depth` (and its callees): enter/leave when `calls` and the depth allow.
  void call(int m, uint32_t depth) {
    const bool record = config_.calls && !stopped_.load() && depth < depth_.load() && !paused_.load();
    if (record) {
      if (rt::ThreadLog* log = env_.registry->get()) rt::write_method(*log, format::TYPE_ENTER, rt::now_ns(), kMethod[m]);
    }
    widgets_.fetch_add(1);
    if (m + 1 < kMethods) call(m + 1, depth + 1);
    if (record) {
      if (rt::ThreadLog* log = env_.registry->get()) rt::write_method(*log, format::TYPE_LEAVE, rt::now_ns(), kMethod[m]);
    }
  }
  bool recording() const { return installed_.load() && !stopped_.load(); }

  std::atomic<int> installs{0}, detaches{0}, rounds{0}, final_rounds{0};

 private:
  void describe(EventKind kind, uint64_t ptr, uint64_t ptr2, const char* name) {
    Event e;
    e.kind = kind;
    e.ptr = ptr;
    e.ptr2 = ptr2;
    e.name = name;
    env_.meta->add(e, rt::now_ns);
  }
  void meta(EventKind kind, uint64_t tid, const std::string& name) {
    if (stopped_.load()) return;
    Event e;
    e.kind = kind;
    e.ptr = tid;
    e.name = name;
    env_.meta->add(e, rt::now_ns);
  }
  void sync_point() {
    Event e;
    e.kind = EventKind::sync_point;
    e.code = format::SYNC_POINT_PERIODIC;
    env_.meta->add(e, rt::now_ns);
    generation_.fetch_add(1);
  }

  runtime::Config config_;
  runtime::Env env_;
  std::atomic<uint32_t> mask_{0};
  uint32_t saved_mask_ = 0;
  std::atomic<uint32_t> depth_{0};
  std::atomic<bool> paused_{false}, paused_since_read_{false}, installed_{false}, stopped_{false};
  std::atomic<uint64_t> generation_{0}, samples_written_{0}, widgets_{0};
  bool counter_given_ = false;
  mutable std::mutex threads_mutex_;
  std::vector<runtime::OsThread> threads_;
};

// One request line to the command port, its answer line.
std::string ask(int port, const std::string& line) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "(no socket)";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer = "(no connection)";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string l = line + "\r\n";
    if (::write(fd, l.data(), l.size()) == static_cast<ssize_t>(l.size())) {
      answer.clear();
      char c;
      while (::read(fd, &c, 1) == 1 && c != '\n') {
        if (c != '\r') answer += c;
      }
    }
  }
  ::close(fd);
  return answer;
}

int g_failures = 0;
void expect(const char* step, bool ok, const std::string& said) {
  std::printf("%s: %s%s\n", step, said.c_str(), ok ? "" : "  <-- unexpected");
  if (!ok) ++g_failures;
}
bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: door_fake OPTIONS PORT\n");
    return 2;
  }
  const int port = std::atoi(argv[2]);
  static FakeRuntime fake;  // the runtime's one instance (outlives the agent)
  mlpd::agent::start(argv[1], fake);
  expect("start", mlpd::agent::profiling() && fake.installs == 1, mlpd::agent::profiling() ? "profiling" : "not profiling");
  if (!mlpd::agent::profiling()) return 1;

  // The program: two threads calling Main > Work > Leaf, while the helper rounds sample them.
  const auto work = [&](const char* name, int calls) {
    fake.thread_started(name);
    for (int i = 0; i < calls; ++i) {
      fake.call(0, 0);
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    fake.thread_stopped();
  };
  std::thread a(work, "fake-worker-1", 2000), b(work, "fake-worker-2", 2000);
  a.join();
  b.join();

  expect("stats", starts(ask(port, "stats"), "OK bytes="), ask(port, "stats"));
  std::string s = ask(port, "events");
  expect("events", starts(s, "OK events:"), s);
  s = ask(port, "pause");
  expect("pause", s == "OK paused" && fake.paused(), s);
  std::thread c(work, "fake-paused", 500);  // nothing of its calls is recorded
  c.join();
  s = ask(port, "pause");
  expect("pause again", s == "OK paused (already)", s);
  s = ask(port, "resume");
  expect("resume", s == "OK resumed" && !fake.paused(), s);
  s = ask(port, "heapshot");  // the fake has none: the interface's default says so
  expect("heapshot", s == "ERR heapshot: not available in this build", s);
  std::thread d(work, "fake-worker-3", 1000);
  d.join();
  s = ask(port, "flush");
  expect("flush", s == "OK flush", s);

  std::string message;
  const bool detached = mlpd::agent::detach(message);
  expect("detach", detached && fake.detaches == 1 && !mlpd::agent::profiling() && fake.final_rounds == 1 && fake.rounds > 1,
         message + " (rounds " + std::to_string(fake.rounds.load()) + ")");
  s = ask(port, "stats");
  expect("port closed after detach", s == "(no connection)", s);
  return g_failures ? 1 : 0;
}
