// Running a CLI subcommand in-process (the mlpd executable's cmd_* functions, compiled into unit_tests)
// with its standard output and error captured: what the command printed and its exit status.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "emulated.h"

namespace mlpd::test {

struct CliRun {
  int rc = -1;
  std::string out, err;
};

namespace cli_run_detail {

// fd 1 or 2 sent to a fresh temporary file while the command runs.
class Capture {
 public:
  Capture(int fd, std::FILE* stream) : fd_(fd), stream_(stream) {
    std::fflush(stream_);
    file_ = std::tmpfile();
    saved_ = ::dup(fd_);
    if (file_ && saved_ >= 0) ::dup2(::fileno(file_), fd_);
  }
  std::string finish() {
    std::fflush(stream_);
    if (saved_ >= 0) {
      ::dup2(saved_, fd_);
      ::close(saved_);
      saved_ = -1;
    }
    std::string text;
    if (!file_) return text;
    std::rewind(file_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) text.append(buf, n);
    std::fclose(file_);
    file_ = nullptr;
    return text;
  }
  ~Capture() { finish(); }

 private:
  int fd_;
  std::FILE* stream_;
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

}  // namespace cli_run_detail

// cmd(argc, argv) with argv = {name, args...}.
template <class Cmd>
CliRun run_cli(Cmd cmd, const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), name);
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  CliRun r;
  cli_run_detail::Capture out(1, stdout), err(2, stderr);
  r.rc = cmd(static_cast<int>(args.size()), argv.data());
  r.out = out.finish();
  r.err = err.finish();
  return r;
}

// The lines of `text` (without their newlines).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(text.substr(start, nl - start));
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

}  // namespace mlpd::test
