// Test support: the process's standard error (fd 2) sent to a file of a temporary directory while this
// object lives; text() gives back what was written (fd 2 restored first). For code under test that
// writes its one-line messages straight to fd 2.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "mlpd_catch.h"
#include "temp_dir.h"

namespace mlpd::test {

class StderrCapture {
 public:
  StderrCapture() : dir_("stderr_capture"), path_(dir_.file("stderr")) {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    saved_ = ::dup(STDERR_FILENO);
    REQUIRE(saved_ >= 0);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~StderrCapture() { restore(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores fd 2 and returns what was written to it meanwhile.
  std::string text() {
    restore();
    std::ifstream in(path_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    saved_ = -1;
  }
  TempDir dir_;
  std::string path_;
  int saved_ = -1;
};

}  // namespace mlpd::test
