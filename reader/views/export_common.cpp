#include "export_common.h"
#include "mlpd/views.h"

#include "mlpd/json.h"

#include <cerrno>
#include <charconv>
#include <cmath>

namespace mlpd::views {

uint64_t estimate_names(const profile::Profile& p) {
  uint64_t n = 0;
  for (const profile::Frame& f : p.frames()) n += f.name.size() + f.module.size() + 16;
  return n;
}

uint64_t estimate_stacks(const profile::Profile& p, profile::What what, bool with_names, uint64_t per_frame,
                         uint64_t per_stack) {
  const auto& nodes = p.nodes();
  const auto& frames = p.frames();
  uint64_t total = 0;
  for (profile::NodeId n = 1; n < nodes.size(); ++n) {
    if (p.weight(what, n) == 0) continue;
    total += per_stack;
    if (!with_names) {
      total += static_cast<uint64_t>(nodes[n].depth) * per_frame;
      continue;
    }
    for (profile::NodeId k = n; k != 0 && nodes[k].frame != profile::kNoFrame; k = nodes[k].parent)
      total += (nodes[k].frame < frames.size() ? frames[nodes[k].frame].name.size() : 8) + per_frame;
  }
  return total;
}

uint64_t Exporter::estimate(const profile::Profile& p) {
  return estimate_names(p) + estimate_stacks(p, profile::What::cpu, false, 8, 24);
}

}  // namespace mlpd::views

namespace mlpd::views::detail {

// One JSON escaper and one UTF-8 check for the reader (cli/json.cpp, part of mlpd_views).
void json_escape(std::string& out, std::string_view s) { json_escape_body(out, s); }

std::string utf8_clean(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

void append_u64(std::string& out, uint64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, r.ptr);
}

void append_us(std::string& out, uint64_t ns) {
  append_u64(out, ns / 1000);
  const auto frac = static_cast<unsigned>(ns % 1000);
  if (frac == 0) return;
  char tmp[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                 static_cast<char>('0' + frac % 10)};
  out.append(tmp, 4);
}

void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out.push_back('0');
    return;
  }
  char tmp[40];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, r.ptr);
}

bool OutText::flush() {
  if (ok_ && !buf_.empty()) {
    if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) ok_ = false;
  }
  buf_.clear();
  return ok_;
}

RecordSpill::RecordSpill(size_t record_size, size_t records_per_chunk)
    : record_size_(record_size), chunk_bytes_(record_size * records_per_chunk) {}

RecordSpill::~RecordSpill() {
  if (file_) std::fclose(file_);
}

void RecordSpill::fail(const char* what) {
  if (!ok_) return;
  ok_ = false;
  error_ = std::string(what) + ": " + std::strerror(errno);
}

void RecordSpill::add(uint32_t key, const void* record) {
  if (key >= keys_.size()) keys_.resize(size_t(key) + 1);
  Key& k = keys_[key];
  const auto* p = static_cast<const uint8_t*>(record);
  k.pending.insert(k.pending.end(), p, p + record_size_);
  ++k.total;
  if (k.pending.size() < chunk_bytes_ || !ok_) return;
  if (!file_) {
    file_ = std::tmpfile();
    if (!file_) {
      fail("cannot create a temporary file");
      return;
    }
  }
  if (std::fseek(file_, 0, SEEK_END) != 0 ||
      std::fwrite(k.pending.data(), 1, k.pending.size(), file_) != k.pending.size()) {
    fail("cannot write the temporary file");
    return;
  }
  k.chunks.push_back({file_size_, static_cast<uint32_t>(k.pending.size() / record_size_)});
  file_size_ += k.pending.size();
  k.pending.clear();
}

uint64_t RecordSpill::count(uint32_t key) const { return key < keys_.size() ? keys_[key].total : 0; }

bool RecordSpill::read_chunk(const Chunk& c, std::vector<uint8_t>& into) {
  if (!ok_) return false;
  into.resize(size_t(c.count) * record_size_);
  if (std::fflush(file_) != 0 || std::fseek(file_, static_cast<long>(c.offset), SEEK_SET) != 0 ||
      std::fread(into.data(), 1, into.size(), file_) != into.size()) {
    fail("cannot read the temporary file");
    return false;
  }
  return true;
}

bool OpenFrames::open(profile::ThreadIndex t, profile::FrameId f, uint64_t time) {
  if (t >= stacks_.size()) stacks_.resize(size_t(t) + 1);
  Stack& s = stacks_[t];
  if (s.frames.size() >= kMaxDepth) {
    ++s.too_deep;
    return false;
  }
  s.frames.push_back({f, time});
  return true;
}

void OpenFrames::close(profile::ThreadIndex t, profile::FrameId f, std::vector<Closed>& closed) {
  if (t >= stacks_.size()) return;
  Stack& s = stacks_[t];
  if (s.too_deep > 0) {
    --s.too_deep;
    return;
  }
  auto& v = s.frames;
  size_t i = v.size();
  const size_t stop = v.size() > kMaxSearch ? v.size() - kMaxSearch : 0;
  while (i > stop && v[i - 1].frame != f) --i;
  if (i == stop && (i == 0 || v[i - 1].frame != f)) return;  // not open near the top: ignored
  for (size_t k = v.size(); k >= i; --k) closed.push_back(v[k - 1]);
  v.resize(i - 1);
}

void OpenFrames::close_all(profile::ThreadIndex t, std::vector<Closed>& closed) {
  if (t >= stacks_.size()) return;
  auto& v = stacks_[t].frames;
  for (size_t k = v.size(); k > 0; --k) closed.push_back(v[k - 1]);
  v.clear();
  stacks_[t].too_deep = 0;
}

}  // namespace mlpd::views::detail
