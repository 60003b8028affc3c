// A main for the fuzz targets without libFuzzer: feeds every file named on the command line (a directory:
// every regular file in it, in name order) to LLVMFuzzerTestOneInput once. A target's checks abort on a
// violation, so a seed that crashes or breaks a promise ends the run with a signal (non-zero); a run that
// reads no seed at all exits 1 (a missing corpus must not pass). This is how the seed corpora run where
// libFuzzer does not: with gcc, and as arm64 binaries under qemu-user (ctest fuzz_seeds, fuzz_seeds.arm64).
//   decoder_seeds|profile_seeds PATH...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool read_whole(const std::filesystem::path& p, std::vector<uint8_t>& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SEED_FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> seeds;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(p, ec))
        if (e.is_regular_file(ec)) in_dir.push_back(e.path());
      if (ec) {
        std::fprintf(stderr, "%s: cannot list %s: %s\n", argv[0], argv[i], ec.message().c_str());
        return 1;
      }
      std::sort(in_dir.begin(), in_dir.end());
      seeds.insert(seeds.end(), in_dir.begin(), in_dir.end());
    } else {
      seeds.push_back(p);
    }
  }
  std::vector<uint8_t> bytes;
  size_t total = 0;
  for (const auto& s : seeds) {
    if (!read_whole(s, bytes)) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], s.c_str());
      return 1;
    }
    // Named before the run: if the target aborts, the last name printed is the seed that did it.
    std::fprintf(stderr, "%s: %s (%zu bytes)\n", argv[0], s.c_str(), bytes.size());
    std::fflush(stderr);
    // A copy of exactly the seed's size, as libFuzzer gives it (an overread past it is then visible).
    const std::vector<uint8_t> exact(bytes);
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
    total += bytes.size();
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "%s: no seed given\n", argv[0]);
    return 1;
  }
  std::printf("%s: %zu seeds, %zu bytes, no failure\n", argv[0], seeds.size(), total);
  return 0;
}
