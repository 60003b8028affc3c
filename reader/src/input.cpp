#include "mlpd/input.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace mlpd {

namespace {

// Files and stdin go through zlib's gz* interface, which decompresses gzip (also several concatenated
// members) and passes any other bytes through unchanged.
class GzFileInput final : public Input {
 public:
  GzFileInput(gzFile f) : file_(f) {}
  ~GzFileInput() override { gzclose(file_); }

  size_t read(void* dst, size_t n) override {
    size_t done = 0;
    auto* out = static_cast<unsigned char*>(dst);
    while (done < n && !eof_) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      const int got = gzread(file_, out + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        error_ = msg ? msg : "read error";
        eof_ = true;
        break;
      }
      if (got == 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        if (code != Z_OK && msg && *msg) error_ = msg;
        eof_ = true;
        break;
      }
      done += static_cast<size_t>(got);
    }
    offset_ += done;
    return done;
  }
  std::string error() const override { return error_; }
  bool compressed() const override { return gzdirect(file_) == 0; }

 private:
  gzFile file_;
  bool eof_ = false;
  std::string error_;
};

class MemoryInput final : public Input {
 public:
  MemoryInput(const void* data, size_t size)
      : data_(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size) {
    gzip_ = size >= 2 && data_[0] == 0x1f && data_[1] == 0x8b;
    if (gzip_) {
      std::memset(&zs_, 0, sizeof zs_);
      inflateInit2(&zs_, 16 + MAX_WBITS);
      zs_.next_in = data_.data();
      zs_.avail_in = static_cast<uInt>(data_.size());
    }
  }
  ~MemoryInput() override {
    if (gzip_) inflateEnd(&zs_);
  }

  size_t read(void* dst, size_t n) override {
    size_t done = 0;
    if (!gzip_) {
      done = std::min(n, data_.size() - pos_);
      if (done) std::memcpy(dst, data_.data() + pos_, done);  // data() may be null when empty
      pos_ += done;
    } else {
      auto* out = static_cast<unsigned char*>(dst);
      while (done < n && !finished_) {
        zs_.next_out = out + done;
        zs_.avail_out = static_cast<uInt>(std::min<size_t>(n - done, 1u << 30));
        const uInt before = zs_.avail_out;
        const int rc = inflate(&zs_, Z_NO_FLUSH);
        done += before - zs_.avail_out;
        if (rc == Z_STREAM_END) {
          if (zs_.avail_in == 0) {
            finished_ = true;
          } else {
            inflateReset(&zs_);  // another gzip member follows
          }
        } else if (rc != Z_OK) {
          if (rc == Z_BUF_ERROR && zs_.avail_in == 0) {
            error_ = "unexpected end of compressed data";
          } else {
            error_ = zs_.msg ? zs_.msg : "invalid compressed data";
          }
          finished_ = true;
        }
      }
    }
    offset_ += done;
    return done;
  }
  std::string error() const override { return error_; }
  bool compressed() const override { return gzip_; }

 private:
  std::vector<uint8_t> data_;
  size_t pos_ = 0;
  bool gzip_ = false;
  bool finished_ = false;
  z_stream zs_{};
  std::string error_;
};

}  // namespace

std::unique_ptr<Input> Input::open(const std::string& path, std::string& error) {
  int fd = -1;
  if (path == "-") {
    fd = dup(STDIN_FILENO);
  } else {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    error = std::strerror(errno);
    return nullptr;
  }
  gzFile f = gzdopen(fd, "rb");
  if (!f) {
    close(fd);
    error = "cannot set up decompression";
    return nullptr;
  }
  gzbuffer(f, 1u << 18);
  return std::make_unique<GzFileInput>(f);
}

std::unique_ptr<Input> Input::from_memory(const void* data, size_t size) {
  return std::make_unique<MemoryInput>(data, size);
}

}  // namespace mlpd
