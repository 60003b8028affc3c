// The agent's helper thread (agent/src/helper_thread.h) with a fake runtime behind the door
// (fake_runtime.h) and an output in memory: what threads commit reaches the output in rounds (a live
// round asked for is waited for and has everything the finished threads wrote), stop() ends with the
// runtime's final round and the counters' last sample, the file decodes whole with every event once and
// metadata before use; the `stats` line counts it; and an output that fails is reported once, nothing
// more is written to it, and the helper still stops.
#include "mlpd_catch.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../../agent/src/helper_thread.h"
#include "event_gen.h"
#include "fake_runtime.h"
#include "mlpd/agent/options.h"
#include "mlpd/checks.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"

using namespace mlpd;

namespace {

constexpr uint64_t kMethod = 0x5000;

class MemoryOutput final : public agent::HelperOutput {
 public:
  bool write(const uint8_t* data, size_t size) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++writes;
    if (fail) {
      failed_ = true;
      return false;
    }
    bytes.insert(bytes.end(), data, data + size);
    return true;
  }
  bool flush() override {
    ++flushes;
    return !failed_;
  }
  void round_written() override { ++rounds_whole; }
  bool failed() const override { return failed_; }
  void report_failure() override { ++failures; }
  std::vector<uint8_t> taken() {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes;
  }

  std::atomic<bool> fail{false};
  std::atomic<int> writes{0}, flushes{0}, rounds_whole{0}, failures{0};  // the helper adds, the test reads

 private:
  std::mutex mu_;
  std::vector<uint8_t> bytes;
  std::atomic<bool> failed_{false};
};

struct Agent {
  agent::Options options;
  rt::BufferPool pool{4096, 256};
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::ThreadRegistry registry{shared};
  rt::MetaLog meta{1, rt::now_ns()};
  std::unique_ptr<agent::CommandServer> no_server;
  test::FakeRuntime runtime;
  MemoryOutput output;
  std::unique_ptr<agent::HelperThread> helper;

  Agent() {
    shared.pool = &pool;
    shared.queue = &queue;
    options.flush_ms = 50;
    runtime.mask = format::MASK_COUNTER;
    agent::HelperParts parts;
    parts.options = &options;
    parts.pool = &pool;
    parts.shared = &shared;
    parts.meta = &meta;
    parts.registry = &registry;
    parts.server = &no_server;
    parts.output = &output;
    parts.runtime = &runtime;
    helper = std::make_unique<agent::HelperThread>(parts);
    // The method the threads call, described before any thread uses it.
    Event jit;
    jit.reset(EventKind::method_jit);
    jit.method = kMethod;
    jit.name = "N:M ()";
    meta.add(jit, rt::now_ns);
  }
};

// `n` threads, each writing `calls` enter/leave pairs, then ending.
void run_threads(rt::ThreadRegistry& registry, int n, int calls) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&registry, calls] {
      rt::ThreadLog* log = registry.get();
      for (int i = 0; i < calls; ++i) {
        rt::write_method(*log, format::TYPE_ENTER, rt::now_ns(), kMethod);
        rt::write_method(*log, format::TYPE_LEAVE, rt::now_ns(), kMethod);
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

struct Counted {
  uint64_t enters = 0, leaves = 0, counter_samples = 0;
  std::vector<std::string> problems;
};

Counted decode_output(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> file;
  encode_file_header(test::default_header(), file);
  file.insert(file.end(), body.begin(), body.end());
  const test::DecodedFile d = test::decode_bytes(file);
  Counted c;
  ReferenceChecker checker;
  for (const Problem& p : d.problems) c.problems.push_back(p.message);
  for (const Event& e : d.event_list()) {
    if (std::string r = checker.check(e); !r.empty()) c.problems.push_back(r);
    c.enters += e.kind == EventKind::method_enter;
    c.leaves += e.kind == EventKind::method_leave;
    c.counter_samples += e.kind == EventKind::counter_samples;
  }
  return c;
}

}  // namespace

TEST_CASE("helper thread: rounds write what threads commit - stop ends with the final round", "[agent][helper]") {
  Agent a;
  REQUIRE(a.helper->start());
  run_threads(a.registry, 3, 2000);
  // A live round asked for: everything the ended threads wrote is in the output when it returns.
  REQUIRE(a.helper->live_round_and_wait(10000));
  {
    const Counted c = decode_output(a.output.taken());
    INFO(c.problems.size() << " problems, first: " << (c.problems.empty() ? "" : c.problems[0]));
    CHECK(c.problems.empty());
    CHECK(c.enters == 6000);
    CHECK(c.leaves == 6000);
  }
  CHECK(a.runtime.rounds >= 1);
  CHECK(a.runtime.final_rounds == 0);

  run_threads(a.registry, 2, 500);  // and more after it, written by the final rounds at the latest
  REQUIRE(a.helper->stop(10));
  CHECK(a.runtime.final_rounds == 1);
  const Counted c = decode_output(a.output.taken());
  INFO(c.problems.size() << " problems, first: " << (c.problems.empty() ? "" : c.problems[0]));
  CHECK(c.problems.empty());
  CHECK(c.enters == 7000);  // every event once
  CHECK(c.leaves == 7000);
  CHECK(c.counter_samples >= 2);  // the live round's sample and the final one (MASK_COUNTER)
  CHECK(a.output.failures == 0);
  CHECK(a.output.flushes >= 1);
  CHECK(a.output.rounds_whole >= 1);

  const std::string stats = a.helper->stats_line();
  INFO(stats);
  CHECK(stats.find(" flush_rounds=") != std::string::npos);
  CHECK(stats.find(" clients=0") != std::string::npos);
  CHECK(stats.find("output=failed") == std::string::npos);
  // events=: the threads' 14000 and the MetaLog's (the method, the counters).
  const size_t at = stats.find(" events=");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoull(stats.substr(at + 8)) > 14000);
}

TEST_CASE("helper thread: a failed output is reported once, written no more, and the helper stops", "[agent][helper]") {
  Agent a;
  a.output.fail = true;
  REQUIRE(a.helper->start());
  run_threads(a.registry, 2, 1000);
  a.helper->live_round_and_wait(10000);
  CHECK(a.output.failures == 1);
  const int writes = a.output.writes;
  CHECK(writes >= 1);
  run_threads(a.registry, 1, 1000);
  a.helper->live_round_and_wait(10000);
  REQUIRE(a.helper->stop(10));
  CHECK(a.output.failures == 1);        // one message
  CHECK(a.output.writes == writes);     // nothing more tried
  CHECK(a.output.taken().empty());
  CHECK(a.helper->stats_line().find(" output=failed") != std::string::npos);
  CHECK(a.runtime.final_rounds == 1);
}
