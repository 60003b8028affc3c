// The reader's memory budget (mlpd/budget.h): sizes, the heap measure, and decode() ending with one
// problem (the limit, the offset) once a visitor's memory passes it.
#include "mlpd_catch.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlpd/budget.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"

using namespace mlpd;

TEST_CASE("parse_size: numbers with binary units, 0 for no limit, junk refused", "[budget]") {
  uint64_t b = 7;
  CHECK(parse_size("0", b));
  CHECK(b == 0);
  CHECK(parse_size("4096", b));
  CHECK(b == 4096);
  CHECK(parse_size("512K", b));
  CHECK(b == 512u << 10);
  CHECK(parse_size("64m", b));
  CHECK(b == 64u << 20);
  CHECK(parse_size("2G", b));
  CHECK(b == uint64_t{2} << 30);
  CHECK(parse_size("1GiB", b));
  CHECK(b == uint64_t{1} << 30);
  CHECK(parse_size("3MB", b));
  CHECK(b == 3u << 20);
  CHECK(parse_size("1T", b));
  CHECK(b == uint64_t{1} << 40);
  for (const char* bad : {"", "M", "-1", "1.5G", "12Q", "1GG", "99999999999999999999", "20000000T", " 1G"}) {
    INFO(bad);
    CHECK_FALSE(parse_size(bad, b));
  }
}

namespace {

bool sanitizer_allocator() {
  // ASan/TSan replace malloc; mallinfo2 then sees nothing and the budget cannot work.
  auto* p = new char[1 << 20];
  p[0] = 1;
  const bool zero = MemoryBudget::in_use() == 0;
  delete[] p;
  return zero;
}

// Keeps 1 KiB per event it sees: a visitor whose memory grows with the file.
struct Hoarder final : Visitor {
  std::vector<std::unique_ptr<char[]>> kept;
  std::vector<Problem> problems;
  void on_event(const Event&, const EventInfo&) override {
    kept.emplace_back(new char[1024]);
    kept.back()[0] = 1;
  }
  void on_problem(const Problem& p) override { problems.push_back(p); }
};

std::vector<uint8_t> file_of_events(size_t n) {
  std::vector<uint8_t> out;
  FileHeader h;
  h.arch = "x86-64";
  h.os = "linux";
  encode_file_header(h, out);
  BufferEncoder enc(1, 1000);
  Event e;
  e.kind = EventKind::heap_start;
  for (size_t i = 0; i < n; ++i) {
    e.time = 1000 + i;
    enc.add(e);
    if (enc.data_size() > 30000) {
      enc.finish_into(out);
      enc.reset(1, e.time);
    }
  }
  enc.finish_into(out);
  return out;
}

}  // namespace

TEST_CASE("decode() within a budget: one problem naming the limit and the offset, then the end", "[budget]") {
  if (sanitizer_allocator()) {
    WARN("malloc cannot tell its heap in use here (sanitizer): the budget is off");
    return;
  }
  const std::vector<uint8_t> file = file_of_events(200000);  // 200k events: ~200 MiB for the Hoarder
  MemoryBudget budget(MemoryBudget::in_use() + (32u << 20));
  std::unique_ptr<Input> in = Input::from_memory(file.data(), file.size());
  Hoarder v;
  DecodeOptions opt;
  opt.budget = &budget;
  const DecodeSummary s = decode(*in, v, opt);
  REQUIRE(v.problems.size() == 1);
  CHECK(v.problems[0].message.rfind("memory budget exceeded: ", 0) == 0);
  CHECK(v.problems[0].message.find("above the limit of ") != std::string::npos);
  CHECK(v.problems[0].message.find("--max-memory") != std::string::npos);
  CHECK(v.problems[0].offset > 0);
  CHECK(v.problems[0].offset < file.size());
  // Stopped within a check interval (4096 events, 4 MiB here) of the limit, long before the end.
  CHECK(s.events < 200000);
  CHECK(v.kept.size() * 1024 < (32u << 20) + (8u << 20));
  CHECK(budget.peak() > budget.limit());

  // Without a budget (or with no limit) the same file is read to its end.
  v.kept.clear();
  v.problems.clear();
  budget.set_limit(0);
  in = Input::from_memory(file.data(), file.size());
  const DecodeSummary all = decode(*in, v, opt);
  CHECK(v.problems.empty());
  CHECK(all.events == 200000);
}
