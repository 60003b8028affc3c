#include "export_common.h"

#include <cerrno>
#include <charconv>
#include <cmath>

namespace mlpd::views::detail {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (0 if invalid).
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t min;
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) {
    n = 2;
    min = 0x80;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3;
    min = 0x800;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  uint32_t cp = b & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

void json_escape(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
      ++i;
      continue;
    }
    const size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
}

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
