// decode(): a whole file through an Input, header and buffer by buffer (see decoder.h); the events
// of each buffer are decoded by the codec's BufferDecoder.
#include "mlpd/decoder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "mlpd/budget.h"
#include "mlpd/format.h"

namespace mlpd {

using namespace format;

namespace {

uint64_t load_le(const uint8_t* p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

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
  const uint32_t id = static_cast<uint32_t>(load_le(fixed, 4));
  if (id != kFileId) {
    return bad(0, "not an mlpd file: header id " + hex(id) + ", expected " + hex(kFileId));
  }
  h.major = fixed[4];
  h.minor = fixed[5];
  h.data_version = fixed[6];
  h.ptr_size = fixed[7];
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
  h.startup_ms = load_le(fixed + 8, 8);
  h.startup_ns = load_le(fixed + 16, 8);
  h.timer_overhead = static_cast<int32_t>(load_le(fixed + 24, 4));
  h.flags = static_cast<int32_t>(load_le(fixed + 28, 4));
  h.pid = static_cast<int32_t>(load_le(fixed + 32, 4));
  h.port = static_cast<uint16_t>(load_le(fixed + 36, 2));
  if (h.flags != 0) return bad(28, "unsupported header flags " + hex(static_cast<uint32_t>(h.flags)));
  for (std::string* s : {&h.args, &h.arch, &h.os}) {
    const char* what = s == &h.args ? "header args" : s == &h.arch ? "header arch" : "header os";
    uint8_t len_bytes[4];
    const uint64_t at = in.offset();
    if (!read_exact(in, len_bytes, 4, what, -1, problem)) return false;
    const uint32_t len = static_cast<uint32_t>(load_le(len_bytes, 4));
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

DecodeSummary decode(Input& in, Visitor& v, const DecodeOptions& opt) {
  DecodeSummary s;
  Problem problem;
  FileHeader header;
  auto report = [&](const Problem& p) {
    // A gzip input cut inside its last member, or ending inside its last buffer (a writer killed
    // mid-round) ends the file where the cut is: a warning, not a problem; what came before has been
    // decoded.
    if (std::string cut = in.truncation_warning(); !cut.empty()) {
      s.truncated = true;
      v.on_warning({p.offset, p.buffer, std::move(cut)});
      return;
    }
    ++s.problems;
    v.on_problem(p);
  };
  if (!parse_file_header(in, header, problem)) {
    ++s.problems;  // no header, no file: an error even when the cut is a killed writer's
    v.on_problem(problem);
    s.bytes = in.offset();
    return s;
  }
  s.header_ok = true;
  v.on_header(header);

  // The memory budget (mlpd/budget.h): past it, one problem and the end of decoding.
  auto over_budget = [&](uint64_t offset, uint64_t index) {
    if (!opt.budget || !opt.budget->exceeded()) return false;
    report({offset, static_cast<int64_t>(index), opt.budget->message()});
    return true;
  };
  // Grown, never shrunk, never zero-filled: every byte is overwritten by the read before use.
  std::unique_ptr<uint8_t[]> data;
  size_t data_capacity = 0;
  Event event;
  std::string message;
  BufferInfo info;
  for (uint64_t index = 0;; ++index) {
    uint8_t raw[kBufferHeaderSize];
    info.index = index;
    info.offset = in.offset();
    const size_t got = in.read(raw, sizeof raw);
    if (got == 0) {
      if (!in.error().empty()) {
        report({in.offset(), static_cast<int64_t>(index), "read error: " + in.error()});
      }
      break;  // clean end of file
    }
    if (got < sizeof raw) {
      std::string msg = "truncated buffer header: needs 48 bytes, " + std::to_string(got) + " present";
      if (!in.error().empty()) msg += " (" + in.error() + ")";
      report({in.offset(), static_cast<int64_t>(index), msg});
      break;
    }
    const uint32_t id = static_cast<uint32_t>(load_le(raw, 4));
    if (id != kBufferId) {
      report({info.offset, static_cast<int64_t>(index),
              "bad buffer id " + hex(id) + ", expected " + hex(kBufferId)});
      break;  // no way to find the next buffer
    }
    BufferHeader& h = info.header;
    h.length = static_cast<uint32_t>(load_le(raw + 4, 4));
    h.time_base = load_le(raw + 8, 8);
    h.ptr_base = static_cast<int64_t>(load_le(raw + 16, 8));
    h.obj_base = static_cast<int64_t>(load_le(raw + 24, 8));
    h.thread_id = load_le(raw + 32, 8);
    h.method_base = static_cast<int64_t>(load_le(raw + 40, 8));
    if (h.length > opt.max_buffer_length) {
      report({info.offset + 4, static_cast<int64_t>(index),
              "buffer length " + std::to_string(h.length) + " exceeds the limit of " +
                  std::to_string(opt.max_buffer_length) + " bytes"});
      break;
    }
    if (h.length > data_capacity) {
      data_capacity = std::max<size_t>(h.length, 2 * data_capacity);
      data.reset(new uint8_t[data_capacity]);
    }
    if (!read_exact(in, data.get(), h.length, "buffer data", static_cast<int64_t>(index), problem)) {
      report(problem);
      break;
    }
    ++s.buffers;
    if (over_budget(info.offset, index)) break;
    v.on_buffer(info);
    const uint64_t data_offset = info.offset + kBufferHeaderSize;
    BufferDecoder dec(h, data.get(), data_offset);
    EventInfo ei;
    ei.buffer = &info;
    bool failed = false;
    bool stopped = false;
    while (dec.next(event, message, ei.offset)) {
      ++s.events;
      v.on_event(event, ei);
      if ((s.events & 4095) == 0 && over_budget(ei.offset, index)) {
        message.clear();
        stopped = true;
        break;
      }
    }
    if (stopped) {
      v.on_buffer_end(info);
      break;
    }
    if (!message.empty()) {
      failed = true;
      report({dec.problem_offset(), static_cast<int64_t>(index), message});
    }
    v.on_buffer_end(info);
    if (failed && opt.stop_at_first_problem) break;
  }
  s.bytes = in.offset();
  return s;
}

}  // namespace mlpd
