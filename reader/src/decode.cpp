// decode(): a whole file through an Input, header and buffer by buffer (see decoder.h); the events
// of each buffer are decoded by the codec's BufferDecoder.
#include "mlpd/decoder.h"
#include "mlpd/decode_loop.h"
#include "decode_driver.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "mlpd/budget.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"
#include "mlpd/hex.h"

namespace mlpd {

using namespace format;

namespace {

// Reads exactly n bytes; on a short read fills `problem` with a truncation message.
bool read_exact(Input& in, void* dst, size_t n, const char* what, int64_t buffer, Problem& problem) {
  const uint64_t at = in.offset();
  const size_t got = in.read(dst, n);
  if (got == n) return true;
  problem.offset = at + got;
  problem.buffer = buffer;
  problem.message = std::string("truncated ") + what + ": needs " + std::to_string(n) + " bytes, " +
                    std::to_string(got) + " present";
  if (!in.error().empty()) problem.message += " (" + in.error() + ")";
  return false;
}

constexpr uint32_t kMaxHeaderString = 1u << 20;

}  // namespace

bool parse_file_header(Input& in, FileHeader& h, Problem& problem) {
  uint8_t fixed[kFileHeaderFixedSize];
  problem.buffer = -1;
  if (!read_exact(in, fixed, sizeof fixed, "file header", -1, problem)) return false;
  auto bad = [&](uint64_t at, std::string msg) {
    problem.offset = at;
    problem.message = std::move(msg);
    return false;
  };
  const uint32_t id = decode_file_header_fixed(fixed, h);
  if (id != kFileId) {
    return bad(0, "not an mlpd file: header id " + hex(id) + ", expected " + hex(kFileId));
  }
  if (h.major != kVersionMajor) {
    return bad(4, "unsupported format version " + std::to_string(h.major) + "." + std::to_string(h.minor) +
                      " (mlpd reads 3.x)");
  }
  if (h.data_version != kDataVersion) {
    return bad(6, "unsupported data version " + std::to_string(h.data_version) + " (mlpd reads 17)");
  }
  if (h.ptr_size != 4 && h.ptr_size != 8) {
    return bad(7, "invalid pointer size " + std::to_string(h.ptr_size));
  }
  if (h.flags != 0) return bad(28, "unsupported header flags " + hex(static_cast<uint32_t>(h.flags)));
  for (std::string* s : {&h.args, &h.arch, &h.os}) {
    const char* what = s == &h.args ? "header args" : s == &h.arch ? "header arch" : "header os";
    uint8_t len_bytes[4];
    const uint64_t at = in.offset();
    if (!read_exact(in, len_bytes, 4, what, -1, problem)) return false;
    const uint32_t len = static_cast<uint32_t>(header_string_length(len_bytes));
    if (len == 0 || len > kMaxHeaderString) {
      return bad(at, std::string(what) + ": invalid string length " + std::to_string(len));
    }
    s->resize(len);
    if (!read_exact(in, s->data(), len, what, -1, problem)) return false;
    if ((*s)[len - 1] != '\0') return bad(at + 4 + len - 1, std::string(what) + ": string not NUL-terminated");
    s->resize(strnlen(s->data(), len));
  }
  return true;
}

namespace detail {

void DecodeDriver::report(const Problem& p) { report_cut(p, in_.truncation_warning()); }

void DecodeDriver::report_cut(const Problem& p, std::string cut) {
  // A gzip input cut inside its last member, or ending inside its last buffer (a writer killed
  // mid-round) ends the file where the cut is: a warning, not a problem; what came before has been
  // decoded.
  const bool warning = !cut.empty();
  Problem w;
  if (warning) w = {p.offset, p.buffer, std::move(cut)};
  if (deferring_) {
    deferred_.emplace_back(warning, warning ? std::move(w) : p);
    return;
  }
  deliver(warning, warning ? w : p);
}

void DecodeDriver::deliver(bool warning, const Problem& p) {
  if (warning) {
    s_.truncated = true;
    v_.on_warning(p);
  } else {
    ++s_.problems;
    v_.on_problem(p);
  }
}

void DecodeDriver::report_deferred() {
  for (const auto& [warning, p] : deferred_) deliver(warning, p);
  deferred_.clear();
}

bool DecodeDriver::start() {
  Problem problem;
  FileHeader header;
  if (!parse_file_header(in_, header, problem)) {
    ++s_.problems;  // no header, no file: an error even when the cut is a killed writer's
    v_.on_problem(problem);
    return false;
  }
  s_.header_ok = true;
  v_.on_header(header);
  info_.index = UINT64_MAX;  // next_buffer() makes it 0
  return true;
}

// The memory budget (mlpd/budget.h): past it, one problem and the end of decoding.
bool DecodeDriver::over_budget_slow(uint64_t offset) {
  if (!opt_.budget->exceeded()) return false;
  report({offset, static_cast<int64_t>(info_.index), opt_.budget->message()});
  return true;
}

void DecodeDriver::budget_problem(uint64_t offset, uint64_t index, const std::string& cut) {
  if (opt_.budget) (void)opt_.budget->exceeded();  // the figure the message gives
  report_cut({offset, static_cast<int64_t>(index), opt_.budget ? opt_.budget->message() : "memory budget exceeded"},
             cut);
}

void DecodeDriver::buffer_problem(uint64_t offset, uint64_t index, const std::string& message, const std::string& cut) {
  report_cut({offset, static_cast<int64_t>(index), message}, cut);
}

void DecodeDriver::buffer_problem(uint64_t offset, uint64_t index, const std::string& message) {
  report({offset, static_cast<int64_t>(index), message});
}

bool DecodeDriver::next_buffer_into(std::unique_ptr<uint8_t[]>& data, size_t& capacity, bool borrow, bool lend) {
  const uint64_t index = ++info_.index;
  uint8_t raw[kBufferHeaderSize];
  info_.offset = in_.offset();
  const size_t got = in_.read(raw, sizeof raw);
  if (got == 0) {
    if (!in_.error().empty()) {
      report({in_.offset(), static_cast<int64_t>(index), "read error: " + in_.error()});
    }
    return false;  // clean end of file
  }
  if (got < sizeof raw) {
    std::string msg = "truncated buffer header: needs 48 bytes, " + std::to_string(got) + " present";
    if (!in_.error().empty()) msg += " (" + in_.error() + ")";
    report({in_.offset(), static_cast<int64_t>(index), msg});
    return false;
  }
  BufferHeader read_header;
  const uint32_t id = decode_buffer_header(raw, read_header);
  if (id != kBufferId) {
    report({info_.offset, static_cast<int64_t>(index), "bad buffer id " + hex(id) + ", expected " + hex(kBufferId)});
    return false;  // no way to find the next buffer
  }
  BufferHeader& h = info_.header;
  h = read_header;
  if (h.length > opt_.max_buffer_length) {
    report({info_.offset + 4, static_cast<int64_t>(index),
            "buffer length " + std::to_string(h.length) + " exceeds the limit of " +
                std::to_string(opt_.max_buffer_length) + " bytes"});
    return false;
  }
  data_ptr_ = borrow ? in_.borrow(h.length) : lend ? in_.lend(h.length) : nullptr;
  if (!data_ptr_) {
    if (h.length > capacity) {
      capacity = std::max<size_t>(h.length, 2 * capacity);
      data.reset(new uint8_t[capacity]);
    }
    Problem problem;
    if (!read_exact(in_, data.get(), h.length, "buffer data", static_cast<int64_t>(index), problem)) {
      report(problem);
      return false;
    }
    data_ptr_ = data.get();
  }
  ++s_.buffers;
  return !over_budget(info_.offset);
}

}  // namespace detail

DecodeSummary decode(Input& in, Visitor& v, const DecodeOptions& opt) { return decode_as<Visitor>(in, v, opt); }

namespace {

// The sequential decode_counting(): counts the events, forwards the rest.
class CountingVisitor final : public Visitor {
 public:
  CountingVisitor(Visitor& v, EventCounts& counts) : v_(v), counts_(counts) {}
  void on_header(const FileHeader& h) override { v_.on_header(h); }
  void on_buffer(const BufferInfo& b) override { v_.on_buffer(b); }
  void on_event(const Event& e, const EventInfo&) override { ++counts_[static_cast<size_t>(e.kind)]; }
  void on_buffer_end(const BufferInfo& b) override { v_.on_buffer_end(b); }
  void on_problem(const Problem& p) override { v_.on_problem(p); }
  void on_warning(const Problem& p) override { v_.on_warning(p); }

 private:
  Visitor& v_;
  EventCounts& counts_;
};

// The parallel decode_counting(): a worker counts a buffer's events by kind, the calling thread adds
// them up in file order.
class CountingStage final : public PipelineStage {
 public:
  explicit CountingStage(size_t slots) : found_(slots) {}
  void work(PipelineSlot& s, unsigned) override {
    Found& f = found_[s.index];
    f.counts.fill(0);
    f.message.clear();
    BufferDecoder dec(s.info.header, s.bytes, s.info.offset + kBufferHeaderSize);
    Event event;
    uint64_t offset = 0;
    uint64_t n = 0;
    while (dec.next(event, f.message, offset)) {
      ++f.counts[static_cast<size_t>(event.kind)];
      ++n;
    }
    f.events = n;
    f.problem_offset = dec.problem_offset();
  }
  void use(PipelineSlot& s, PipelineResult& r) override {
    Found& f = found_[s.index];
    for (size_t k = 0; k < total.size(); ++k) total[k] += f.counts[k];
    r.events = f.events;
    r.message.swap(f.message);
    r.problem_offset = f.problem_offset;
  }
  EventCounts total{};

 private:
  struct Found {
    EventCounts counts{};
    uint64_t events = 0;
    std::string message;
    uint64_t problem_offset = 0;
  };
  std::vector<Found> found_;
};

}  // namespace

DecodeSummary decode_counting(Input& in, Visitor& v, const DecodeOptions& opt, EventCounts& counts,
                              unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (threads < 2 || in.compressed()) {
    CountingVisitor cv(v, counts);
    return decode_as(in, cv, opt);
  }
  CountingStage stage(parallel_slots(threads));
  BufferPipeline p(in, v, opt);
  if (!p.start()) return p.finish();
  if (p.run(stage, threads, parallel_slots(threads)) == BufferPipeline::Run::kNoWorkers) {
    CountingVisitor cv(v, counts);
    return decode_rest(p, cv, opt);
  }
  for (size_t k = 0; k < counts.size(); ++k) counts[k] += stage.total[k];
  return p.finish();
}

}  // namespace mlpd
