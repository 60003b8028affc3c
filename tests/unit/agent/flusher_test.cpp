// The writer's concurrency protocol end to end: threads write events through their ThreadLogs (with
// metadata added just before use) while the helper's flush rounds run concurrently; the decoded file
// must hold every event of every thread, in order, with all metadata before use.
#include "mlpd_catch.h"

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "mlpd/agent/flusher.h"
#include "mlpd/checks.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/rt/events.h"

using namespace mlpd;

namespace {

struct Collector : Visitor {
  std::map<uint64_t, std::vector<Event>> by_thread;
  std::vector<std::string> problems;
  ReferenceChecker checker;
  void on_event(const Event& e, const EventInfo& info) override {
    by_thread[info.buffer->header.thread_id].push_back(e);
    std::string r = checker.check(e);
    if (!r.empty()) problems.push_back(r);
  }
  void on_problem(const Problem& p) override { problems.push_back(p.message); }
};

struct Agentlet {
  rt::BufferPool pool;
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::ThreadRegistry registry{shared};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::Flusher flusher{shared, registry, meta};
  explicit Agentlet(uint32_t buffer_bytes, uint32_t max_buffers) : pool(buffer_bytes, max_buffers) {
    shared.pool = &pool;
    shared.queue = &queue;
  }
};

}  // namespace

TEST_CASE("concurrent writers and flush rounds lose nothing and keep metadata before use", "[agent][flusher]") {
  // Small buffers so that threads fill many and the helper slices many live ones.
  Agentlet a(4096, 4096);
  constexpr int kThreads = 4;
  constexpr uint64_t kEvents = 20000;
  std::atomic<int> running{kThreads};
  std::vector<uint8_t> file;
  encode_file_header(FileHeader{}, file);

  std::thread helper([&] {
    std::vector<uint8_t> out;
    int n = 0;
    while (running.load() > 0) {
      a.flusher.round(out, (++n % 3) == 0, rt::now_ns());
      std::this_thread::yield();
    }
    a.flusher.round(out, true, rt::now_ns());
    file.insert(file.end(), out.begin(), out.end());
  });

  std::vector<uint64_t> tids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      rt::ThreadLog* log = a.registry.get();
      REQUIRE(log);
      tids[t] = log->thread_id();
      // Each thread describes its own "methods" (as jit_done would) before entering them.
      for (uint64_t i = 0; i < kEvents; ++i) {
        const uint64_t method = 0x100000 * (t + 1) + 16 * (i % 64);
        if (i < 64) {
          Event jit;
          jit.kind = EventKind::method_jit;
          jit.method = method;
          jit.ptr = method + 0x1000;
          jit.size = 16;
          jit.name = "T" + std::to_string(t) + ":M" + std::to_string(i);
          a.meta.add(jit, rt::now_ns);
        }
        rt::write_method(*log, (i % 2) ? format::TYPE_LEAVE : format::TYPE_ENTER, rt::now_ns(), method);
      }
      a.registry.thread_exit();
      running.fetch_sub(1);
    });
  }
  for (auto& th : threads) th.join();
  helper.join();

  auto input = Input::from_memory(file.data(), file.size());
  Collector c;
  const DecodeSummary s = decode(*input, c);
  CHECK(c.problems.empty());
  for (const std::string& p : c.problems) INFO(p);
  CHECK(s.problems == 0);
  CHECK(a.shared.dropped_events.load() == 0);
  for (int t = 0; t < kThreads; ++t) {
    const auto& events = c.by_thread[tids[t]];
    REQUIRE(events.size() == kEvents);
    uint64_t last_time = 0;
    for (uint64_t i = 0; i < kEvents; ++i) {
      const uint64_t method = 0x100000 * (t + 1) + 16 * (i % 64);
      REQUIRE(events[i].kind == ((i % 2) ? EventKind::method_leave : EventKind::method_enter));
      REQUIRE(events[i].method == method);
      REQUIRE(events[i].time >= last_time);
      last_time = events[i].time;
    }
  }
  CHECK(a.flusher.stats().buffers_written > 0);
}

TEST_CASE("a quiet thread's partial buffer reaches the file without the thread's help", "[agent][flusher]") {
  Agentlet a(65536, 64);
  std::atomic<bool> written{false}, release{false};
  std::thread quiet([&] {
    rt::ThreadLog* log = a.registry.get();
    for (int i = 0; i < 10; ++i) rt::write_method(*log, format::TYPE_ENTER, rt::now_ns(), 0x1000);
    written = true;
    while (!release) std::this_thread::yield();  // blocked, as far as the writer knows
    rt::write_method(*log, format::TYPE_LEAVE, rt::now_ns(), 0x1000);
    a.registry.thread_exit();
  });
  while (!written) std::this_thread::yield();
  std::vector<uint8_t> file;
  encode_file_header(FileHeader{}, file);
  Event jit;
  jit.kind = EventKind::method_jit;
  jit.method = 0x1000;
  jit.name = "Q:M";
  a.meta.add(jit, rt::now_ns);
  a.flusher.round(file, true, rt::now_ns());
  // The first 10 events are in the file while the thread still holds its buffer.
  {
    auto input = Input::from_memory(file.data(), file.size());
    Collector c;
    decode(*input, c);
    size_t n = 0;
    for (auto& [tid, ev] : c.by_thread) n += ev.size();
    CHECK(n == 11);  // 10 enters + the JIT event
  }
  release = true;
  quiet.join();
  a.flusher.round(file, true, rt::now_ns());
  auto input = Input::from_memory(file.data(), file.size());
  Collector c;
  const DecodeSummary s = decode(*input, c);
  CHECK(s.problems == 0);
  size_t enters = 0, leaves = 0;
  for (auto& [tid, ev] : c.by_thread)
    for (auto& e : ev) {
      enters += e.kind == EventKind::method_enter;
      leaves += e.kind == EventKind::method_leave;
    }
  CHECK(enters == 10);
  CHECK(leaves == 1);
}

TEST_CASE("a buffer handed off reaches the file before what other threads write later", "[agent][flusher]") {
  // A heapshot's end: the thread that took it writes heap_end and hands its buffer off, then stays
  // quiet (alive: its exit would hand the buffer over too); another thread then fills whole buffers.
  // A round that takes only the queued buffers (no live slicing) writes the first thread's events,
  // and before the other's.
  Agentlet a(4096, 64);
  std::vector<uint8_t> file;
  encode_file_header(FileHeader{}, file);
  std::atomic<uint64_t> quiet_tid{0};
  std::atomic<bool> release{false};
  std::thread quiet([&] {
    rt::ThreadLog* log = a.registry.get();
    rt::write_bare(*log, format::TYPE_HEAP | format::TYPE_HEAP_END, rt::now_ns());
    log->hand_off();
    quiet_tid = log->thread_id();
    while (!release) std::this_thread::yield();
    a.registry.thread_exit();
  });
  while (!quiet_tid) std::this_thread::yield();
  std::thread busy([&] {
    rt::ThreadLog* log = a.registry.get();
    for (int i = 0; i < 2000; ++i) rt::write_bare(*log, format::TYPE_HEAP | format::TYPE_HEAP_START, rt::now_ns());
    a.registry.thread_exit();
  });
  busy.join();
  a.flusher.round(file, false, rt::now_ns());
  struct Order : Visitor {
    std::vector<uint64_t> threads;  // each buffer's thread, in file order
    void on_event(const Event&, const EventInfo& info) override {
      if (threads.empty() || threads.back() != info.buffer->header.thread_id) threads.push_back(info.buffer->header.thread_id);
    }
  } order;
  auto input = Input::from_memory(file.data(), file.size());
  decode(*input, order);
  release = true;
  quiet.join();
  REQUIRE(!order.threads.empty());
  CHECK(order.threads.front() == quiet_tid.load());
}
