#include "progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace mlpd::cli {

namespace {

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

Progress::Progress(const std::string& path) {
  on_ = isatty(STDERR_FILENO) == 1;
  if (!on_) return;
  struct stat st;
  if (path != "-" && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    // A gzip file's offsets are uncompressed bytes: no percentage then.
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      unsigned char magic[2] = {0, 0};
      const bool gz = std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
      std::fclose(f);
      if (!gz) size_ = static_cast<uint64_t>(st.st_size);
    }
  }
  start_ = last_ = now();
  // How long a read goes on before progress shows (tests set 0).
  if (const char* e = std::getenv("MLPD_PROGRESS_AFTER_MS")) after_ = std::atof(e) / 1000.0;
}

std::function<void(uint64_t, uint64_t)> Progress::callback() {
  if (!on_) return {};
  return [this](uint64_t bytes, uint64_t events) { update(bytes, events); };
}

void Progress::update(uint64_t bytes, uint64_t events) {
  const double t = now();
  if (t - start_ < after_ || (shown_ && t - last_ < 0.2)) return;
  last_ = t;
  shown_ = true;
  const double rate = static_cast<double>(events) / (t - start_);
  if (size_)
    std::fprintf(stderr, "\rreading: %.1f MiB (%.0f%%), %.2f M events/s   ", static_cast<double>(bytes) / 1048576.0,
                 100.0 * static_cast<double>(bytes) / static_cast<double>(size_), rate / 1e6);
  else
    std::fprintf(stderr, "\rreading: %.1f MiB, %.2f M events/s   ", static_cast<double>(bytes) / 1048576.0, rate / 1e6);
  std::fflush(stderr);
}

void Progress::done() {
  if (shown_) {
    std::fprintf(stderr, "\r%60s\r", "");
    std::fflush(stderr);
    shown_ = false;
  }
}

}  // namespace mlpd::cli
