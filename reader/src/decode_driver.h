// DecodeDriver: what every reader of a file's buffers has in common (the file header, the buffer
// headers and data, problems and warnings with their byte offsets, deferred when found reading ahead,
// the memory budget). Private to reader/src: the rest of the reader goes through BufferPipeline
// (mlpd/buffer_pipeline.h), whose one-thread calls and reading ahead are made of it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/format.h"

namespace mlpd {

namespace detail {

class DecodeDriver {
 public:
  DecodeDriver(Input& in, Visitor& v, const DecodeOptions& opt) : in_(in), v_(v), opt_(opt) {}
  // Reads the file header and calls on_header; false (the problem reported) when there is none.
  bool start();
  // Reads the next buffer's header and data: true with info() and data() set, false at the end of the
  // input, on a problem that ends decoding (reported), or when the memory budget is exceeded.
  // The data is where the input can lend it without a copy (Input::borrow), else in a buffer of the driver.
  bool next_buffer() { return next_buffer_into(data_, data_capacity_, true); }
  // The same into a buffer of the caller's (grown as needed): BufferPipeline::run reads ahead. With
  // `lend`, data() is where a mapped input lends the bytes (Input::lend: valid while it lives) if it can.
  bool next_buffer_into(std::unique_ptr<uint8_t[]>& data, size_t& capacity, bool borrow = false, bool lend = false);
  const BufferInfo& info() const { return info_; }
  const uint8_t* data() const { return data_ptr_; }
  // True (and one problem reported) when the memory budget is exceeded.
  bool over_budget(uint64_t offset) {
    return opt_.budget && over_budget_slow(offset);
  }
  // For a caller that reads ahead (the parallel profile build): a problem of buffer `index` reported
  // as it would have been right after that buffer was read, when the input's truncation_warning()
  // was `cut` (a gzip input cut by a killed writer makes it a warning) -- the memory budget exceeded
  // at `offset` (seen by a worker; the problem names the limit, as over_budget() reports it), or the
  // problem that ended the buffer's events.
  void budget_problem(uint64_t offset, uint64_t index, const std::string& cut);
  void buffer_problem(uint64_t offset, uint64_t index, const std::string& message, const std::string& cut);
  // The problem that ended the current buffer's events.
  void buffer_problem(uint64_t offset, const std::string& message) { buffer_problem(offset, info_.index, message); }
  void buffer_problem(uint64_t offset, uint64_t index, const std::string& message);
  // While deferring, problems and warnings are kept instead of reported (decode_counting() reports
  // them after the buffers read before them); report_deferred() reports them in order.
  void set_deferring(bool on) { deferring_ = on; }
  bool has_deferred() const { return !deferred_.empty(); }
  void report_deferred();
  void add_events(uint64_t n) { s_.events += n; }
  // decode_counting() stopped delivering at a problem (stop_at_first_problem): the buffers read ahead
  // count as never read, and reading ended at `end`.
  void unread_buffers(uint64_t n, uint64_t end) {
    s_.buffers -= n;
    end_ = end;
  }
  DecodeSummary finish() {
    s_.bytes = end_ != UINT64_MAX ? end_ : in_.offset();
    return s_;
  }

 private:
  bool over_budget_slow(uint64_t offset);
  void report(const Problem& p);
  void report_cut(const Problem& p, std::string cut);
  void deliver(bool warning, const Problem& p);

  Input& in_;
  Visitor& v_;
  const DecodeOptions& opt_;
  DecodeSummary s_;
  BufferInfo info_;
  // Grown, never shrunk, never zero-filled: every byte is overwritten by the read before use.
  std::unique_ptr<uint8_t[]> data_;
  size_t data_capacity_ = 0;
  const uint8_t* data_ptr_ = nullptr;  // the current buffer's data (borrowed or data_)
  bool deferring_ = false;
  uint64_t end_ = UINT64_MAX;
  std::vector<std::pair<bool, Problem>> deferred_;  // (is a warning, what)
};

}  // namespace detail

}  // namespace mlpd
