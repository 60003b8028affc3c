#include "mlpd/agent/push_profile.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mlpd/buffer_decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"

namespace mlpd::agent {

namespace {

// Frames of a stack key: the address with its kind in the top bits (addresses are user-space: < 2^56).
constexpr uint64_t kManaged = uint64_t{1} << 62;  // a method
constexpr uint64_t kNative = uint64_t{2} << 62;   // an IP not in JIT'd code (named at encoding)
constexpr uint64_t kSpecial = uint64_t{3} << 62;  // [no frames], [more stacks than push keeps]
constexpr uint64_t kKindMask = uint64_t{3} << 62;
constexpr uint64_t kNoFrames = kSpecial | 1;
constexpr uint64_t kOverflow = kSpecial | 2;
constexpr uint64_t kNoBacktrace = kSpecial | 3;

// protobuf's wire format: what pprof's profile.proto needs (varints, length-delimited fields).
class Pb {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void tag(uint32_t field, uint32_t wire) { varint((uint64_t{field} << 3) | wire); }
  void uint(uint32_t field, uint64_t v) {
    if (v == 0) return;
    tag(field, 0);
    varint(v);
  }
  void bytes(uint32_t field, const std::string& b) {
    tag(field, 2);
    varint(b.size());
    out += b;
  }
  std::string out;
};

bool gzip(const std::string& in, std::string& out) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out.resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
}

}  // namespace

PushProfile::~PushProfile() {
  if (auto* z = static_cast<z_stream*>(inflate_)) {
    inflateEnd(z);
    delete z;
  }
}

void PushProfile::absorb_member(const uint8_t* data, size_t size) {
  auto* z = static_cast<z_stream*>(inflate_);
  if (!z) {
    z = new z_stream{};
    if (inflateInit2(z, 15 + 16) != Z_OK) {
      delete z;
      ++problems_;
      return;
    }
    inflate_ = z;
  }
  uint8_t out[16384];
  z->next_in = const_cast<Bytef*>(data);
  z->avail_in = static_cast<uInt>(size);
  while (z->avail_in) {
    z->next_out = out;
    z->avail_out = sizeof out;
    const int rc = inflate(z, Z_NO_FLUSH);
    absorb(out, sizeof out - z->avail_out);
    if (rc == Z_STREAM_END) {
      inflateReset(z);  // a member ends; the next piece may start another
    } else if (rc != Z_OK) {
      if (rc == Z_BUF_ERROR && z->avail_out != 0) break;  // needs the next piece
      ++problems_;
      inflateReset(z);
      partial_.clear();
      return;
    }
  }
  // Output still held by zlib (a full window): drain it.
  for (;;) {
    z->next_out = out;
    z->avail_out = sizeof out;
    const int rc = inflate(z, Z_NO_FLUSH);
    const size_t n = sizeof out - z->avail_out;
    if (n) absorb(out, n);
    if (rc == Z_STREAM_END) inflateReset(z);
    if (n == 0 || rc != Z_OK) break;
  }
}

void PushProfile::absorb(const uint8_t* data, size_t size) {
  // A buffer whose start came in an earlier piece: complete it first.
  while (size) {
    if (!partial_.empty() || size < format::kBufferHeaderSize) {
      if (partial_.size() < format::kBufferHeaderSize) {
        const size_t n = std::min(size, format::kBufferHeaderSize - partial_.size());
        partial_.insert(partial_.end(), data, data + n);
        data += n;
        size -= n;
        if (partial_.size() < format::kBufferHeaderSize) return;
      }
      if (buffer_header_id(partial_.data()) != format::kBufferId) {
        ++problems_;
        partial_.clear();
        return;  // not in step with the stream: the rest of this piece cannot be trusted
      }
      const size_t whole = format::kBufferHeaderSize + buffer_header_length(partial_.data());
      const size_t n = std::min(size, whole - partial_.size());
      partial_.insert(partial_.end(), data, data + n);
      data += n;
      size -= n;
      if (partial_.size() < whole) return;
      buffer(partial_.data(), partial_.size());
      partial_.clear();
      continue;
    }
    if (buffer_header_id(data) != format::kBufferId) {
      ++problems_;
      return;
    }
    const size_t whole = format::kBufferHeaderSize + buffer_header_length(data);
    if (whole > size) {
      partial_.assign(data, data + size);
      return;
    }
    buffer(data, whole);
    data += whole;
    size -= whole;
  }
}

void PushProfile::buffer(const uint8_t* whole, size_t size) {
  BufferHeader h;
  decode_buffer_header(whole, h);
  BufferDecoder dec(h, whole + format::kBufferHeaderSize, 0);
  dec.keep_heap_refs(false);
  std::string problem;
  uint64_t offset = 0;
  (void)size;
  while (dec.next(e_, problem, offset)) event(e_);
  if (!problem.empty()) ++problems_;
}

void PushProfile::event(const Event& e) {
  switch (e.kind) {
    case EventKind::method_jit:
      if (e.ptr && e.size) code_[e.ptr] = {e.ptr + e.size, e.method};
      methods_[e.method] = e.name;
      return;
    case EventKind::sample_usym:
      if (e.ptr) symbols_[e.ptr] = {e.ptr + std::max<uint64_t>(e.size, 1), e.name};
      return;
    case EventKind::sample_hit: break;
    case EventKind::alloc: alloc(e); return;
    default: return;
  }
  ++samples_total_;
  ++interval_samples_;
  scratch_.clear();  // leaf first, as the reader builds it
  for (const uint64_t ip : e.ips) {
    uint64_t m = 0;
    if (auto it = code_.upper_bound(ip); it != code_.begin()) {
      --it;
      if (ip < it->second.first) m = it->second.second;
    }
    if (m) {
      if (!e.frames.empty() && e.frames[0] == m) continue;  // the innermost managed frame itself
      scratch_.push_back(kManaged | m);
    } else {
      scratch_.push_back(kNative | (ip & ~kKindMask));
    }
  }
  for (const uint64_t m : e.frames) scratch_.push_back(kManaged | (m & ~kKindMask));
  if (scratch_.empty()) scratch_.push_back(kNoFrames);
  if (scratch_.size() > kMaxDepth) scratch_.resize(kMaxDepth);
  std::string key(reinterpret_cast<const char*>(scratch_.data()), scratch_.size() * sizeof(uint64_t));
  if (auto it = stacks_.find(key); it != stacks_.end()) {
    ++it->second.v[0];
  } else if (stacks_.size() < kMaxStacks) {
    stacks_.emplace(std::move(key), Values{{1, 0}});
  } else {
    ++overflow_;
  }
}

// An allocation: its backtrace (outermost first in the file), as the reader weighs it: with
// alloc-sample=BYTES a sample of SIZE bytes stands for 1/p objects and SIZE/p bytes, p = 1 -
// exp(-SIZE/BYTES), rounded per sample (reader/profile/builder.h, alloc_sample_weight).
void PushProfile::alloc(const Event& e) {
  uint64_t count = 1, bytes = e.size;
  if (alloc_interval_) {
    const double prob = -std::expm1(-static_cast<double>(e.size) / static_cast<double>(alloc_interval_));
    const double w = prob > 1e-12 ? 1.0 / prob : 1e12;
    count = static_cast<uint64_t>(std::llround(w));
    bytes = static_cast<uint64_t>(std::llround(w * static_cast<double>(e.size)));
  }
  ++interval_allocs_;
  interval_alloc_objects_ += count;
  scratch_.clear();
  if (e.has_backtrace && !e.backtrace.empty()) {
    const size_t n = std::min(e.backtrace.size(), kMaxDepth);
    for (size_t i = 0; i < n; ++i) scratch_.push_back(kManaged | (e.backtrace[e.backtrace.size() - 1 - i] & ~kKindMask));
  } else {
    scratch_.push_back(kNoBacktrace);
  }
  std::string key(reinterpret_cast<const char*>(scratch_.data()), scratch_.size() * sizeof(uint64_t));
  if (auto it = alloc_stacks_.find(key); it != alloc_stacks_.end()) {
    it->second.v[0] += count;
    it->second.v[1] += bytes;
  } else if (alloc_stacks_.size() < kMaxStacks) {
    alloc_stacks_.emplace(std::move(key), Values{{count, bytes}});
  } else {
    alloc_overflow_[0] += count;
    alloc_overflow_[1] += bytes;
  }
}

std::string PushProfile::take_pprof(int64_t start_unix_ns, int64_t duration_ns, uint64_t& samples) {
  samples = interval_samples_;
  std::string gz;
  if (interval_samples_ != 0) {
    const Column cols[] = {{"samples", "count"}};
    gz = encode(stacks_, 1, overflow_, overflow_ ? &overflow_ : nullptr, cols, 1, start_unix_ns, duration_ns);
  }
  stacks_.clear();
  overflow_ = 0;
  interval_samples_ = 0;
  return gz;
}

std::string PushProfile::take_alloc_pprof(int64_t start_unix_ns, int64_t duration_ns, uint64_t& objects) {
  objects = interval_alloc_objects_;
  std::string gz;
  if (interval_allocs_ != 0) {
    const Column cols[] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}};
    gz = encode(alloc_stacks_, 2, alloc_overflow_[0] || alloc_overflow_[1], alloc_overflow_, cols, 2, start_unix_ns,
                duration_ns);
  }
  alloc_stacks_.clear();
  alloc_overflow_[0] = alloc_overflow_[1] = 0;
  interval_allocs_ = interval_alloc_objects_ = 0;
  return gz;
}

std::string PushProfile::encode(const std::unordered_map<std::string, Values>& stacks, size_t n_values, bool overflow,
                                const uint64_t* overflow_values, const Column* cols, size_t n_cols,
                                int64_t start_unix_ns, int64_t duration_ns) {
  (void)n_cols;
  // Strings: 0 is "".
  std::vector<std::string> strings{""};
  std::unordered_map<std::string, uint64_t> string_ids;
  auto str = [&](const std::string& s) -> uint64_t {
    auto [it, inserted] = string_ids.try_emplace(s, strings.size());
    if (inserted) strings.push_back(s);
    return it->second;
  };
  // One function and one location per frame name (id = index + 1).
  std::unordered_map<std::string, uint64_t> function_ids;
  std::vector<uint64_t> function_names;
  auto function = [&](const std::string& name) {
    auto [it, inserted] = function_ids.try_emplace(name, function_names.size() + 1);
    if (inserted) function_names.push_back(str(name));
    return it->second;
  };
  std::unordered_map<uint64_t, uint64_t> frame_ids;  // tagged frame -> function id
  char hex[64];
  auto frame = [&](uint64_t f) -> uint64_t {
    if (auto it = frame_ids.find(f); it != frame_ids.end()) return it->second;
    std::string name;
    const uint64_t a = f & ~kKindMask;
    switch (f & kKindMask) {
      case kManaged: {
        auto it = methods_.find(a);
        if (it != methods_.end() && !it->second.empty()) {
          name = it->second;
        } else {
          std::snprintf(hex, sizeof hex, "[unknown method 0x%llx]", static_cast<unsigned long long>(a));
          name = hex;
        }
        break;
      }
      case kNative: {
        // JIT'd code described after the sample, else the native symbol around the IP.
        if (auto it = code_.upper_bound(a); it != code_.begin() && a < std::prev(it)->second.first) {
          auto m = methods_.find(std::prev(it)->second.second);
          if (m != methods_.end()) name = m->second;
        }
        if (name.empty()) {
          if (auto it = symbols_.upper_bound(a); it != symbols_.begin() && a < std::prev(it)->second.first)
            name = std::prev(it)->second.second;
        }
        if (name.empty()) name = "[native code, unnamed]";
        break;
      }
      default:
        name = f == kOverflow ? "[more stacks than push keeps]" : f == kNoBacktrace ? "[no backtrace]" : "[no frames]";
    }
    const uint64_t id = function(name);
    frame_ids.emplace(f, id);
    return id;
  };
  Pb pb;
  for (size_t c = 0; c < n_values; ++c) {
    Pb vt;
    vt.uint(1, str(cols[c].type));
    vt.uint(2, str(cols[c].unit));
    pb.bytes(1, vt.out);  // sample_type
  }
  std::vector<uint64_t> ids;
  auto sample = [&](const uint64_t* frames, size_t n, const uint64_t* values) {
    ids.clear();
    for (size_t i = 0; i < n; ++i) ids.push_back(frame(frames[i]));
    Pb s, loc, val;
    for (const uint64_t id : ids) loc.varint(id);
    s.bytes(1, loc.out);  // location_id, packed, leaf first
    for (size_t c = 0; c < n_values; ++c) val.varint(values[c]);
    s.bytes(2, val.out);  // value, packed
    pb.bytes(2, s.out);
  };
  for (const auto& [key, values] : stacks)
    sample(reinterpret_cast<const uint64_t*>(key.data()), key.size() / sizeof(uint64_t), values.v);
  if (overflow) {
    const uint64_t f = kOverflow;
    sample(&f, 1, overflow_values);
  }
  // Locations (field 4) and functions (field 5): one each per function, same id.
  for (size_t i = 0; i < function_names.size(); ++i) {
    Pb l, line;
    l.uint(1, i + 1);
    line.uint(1, i + 1);
    l.bytes(4, line.out);
    pb.bytes(4, l.out);
  }
  for (size_t i = 0; i < function_names.size(); ++i) {
    Pb f;
    f.uint(1, i + 1);
    f.uint(2, function_names[i]);
    pb.bytes(5, f.out);
  }
  pb.uint(9, static_cast<uint64_t>(start_unix_ns));
  pb.uint(10, static_cast<uint64_t>(duration_ns));
  {
    // period samples/count, 1: as `mlpd export` (no cpu/nanoseconds: how often the sampler really
    // fired is not known; docs/reports.md, "pprof").
    Pb vt;
    vt.uint(1, str(cols[n_values - 1].type));
    vt.uint(2, str(cols[n_values - 1].unit));
    pb.bytes(11, vt.out);
    pb.uint(12, 1);
  }
  for (const std::string& s : strings) pb.bytes(6, s);  // last: every string is known now
  std::string gz;
  if (!gzip(pb.out, gz)) {
    ++problems_;
    return {};
  }
  return gz;
}

}  // namespace mlpd::agent
