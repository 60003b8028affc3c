// A scratch directory for a test, removed (with its contents) when the object goes away.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mlpd::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "mlpd_test") {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           (prefix + "_" + std::to_string(getpid()) + "_" + std::to_string(++n));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Writes `bytes` to a file of the directory; returns its path.
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    const std::string p = file(name);
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
};

}  // namespace mlpd::test
