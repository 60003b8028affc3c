// BufferPipeline (mlpd/buffer_pipeline.h), the one reading-ahead driver of verify, heapshots, dump and
// the profile build: buffers used in file order whatever order the workers finish in, problems found
// reading ahead reported in file order with the offsets decode() gives, the memory budget, early stops
// (a problem, the budget, a stage that yields or gives up), workers named by the stage, pausing, and
// the same results for every number of workers and slots.
#include "mlpd_catch.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "event_gen.h"
#include "recording_visitor.h"
#include "mlpd/budget.h"
#include "mlpd/buffer_pipeline.h"
#include "mlpd/decode_loop.h"
#include "mlpd/decoder.h"
#include "mlpd/format.h"

using namespace mlpd;
using namespace mlpd::test;
using Bytes = std::vector<uint8_t>;

namespace {

// Decodes each buffer on a worker (sleeping a little, differently per buffer, so that workers finish
// out of order), and records in use() what it was given, in the order given.
class TestStage : public PipelineStage {
 public:
  explicit TestStage(size_t slots, RecordingVisitor& v) : found_(slots), v_(v) {}
  struct Found {
    uint64_t events = 0;
    std::string message;
    uint64_t offset = 0;
    uint64_t index = 0;
    unsigned worker = 0;
    int decoded = 0;  // how many times work() ran on it
  };
  void work(PipelineSlot& s, unsigned w) override {
    Found& f = found_[s.index];
    std::this_thread::sleep_for(std::chrono::microseconds(((s.seq * 7) % 5) * 150));
    BufferDecoder dec(s.info.header, s.bytes, s.info.offset + format::kBufferHeaderSize);
    Event e;
    uint64_t off = 0, n = 0;
    f.message.clear();
    while (dec.next(e, f.message, off)) ++n;
    f.events = n;
    f.offset = dec.problem_offset();
    f.index = s.info.index;
    f.worker = w;
    ++f.decoded;
    ++work_calls;
  }
  void use(PipelineSlot& s, PipelineResult& r) override {
    Found& f = found_[s.index];
    used.push_back(f.index);
    v_.calls.push_back("use " + std::to_string(s.info.index));
    workers.push_back(f.worker);
    decoded.push_back(f.decoded);
    f.decoded = 0;
    r.events = f.events;
    events_used += f.events;
    r.message = f.message;
    r.problem_offset = f.offset;
  }
  std::vector<uint64_t> used;
  std::vector<unsigned> workers;
  std::vector<int> decoded;
  std::atomic<int> work_calls{0};
  uint64_t events_used = 0;

 protected:
  std::vector<Found> found_;
  RecordingVisitor& v_;
};

// decode()'s calls with a "use N" after each buffer's on_buffer (what the pipeline's stage sees).
std::vector<std::string> with_uses(std::vector<std::string> calls) {
  std::vector<std::string> out;
  for (const std::string& c : calls) {
    out.push_back(c);
    if (c.rfind("buffer ", 0) == 0) out.push_back("use " + c.substr(7, c.find(' ', 7) - 7));
  }
  return out;
}

struct RunOut {
  RecordingVisitor v;
  DecodeSummary s;
  BufferPipeline::Run run = BufferPipeline::Run::kEnd;
  std::vector<uint64_t> used;
};

RunOut run_pipeline(const Bytes& file, unsigned workers, size_t slots, const DecodeOptions& opt = {}) {
  RunOut o;
  auto in = Input::from_memory(file.data(), file.size());
  BufferPipeline p(*in, o.v, opt);
  TestStage stage(slots, o.v);
  if (p.start()) o.run = p.run(stage, workers, slots);
  o.s = p.finish();
  o.used = stage.used;
  return o;
}

RunOut run_decode(const Bytes& file, const DecodeOptions& opt = {}) {
  RunOut o;
  auto in = Input::from_memory(file.data(), file.size());
  o.s = decode(*in, o.v, opt);
  o.v.calls = with_uses(o.v.calls);
  return o;
}

Bytes make_file(uint64_t seed, int buffers, int max_events = 40) {
  EventGen gen(seed);
  std::vector<ThreadBuffer> bufs;
  for (int i = 0; i < buffers; ++i)
    bufs.push_back({static_cast<uint64_t>(0x100 + i % 5), 1000u + i, gen.events(1 + gen.below(max_events))});
  return build_file(bufs);
}

// Where buffer i of `file` starts.
std::vector<uint64_t> buffer_offsets(const Bytes& file) {
  RecordingVisitor v;
  auto in = Input::from_memory(file.data(), file.size());
  struct Offsets final : Visitor {
    std::vector<uint64_t> at;
    void on_buffer(const BufferInfo& b) override { at.push_back(b.offset); }
  } o;
  decode(*in, o);
  return o.at;
}

}  // namespace

TEST_CASE("BufferPipeline: buffers used in file order, workers finishing in any order", "[pipeline]") {
  const Bytes file = make_file(11, 50);
  const RunOut ref = run_decode(file);
  for (unsigned workers : {1u, 2u, 4u}) {
    for (size_t slots : {2u, 3u, 16u}) {
      INFO("workers " << workers << " slots " << slots);
      const RunOut o = run_pipeline(file, workers, slots);
      CHECK(o.run == BufferPipeline::Run::kEnd);
      REQUIRE(o.used.size() == 50);
      for (size_t i = 0; i < o.used.size(); ++i) CHECK(o.used[i] == i);
      CHECK(o.v.calls == ref.v.calls);
      CHECK(summary_text(o.s) == summary_text(ref.s));
    }
  }
}

TEST_CASE("BufferPipeline: problems found reading ahead come in file order, as decode() gives them",
          "[pipeline]") {
  const Bytes good = make_file(12, 40);
  const std::vector<uint64_t> at = buffer_offsets(good);
  REQUIRE(at.size() == 40);
  SECTION("a corrupt buffer id in the middle ends reading there, after the buffers before it") {
    Bytes bad = good;
    bad[at[25]] ^= 0xFF;  // buffer 25's id
    const RunOut ref = run_decode(bad);
    REQUIRE(ref.s.problems == 1);
    const std::string want = "problem " + std::to_string(at[25]) + " 25 bad buffer id";
    CHECK(ref.v.calls.back().rfind(want, 0) == 0);
    for (unsigned workers : {1u, 3u}) {
      const RunOut o = run_pipeline(bad, workers, 8);
      CHECK(o.v.calls == ref.v.calls);
      CHECK(o.v.calls.back().rfind(want, 0) == 0);
      CHECK(o.used.size() == 25);
      CHECK(summary_text(o.s) == summary_text(ref.s));
    }
  }
  SECTION("the file cut inside a buffer: the truncation with its byte offset, after the last whole buffer") {
    Bytes cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(at[30] + 60));
    const RunOut ref = run_decode(cut);
    REQUIRE(ref.s.problems == 1);
    const std::string want = "problem " + std::to_string(cut.size()) + " 30 truncated buffer data";
    CHECK(ref.v.calls.back().rfind(want, 0) == 0);
    for (unsigned workers : {1u, 2u}) {
      const RunOut o = run_pipeline(cut, workers, 4);
      CHECK(o.v.calls == ref.v.calls);
      CHECK(summary_text(o.s) == summary_text(ref.s));
    }
  }
  SECTION("problems in buffers' events: each between its buffer's on_buffer and on_buffer_end") {
    EventGen gen(13);
    for (int round = 0; round < 60; ++round) {
      INFO("round " << round);
      Bytes bad = good;
      for (int c = 0; c < 3; ++c) bad[at[0] + gen.below(bad.size() - at[0])] = static_cast<uint8_t>(gen.below(256));
      DecodeOptions stop;
      stop.stop_at_first_problem = true;
      for (const DecodeOptions& opt : {DecodeOptions{}, stop}) {
        const RunOut ref = run_decode(bad, opt);
        const RunOut o = run_pipeline(bad, 2, 5, opt);
        CHECK(o.v.calls == ref.v.calls);
        CHECK(summary_text(o.s) == summary_text(ref.s));
      }
    }
  }
}

TEST_CASE("BufferPipeline: the memory budget refuses the file as decode() does", "[pipeline][budget]") {
  const Bytes file = make_file(14, 20);
  SECTION("exceeded at the first buffer read") {
    MemoryBudget tiny(1);
    DecodeOptions opt;
    opt.budget = &tiny;
    const RunOut ref = run_decode(file, opt);
    REQUIRE(ref.s.problems == 1);
    CHECK(ref.v.calls.back().find("memory budget exceeded") != std::string::npos);
    const RunOut o = run_pipeline(file, 2, 4, opt);
    CHECK(o.used.empty());
    CHECK(o.v.calls == ref.v.calls);
    CHECK(summary_text(o.s) == summary_text(ref.s));
  }
  SECTION("exceeded on a worker: one problem at its offset, the buffers read ahead count as never read") {
    struct BudgetStage final : TestStage {
      using TestStage::TestStage;
      void use(PipelineSlot& s, PipelineResult& r) override {
        TestStage::use(s, r);
        if (s.info.index == 6) {
          r.over_budget = true;
          r.budget_offset = s.info.offset + 50;
        }
      }
    };
    const std::vector<uint64_t> at = buffer_offsets(file);
    MemoryBudget huge(uint64_t{1} << 50);
    DecodeOptions opt;
    opt.budget = &huge;
    for (unsigned workers : {1u, 2u}) {
      RecordingVisitor v;
      auto in = Input::from_memory(file.data(), file.size());
      BufferPipeline p(*in, v, opt);
      BudgetStage stage(8, v);
      REQUIRE(p.start());
      CHECK(p.run(stage, workers, 8) == BufferPipeline::Run::kStopped);
      const DecodeSummary s = p.finish();
      CHECK(stage.used.size() == 7);
      CHECK(s.buffers == 7);
      CHECK(s.problems == 1);
      CHECK(s.bytes == at[7]);  // the end of buffer 6
      REQUIRE(v.calls.size() >= 3);
      CHECK(v.calls[v.calls.size() - 2].rfind("problem " + std::to_string(at[6] + 50) + " 6 memory budget exceeded", 0) == 0);
      CHECK(v.calls.back() == "end 6");
    }
  }
}

TEST_CASE("BufferPipeline: a stage that yields goes on by one thread - one that gives up ends it", "[pipeline]") {
  const Bytes file = make_file(15, 30);
  const RunOut ref = run_decode(file);
  SECTION("yield after 10 buffers, then decode_rest") {
    struct YieldStage final : TestStage {
      using TestStage::TestStage;
      bool read_more() override { return used.size() < 10; }
    };
    for (unsigned workers : {1u, 2u}) {
      RecordingVisitor v;
      auto in = Input::from_memory(file.data(), file.size());
      BufferPipeline p(*in, v, {});
      YieldStage stage(4, v);
      REQUIRE(p.start());
      CHECK(p.run(stage, workers, 4) == BufferPipeline::Run::kYielded);
      // Those read before it said no are used too: at most the ring (4) less one more.
      const size_t used = stage.used.size();
      CHECK(used >= 10);
      CHECK(used <= 13);
      const DecodeSummary s = decode_rest(p, v, {});
      CHECK(summary_text(s) == summary_text(ref.s));
      // The rest came by one thread: no "use" after the buffers used.
      std::vector<std::string> want = ref.v.calls;
      for (size_t i = 0, uses = 0; i < want.size();) {
        if (want[i].rfind("use ", 0) == 0 && ++uses > used) {
          want.erase(want.begin() + static_cast<ptrdiff_t>(i));
        } else {
          ++i;
        }
      }
      CHECK(v.calls == want);
      CHECK(v.events > 0);  // decode_rest's on_event: the events of the buffers after those used
      CHECK(stage.events_used + v.events == ref.s.events);
    }
  }
  SECTION("give up at buffer 3") {
    struct QuitStage final : TestStage {
      using TestStage::TestStage;
      void use(PipelineSlot& s, PipelineResult& r) override {
        TestStage::use(s, r);
        if (s.info.index == 3) r.abandon = true;
      }
    };
    RecordingVisitor v;
    auto in = Input::from_memory(file.data(), file.size());
    BufferPipeline p(*in, v, {});
    QuitStage stage(6, v);
    REQUIRE(p.start());
    CHECK(p.run(stage, 2, 6) == BufferPipeline::Run::kAbandoned);
    CHECK(stage.used.size() == 4);
    CHECK(v.calls.back() == "use 3");  // no on_buffer_end for it, nothing after
  }
}

TEST_CASE("BufferPipeline: buffers go to the worker on_read names, in their order", "[pipeline]") {
  const Bytes file = make_file(16, 60);
  struct ByThread final : TestStage {
    using TestStage::TestStage;
    BufferPipeline* p = nullptr;
    std::vector<int> wanted;
    int on_read(PipelineSlot& s) override {
      const int w = static_cast<int>(s.info.header.thread_id % p->workers());
      wanted.push_back(w);
      return w;
    }
  };
  for (unsigned workers : {2u, 3u}) {
    RecordingVisitor v;
    auto in = Input::from_memory(file.data(), file.size());
    BufferPipeline p(*in, v, {});
    ByThread stage(12, v);
    stage.p = &p;
    REQUIRE(p.start());
    CHECK(p.run(stage, workers, 12, false, 4) == BufferPipeline::Run::kEnd);
    REQUIRE(stage.used.size() == 60);
    REQUIRE(stage.workers.size() == stage.wanted.size());
    CHECK(stage.workers == std::vector<unsigned>(stage.wanted.begin(), stage.wanted.end()));
    CHECK(v.calls == run_decode(file).v.calls);
  }
}

TEST_CASE("BufferPipeline: paused workers, buffers decoded again on resume", "[pipeline]") {
  const Bytes file = make_file(17, 40);
  struct PauseStage final : TestStage {
    using TestStage::TestStage;
    BufferPipeline* p = nullptr;
    std::atomic<int> running{0};
    bool overlap = false;
    void work(PipelineSlot& s, unsigned w) override {
      ++running;
      TestStage::work(s, w);
      --running;
    }
    void use(PipelineSlot& s, PipelineResult& r) override {
      TestStage::use(s, r);
      if (s.info.index % 5 == 0) {
        p->pause_workers();
        if (running != 0) overlap = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (running != 0) overlap = true;
        p->resume_workers([](PipelineSlot&) { return true; });  // everything decoded ahead, again
      }
    }
  };
  RecordingVisitor v;
  auto in = Input::from_memory(file.data(), file.size());
  BufferPipeline p(*in, v, {});
  PauseStage stage(10, v);
  stage.p = &p;
  REQUIRE(p.start());
  CHECK(p.run(stage, 3, 10) == BufferPipeline::Run::kEnd);
  CHECK_FALSE(stage.overlap);
  CHECK(stage.used.size() == 40);
  CHECK(stage.work_calls.load() > 40);  // some were decoded again
  int again = 0;
  for (int d : stage.decoded) again += d > 1;
  CHECK(again > 0);
  CHECK(v.calls == run_decode(file).v.calls);
}

TEST_CASE("BufferPipeline: a mapped file lent where it lies gives the same", "[pipeline]") {
  const Bytes file = make_file(18, 200, 400);
  char path[] = "/tmp/mlpd_pipeline_test_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, file.data(), file.size()) == static_cast<ssize_t>(file.size()));
  close(fd);
  const RunOut ref = run_decode(file);
  std::string error;
  auto in = Input::open(path, error);
  REQUIRE(in);
  RecordingVisitor v;
  BufferPipeline p(*in, v, {});
  TestStage stage(8, v);
  REQUIRE(p.start());
  CHECK(p.run(stage, 2, 8, true) == BufferPipeline::Run::kEnd);
  CHECK(summary_text(p.finish()) == summary_text(ref.s));
  CHECK(v.calls == ref.v.calls);
  std::remove(path);
}
