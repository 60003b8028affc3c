// Test support: a decoder Visitor that records every call it gets as a line of text, so that two
// decodes (decode() and a parallel driver, or two drivers) can be compared call for call, and a
// DecodeSummary as one line.
//
//   RecordingVisitor a, b;
//   const DecodeSummary s1 = decode(*in1, a);
//   const DecodeSummary s2 = decode_counting(*in2, b, {}, counts, 2);
//   CHECK(summary_text(s1) == summary_text(s2));
//   CHECK(a.calls == b.calls);
//
// Lines: "header <pid>", "buffer <index> at <offset> len <length>", "end <index>",
// "problem <offset> <buffer> <message>", "warning <offset> <buffer> <message>". Events are counted
// (in total and per kind), not recorded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/decode_loop.h"
#include "mlpd/decoder.h"

namespace mlpd::test {

struct RecordingVisitor final : Visitor {
  std::vector<std::string> calls;
  uint64_t events = 0;    // on_event calls
  EventCounts counts{};   // on_event calls per kind

  void on_header(const FileHeader& h) override { calls.push_back("header " + std::to_string(h.pid)); }
  void on_buffer(const BufferInfo& b) override {
    calls.push_back("buffer " + std::to_string(b.index) + " at " + std::to_string(b.offset) + " len " +
                    std::to_string(b.header.length));
  }
  void on_event(const Event& e, const EventInfo&) override {
    ++events;
    ++counts[static_cast<size_t>(e.kind)];
  }
  void on_buffer_end(const BufferInfo& b) override { calls.push_back("end " + std::to_string(b.index)); }
  void on_problem(const Problem& p) override {
    calls.push_back("problem " + std::to_string(p.offset) + " " + std::to_string(p.buffer) + " " + p.message);
  }
  void on_warning(const Problem& p) override {
    calls.push_back("warning " + std::to_string(p.offset) + " " + std::to_string(p.buffer) + " " + p.message);
  }
};

// Every field of a DecodeSummary, in declaration order, as one line.
inline std::string summary_text(const DecodeSummary& s) {
  return std::to_string(s.header_ok) + " " + std::to_string(s.buffers) + " " + std::to_string(s.events) + " " +
         std::to_string(s.bytes) + " " + std::to_string(s.problems) + " " + std::to_string(s.truncated);
}

}  // namespace mlpd::test
