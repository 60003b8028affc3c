// Output sinks: where the agent's helper thread writes the finished file bytes (FORMAT-NOTES 1.4 `output=`,
// `zip`). A sink is used from ONE thread only (the helper), never from the hot path; it may block and may
// allocate. Every failure is final: the sink enters a failed state, each later call returns false at once,
// and error() gives one line naming the target and the cause, ready to print ("mlpd: cannot write to
// 'out.mlpd': No space left on device; profiling stopped"). The agent then stops profiling; the host goes on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlpd {

class OutputSink {
 public:
  virtual ~OutputSink() = default;
  OutputSink() = default;
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  // Writes all `size` bytes (retrying partial writes and EINTR) or fails. False once failed or closed.
  virtual bool write(const void* data, size_t size) = 0;
  // Makes everything written so far readable by whoever reads the target: plain file/pipe/fd writes are
  // already in the kernel, so nothing more happens; gzip ends the current gzip member, so that the target
  // is a complete gzip stream up to here (Mono never flushes its gzip stream, so its .gz is unreadable
  // until shutdown, and a killed run's is unreadable for good).
  virtual bool flush() = 0;
  // Finishes the stream (gzip trailer), releases the target (closes our fd, waits for a pipe's command
  // within a time bound; an inherited #FD is never closed) and reports whether everything went well.
  // Idempotent; the destructor closes an open sink.
  virtual bool close() = 0;
  // In a fork child: lets go of this process's copy of the target without finishing anything -- our
  // descriptor is closed (an inherited #FD is left alone), nothing is written or flushed, a pipe's command
  // is neither waited for nor signalled (it belongs to the parent, whose end stays open), no memory is
  // freed (another thread may have held the allocator at fork). Without it the child would keep the write
  // end of `|CMD` open, so the command would see end of input only when the child exits, and the parent's
  // close() would wait for it. Afterwards the sink is closed: every call returns false, close() included.
  virtual void abandon() = 0;
  // One line describing the first failure, empty while there was none.
  virtual std::string error() const = 0;
  // How the target is named in messages: the path, `|CMD` or `#FD`.
  virtual std::string describe() const = 0;
  // Bytes handed to the target so far (after compression): what `rotate-size=` compares.
  virtual uint64_t written() const = 0;
  // Writes `data`, gzip members made elsewhere (zip: by the program's threads, buffer_packer.h), as
  // the next piece of the gzip stream, after the bytes written so far (gzip ends its current member
  // first). A member may come in several calls in a row, with no write() between: the bytes are
  // written as they are, so together they must be complete members. Only gzip sinks take members;
  // the others fail.
  virtual bool write_member(const void* /*data*/, size_t /*size*/) { return false; }
  // The writer is behind (buffers are waiting for it): until told otherwise, favour speed over size.
  // gzip then writes stored (uncompressed) deflate blocks, still valid gzip members; others ignore it.
  virtual void set_hurry(bool /*hurry*/) {}
  // Everything written so far ends a whole round (complete buffers; gzip: complete members, so only
  // right after a flush): a kill cuts the file back to here (SinkOptions::cut_on_kill). Others ignore it.
  virtual void mark_whole() {}
};

enum class OutputKind {
  File,  // target is a path: created or truncated, mode 0644 (less the umask), O_CLOEXEC
  Pipe,  // target is a command for `/bin/sh -c`; its stdin reads what we write (`output=|CMD`)
  Fd,    // target is a decimal descriptor number the embedder gave us (`output=#FD`); never closed by us
};

struct SinkOptions {
  // Compression level for `zip`, 0..9 as zlib's; -1 is the default, 1: libdeflate's fastest level, which
  // keeps up with several threads' `calls` events on one helper (level 6, what Mono's gzdopen(..., "wb")
  // uses, compresses ~5x slower for files ~1.5x smaller; the buffers waiting meanwhile grew the pool).
  int gzip_level = -1;
  // How long close() waits for a pipe's command to exit after our end is closed. A command that never
  // exits (or whose stdin another fork of the host still holds) is then left running and reported.
  std::chrono::milliseconds child_exit_timeout{5000};
  // Environment of the pipe's command (NULL-terminated); nullptr = the process's `environ`.
  char* const* child_env = nullptr;
  // Files: a regular file is locked (flock, exclusive) before it is truncated, so that one process
  // writes one file. When another process holds the lock, open_sink fails, leaves the file untouched
  // and sets *file_taken (if given) to true.
  bool* file_taken = nullptr;
  // Files: the process's own output (not a dump): registered with output_cut.h, so that a kill by
  // TERM, INT or HUP cuts it back to its last mark_whole(). One such sink at a time.
  bool cut_on_kill = false;
};

// Opens an output. On failure returns nullptr and sets `error` to one line naming the target and cause.
// With `zip`, the bytes are gzip-compressed in user space and written through the same path, so gzip
// works for files, pipes and descriptors alike.
std::unique_ptr<OutputSink> open_sink(OutputKind kind, const std::string& target, bool zip, std::string& error,
                                      const SinkOptions& options = {});

// Wraps `inner` in gzip compression: a sequence of complete gzip members, one ended by every flush() and
// one per MiB of input (sink.cpp). nullptr and `error` set if the compressor cannot be set up (out of
// memory, bad level).
std::unique_ptr<OutputSink> make_gzip_sink(std::unique_ptr<OutputSink> inner, int level, std::string& error);

// Collects the bytes in memory: for tests, including the agent's own (it can be told to fail like a full
// disk after a number of bytes).
class MemorySink final : public OutputSink {
 public:
  explicit MemorySink(std::string name = "memory") : name_(std::move(name)) {}
  ~MemorySink() override = default;

  bool write(const void* data, size_t size) override;
  bool flush() override;
  bool close() override;
  void abandon() override { closed_ = abandoned_ = true; }
  std::string error() const override { return error_; }
  std::string describe() const override { return name_; }
  uint64_t written() const override { return data_.size(); }

  // After `bytes` more bytes have been accepted, the next write fails with errno `err` (e.g. ENOSPC); the
  // bytes that still fit are stored, as a short write would have done.
  void fail_after(size_t bytes, int err);

  const std::vector<uint8_t>& data() const { return data_; }
  size_t flush_count() const { return flushes_; }
  bool closed() const { return closed_; }
  bool abandoned() const { return abandoned_; }

 private:
  std::string name_;
  std::vector<uint8_t> data_;
  std::string error_;
  size_t flushes_ = 0;
  size_t fail_limit_ = SIZE_MAX;
  int fail_errno_ = 0;
  bool closed_ = false;
  bool abandoned_ = false;
  bool failed_ = false;
};

}  // namespace mlpd
