// zip's producers' help (writer/include/mlpd/rt/buffer_packer.h): while more than a bound of full
// buffers wait for the helper, the threads compress their own full buffers into gzip members and
// reuse them. The backlog (and so the pool) stays bounded however late the helper is, and the file --
// the helper's rounds through a gzip sink, members written as they are -- holds every event of every
// thread in order, with metadata before use. Also in the TSan build (scripts/sanitize.sh).
#include "mlpd_catch.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mlpd/agent/flusher.h"
#include "mlpd/checks.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/input.h"
#include "mlpd/rt/buffer_packer.h"
#include "mlpd/rt/events.h"
#include "mlpd/sink.h"

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
  void on_warning(const Problem& p) override { problems.push_back("warning: " + p.message); }
};

// A sink that hands everything to a MemorySink the test keeps (the gzip sink owns its inner sink).
struct Forward final : OutputSink {
  MemorySink& to;
  explicit Forward(MemorySink& m) : to(m) {}
  bool write(const void* d, size_t n) override { return to.write(d, n); }
  bool flush() override { return to.flush(); }
  bool close() override { return to.close(); }
  void abandon() override { to.abandon(); }
  std::string error() const override { return to.error(); }
  std::string describe() const override { return to.describe(); }
  uint64_t written() const override { return to.written(); }
};

struct Packed {
  rt::BufferPool pool;
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::BufferPacker packer;
  rt::ThreadRegistry registry{shared};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::Flusher flusher{shared, registry, meta};
  MemorySink memory;
  std::unique_ptr<OutputSink> gzip;
  Packed(uint32_t buffer_bytes, uint32_t max_buffers, uint32_t compressors, uint32_t pack_above)
      : pool(buffer_bytes, max_buffers), packer(1, compressors, buffer_bytes + format::kBufferHeaderSize, 16384) {
    shared.pool = &pool;
    shared.queue = &queue;
    shared.packer = &packer;
    shared.pack_above = pack_above;
    std::string error;
    gzip = make_gzip_sink(std::make_unique<Forward>(memory), -1, error);
    REQUIRE(gzip);
    std::vector<uint8_t> header;
    encode_file_header(FileHeader{}, header);
    REQUIRE(gzip->write(header.data(), header.size()));
  }
  Collector decode_file() {
    REQUIRE(gzip->close());
    auto input = Input::from_memory(memory.data().data(), memory.data().size());
    Collector c;
    const DecodeSummary s = decode(*input, c);
    CHECK(s.problems == 0);
    return c;
  }
};

uint64_t method_of(int t, uint64_t i) { return 0x100000 * (t + 1) + 16 * (i % 64); }

// Thread t's events: its 64 "methods" described (as jit_done would) before first use, then
// alternating enters and leaves. Runs on threads of its own: no Catch assertion here (Catch is not
// thread-safe); a missing log leaves tid 0, which the checks then fail on.
void write_events(Packed& a, int t, uint64_t count, uint64_t& tid) {
  rt::ThreadLog* log = a.registry.get();
  if (!log) return;
  tid = log->thread_id();
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t method = method_of(t, i);
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
}

void check_thread(const Collector& c, uint64_t tid, int t, uint64_t count) {
  const auto it = c.by_thread.find(tid);
  REQUIRE(it != c.by_thread.end());
  const std::vector<Event>& events = it->second;
  REQUIRE(events.size() == count);
  uint64_t last_time = 0;
  for (uint64_t i = 0; i < count; ++i) {
    REQUIRE(events[i].kind == ((i % 2) ? EventKind::method_leave : EventKind::method_enter));
    REQUIRE(events[i].method == method_of(t, i));
    REQUIRE(events[i].time >= last_time);
    last_time = events[i].time;
  }
}

}  // namespace

TEST_CASE("zip: with the helper not running at all, the threads keep the backlog at the bound", "[agent][packing]") {
  // 64 KiB buffers as the agent's; a bound of 8 full buffers. The thread writes ~90 buffers' worth
  // while no round runs: without the threads' help every one of them would wait in the pool.
  constexpr uint32_t kAbove = 8;
  Packed a(65536, 4096, 2, kAbove);
  constexpr uint64_t kEvents = 2'000'000;
  uint64_t tid = 0;
  std::thread writer([&] { write_events(a, 0, kEvents, tid); });
  writer.join();
  const rt::BufferPacker::Stats st = a.packer.stats();
  INFO("buffers allocated " << a.pool.allocated() << ", members " << st.packed << ", waiting "
                            << a.shared.full_waiting.load());
  CHECK(a.shared.full_waiting.load() == kAbove + 1);  // the bound, then the last one (retire)
  CHECK(a.pool.allocated() == kAbove + 1);
  CHECK(st.packed > 50);  // ~90 buffers of events
  CHECK(st.no_compressor + st.no_member == 0);
  CHECK(st.member_bytes * 2 < st.input_bytes);  // compressed, not stored
  // All waiting (none given back yet), each in as many 4 KiB member buffers as its size needs.
  CHECK(a.packer.members_allocated() >= st.packed);
  CHECK(a.packer.members_allocated() <= st.packed + st.member_bytes / rt::BufferPacker::kMemberBytes);

  REQUIRE(a.flusher.round(*a.gzip, true, rt::now_ns()));
  CHECK(a.shared.full_waiting.load() == 0);
  CHECK(a.flusher.stats().members == st.packed);
  const Collector c = a.decode_file();
  for (const std::string& p : c.problems) INFO(p);
  CHECK(c.problems.empty());
  check_thread(c, tid, 0, kEvents);
}

TEST_CASE("zip: threads compressing while the helper's rounds slice their live buffers lose nothing", "[agent][packing]") {
  // Every full buffer is compressed by its thread (bound 0), with fewer compressors than threads (so
  // some go to the helper as they are) and small buffers, so that the helper's live slices and the
  // threads' claims meet often.
  Packed a(4096, 4096, 2, 0);
  constexpr int kThreads = 4;
  constexpr uint64_t kEvents = 40000;
  std::atomic<int> running{kThreads};
  std::atomic<bool> failed{false};
  std::thread helper([&] {
    int n = 0;
    while (running.load() > 0) {
      if (!a.flusher.round(*a.gzip, (++n % 2) == 0, rt::now_ns())) failed = true;
      std::this_thread::yield();
    }
    // As the helper's final rounds: a thread may still be between its claim and its push.
    for (int i = 0; i < 1000 && a.shared.packing.load() != 0; ++i) std::this_thread::yield();
    if (!a.flusher.round(*a.gzip, true, rt::now_ns())) failed = true;
  });
  std::vector<uint64_t> tids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      write_events(a, t, kEvents, tids[t]);
      running.fetch_sub(1);
    });
  }
  for (auto& th : threads) th.join();
  helper.join();
  CHECK_FALSE(failed.load());
  CHECK(a.shared.dropped_events.load() == 0);
  CHECK(a.shared.full_waiting.load() == 0);
  const rt::BufferPacker::Stats st = a.packer.stats();
  CHECK(st.packed > 0);
  CHECK(a.flusher.stats().members == st.packed);
  const Collector c = a.decode_file();
  for (const std::string& p : c.problems) INFO(p);
  CHECK(c.problems.empty());
  for (int t = 0; t < kThreads; ++t) check_thread(c, tids[t], t, kEvents);
}

TEST_CASE("zip: without enough member buffers a full buffer is left to the helper, the events intact", "[agent][packing]") {
  // Two member buffers of 64 bytes: no member fits in them, every full buffer goes to the helper as
  // it is (and the member buffers taken for a failed member are given back).
  rt::BufferPool pool(65536, 64);
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::BufferPacker packer(1, 1, 65536 + format::kBufferHeaderSize, 2, 64);
  shared.pool = &pool;
  shared.queue = &queue;
  shared.packer = &packer;
  rt::ThreadRegistry registry{shared};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::Flusher flusher{shared, registry, meta};
  std::thread writer([&] {
    rt::ThreadLog* log = registry.get();
    if (!log) return;
    for (uint64_t i = 0; i < 100000; ++i) rt::write_method(*log, (i % 2) ? format::TYPE_LEAVE : format::TYPE_ENTER, i, 0x1000);
    registry.thread_exit();
  });
  writer.join();
  CHECK(packer.stats().packed == 0);
  CHECK(packer.stats().no_member > 0);
  CHECK(packer.members_allocated() == 2);
  std::vector<uint8_t> file;
  encode_file_header(FileHeader{}, file);
  flusher.round(file, true, rt::now_ns());
  auto input = Input::from_memory(file.data(), file.size());
  Collector c;
  decode(*input, c);
  size_t n = 0;
  for (auto& [t, ev] : c.by_thread) n += ev.size();
  CHECK(n == 100000);
}
