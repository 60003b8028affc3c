// alloc-sample's per-thread sampler (runtime-hooks/src/capture/alloc_sampler.h): off means every allocation;
// on, the number of samples over many bytes is about bytes / interval (a Poisson process), objects much
// larger than the interval are (nearly) always taken, and each sample's weight 1/p(size) makes the
// estimated bytes match the bytes allocated.
#include "mlpd_catch.h"

#include <cmath>
#include <cstdint>
#include <thread>

#include "capture/alloc_sampler.h"

using namespace mlpd::hooks;

namespace {

struct Result {
  uint64_t samples = 0;
  double estimated_bytes = 0;
};

// On a fresh thread (the sampler's state is per thread): `count` allocations of `size` bytes.
Result run(uint64_t mean, uint64_t size, uint64_t count) {
  Result r;
  std::thread th([&] {
    alloc_sampler::g_mean = mean;
    for (uint64_t i = 0; i < count; ++i) {
      if (alloc_sampler::take(size)) {
        ++r.samples;
        r.estimated_bytes += mean ? static_cast<double>(size) / -std::expm1(-static_cast<double>(size) / mean) : size;
      }
    }
  });
  th.join();
  alloc_sampler::g_mean = 0;
  return r;
}

}  // namespace

TEST_CASE("alloc sampler: off records every allocation", "[alloc_sample]") {
  const Result r = run(0, 24, 1000);
  CHECK(r.samples == 1000);
}

TEST_CASE("alloc sampler: about one sample per interval, unbiased estimates", "[alloc_sample]") {
  // 100 MB of 32-byte objects at 64 KiB: ~1600 samples (Poisson: sd 40; 6 sd allowed).
  const uint64_t size = 32, count = 100u << 20 >> 5, mean = 64 * 1024;
  const Result r = run(mean, size, count);
  const double expect = static_cast<double>(size * count) / mean;
  CHECK(std::fabs(static_cast<double>(r.samples) - expect) < 6 * std::sqrt(expect));
  CHECK(std::fabs(r.estimated_bytes - static_cast<double>(size * count)) < 0.15 * static_cast<double>(size * count));
  // Objects 16x the interval: taken with probability 1 - e^-16.
  const Result big = run(1024, 16 * 1024, 1000);
  CHECK(big.samples >= 999);
  // Objects as large as the interval: p = 1 - 1/e = 0.632.
  const Result eq = run(4096, 4096, 10000);
  CHECK(std::fabs(static_cast<double>(eq.samples) / 10000 - (1 - std::exp(-1.0))) < 0.03);
}
