// gzip output (sink.h's make_gzip_sink): complete members compressed with libdeflate.
#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "mlpd/sink.h"
#include "sink_io.h"

namespace mlpd {
namespace {
using namespace sink_detail;

// gzip as a sequence of complete members (RFC 1952 allows any number in a row; gzip -d, zlib's gzread and
// so Mono's mprof-report, and our reader read them as one stream). Bytes are staged in a fixed buffer; a
// member is compressed (libdeflate, whole-buffer, several times faster than zlib at the same ratio) and
// written when the stage is full and on every flush(). So whatever has been flushed is a complete gzip
// file: a process killed at any moment leaves a file that reads up to its last flush round, plus at most
// one member cut short, which readers report as truncation. Memory: the stage and its compressed bound
// (about 2 MiB) and at most kMaxHeldBytes of members held for the round, whatever the output rate.
// Speed: level 1 by default (~330 MB/s of event data on this machine); while the writer is behind
// (set_hurry: a round found more than a few MiB of buffers waiting, e.g. a helper starved of CPU by the
// host's threads) members are stored, not compressed (GB/s): the file grows, the buffer pool does not.
class GzipSink final : public OutputSink {
 public:
  static constexpr size_t kStageSize = 1024 * 1024;
  static constexpr int kDefaultLevel = 1;  // see SinkOptions::gzip_level
  static constexpr size_t kMaxHeldBytes = 4 * 1024 * 1024;  // members held until the round's flush, at most

  explicit GzipSink(std::unique_ptr<OutputSink> inner) : inner_(std::move(inner)) {}
  ~GzipSink() override {
    close();
    if (compressor_) libdeflate_free_compressor(compressor_);
    if (store_) libdeflate_free_compressor(store_);
  }

  // Returns false (and sets `error`) if the compressor cannot be set up.
  bool init(int level, std::string& error) {
    // zlib's levels (0..9) map to libdeflate's 0..12 one to one below 10; -1 is our default (sink.h).
    if (level < -1 || level > 9) {
      error = "mlpd: cannot compress output to '" + one_line(inner_->describe()) + "': bad compression level " +
              std::to_string(level);
      return false;
    }
    compressor_ = libdeflate_alloc_compressor(level < 0 ? kDefaultLevel : level);
    store_ = libdeflate_alloc_compressor(0);  // "no compression": stored blocks
    stage_.reset(new (std::nothrow) uint8_t[kStageSize]);
    if (compressor_ && store_) {
      out_size_ = std::max(libdeflate_gzip_compress_bound(compressor_, kStageSize),
                           libdeflate_gzip_compress_bound(store_, kStageSize));
      out_.reset(new (std::nothrow) uint8_t[out_size_]);
    }
    if (!compressor_ || !store_ || !stage_ || !out_) {
      error = "mlpd: cannot compress output to '" + one_line(inner_->describe()) + "': out of memory";
      return false;
    }
    return true;
  }

  bool write(const void* data, size_t size) override {
    if (failed_ || closed_) return false;
    const auto* p = static_cast<const uint8_t*>(data);
    while (size > 0) {
      const size_t k = std::min(size, kStageSize - staged_);
      std::memcpy(stage_.get() + staged_, p, k);
      staged_ += k;
      p += k;
      size -= k;
      if (staged_ == kStageSize && !emit_member()) return false;
    }
    return true;
  }

  // A member made elsewhere: it follows the bytes staged so far, which end their member first. Held
  // like the sink's own, so a round stays a sequence of complete members written at its flush.
  bool write_member(const void* data, size_t size) override {
    if (failed_ || closed_) return false;
    if (!emit_member()) return false;
    ++members_;
    return hold(static_cast<const uint8_t*>(data), size);
  }

  // Ends the current member and writes the members held since the last flush: everything written so
  // far is a complete gzip stream in the target, ending where a flush round ended.
  bool flush() override {
    if (failed_ || closed_) return false;
    if (!emit_member() || !write_held()) return false;
    if (!inner_->flush()) return fail_from_inner();
    return true;
  }

  bool close() override {
    if (closed_) return !failed_;
    closed_ = true;
    // A stream with no byte at all still gets one (empty) member: an empty file is not valid gzip.
    if (!failed_ && (staged_ > 0 || members_ == 0) && emit_member(true)) write_held();
    // Always release the target (descriptor, command), even after a failure.
    if (!inner_->close() && !failed_) fail_from_inner();
    return !failed_;
  }

  // Nothing is freed: the allocator may have been held by another thread at fork.
  void abandon() override {
    if (closed_) return;
    closed_ = failed_ = true;
    compressor_ = store_ = nullptr;
    (void)stage_.release();
    (void)out_.release();
    inner_->abandon();
  }

  std::string error() const override { return error_; }
  std::string describe() const override { return inner_->describe(); }
  uint64_t written() const override { return inner_->written(); }
  void set_hurry(bool hurry) override { hurry_ = hurry; }
  // Whole only right after a flush: then the target ends with complete members.
  void mark_whole() override {
    if (!failed_ && !closed_ && staged_ == 0 && held_.empty()) inner_->mark_whole();
  }

 private:
  bool emit_member(bool even_empty = false) {
    if (staged_ == 0 && !even_empty) return true;
    const size_t n =
        libdeflate_gzip_compress(hurry_ ? store_ : compressor_, stage_.get(), staged_, out_.get(), out_size_);
    staged_ = 0;
    if (n == 0) {  // cannot happen with the bound's room; treat as a failure, never as success
      failed_ = true;
      error_ = "mlpd: cannot compress output to '" + one_line(inner_->describe()) + "'; profiling stopped";
      return false;
    }
    ++members_;
    return hold(out_.get(), n);
  }

  // Held until the round's flush: a member that filled the stage ends in the middle of an mlpd
  // buffer, and a file whose last complete member ended there would not read to its last round
  // after a kill. What is held is compressed (a round's worth, a tenth of its size or less; stored
  // while hurrying). A round whose members exceed kMaxHeldBytes is written through as it goes
  // (memory stays bounded; a kill inside such a round leaves its last buffer cut, which the reader
  // reports).
  bool hold(const uint8_t* member, size_t n) {
    // Room for the bound at once and kept: growing by doubling and shrinking back every round made
    // fresh pages to fault in each time (several ms a round in this VM, with the helper behind).
    if (held_.capacity() < held_.size() + n) held_.reserve(std::max(held_.size() + n, kMaxHeldBytes + out_size_));
    held_.insert(held_.end(), member, member + n);
    if (held_.size() >= kMaxHeldBytes) return write_held();
    return true;
  }

  bool write_held() {
    if (held_.empty()) return true;
    const bool ok = inner_->write(held_.data(), held_.size());
    held_.clear();
    return ok || fail_from_inner();
  }

  bool fail_from_inner() {
    if (!failed_) {
      failed_ = true;
      error_ = inner_->error();
      if (error_.empty()) error_ = "mlpd: cannot write to '" + one_line(inner_->describe()) + "'; profiling stopped";
    }
    return false;
  }

  std::unique_ptr<OutputSink> inner_;
  libdeflate_compressor* compressor_ = nullptr;
  libdeflate_compressor* store_ = nullptr;  // level 0, while hurrying
  std::unique_ptr<uint8_t[]> stage_;
  std::unique_ptr<uint8_t[]> out_;
  size_t out_size_ = 0;
  size_t staged_ = 0;
  std::vector<uint8_t> held_;  // complete members not yet written (written at flush and close)
  bool hurry_ = false;
  uint64_t members_ = 0;
  std::string error_;
  bool failed_ = false;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<OutputSink> make_gzip_sink(std::unique_ptr<OutputSink> inner, int level, std::string& error) {
  if (!inner) {
    error = "mlpd: no output to compress";
    return nullptr;
  }
  auto sink = std::make_unique<GzipSink>(std::move(inner));
  if (!sink->init(level, error)) return nullptr;
  return sink;
}

}  // namespace mlpd
