#include "alloc_sampler.h"

#include <pthread.h>

#include <cmath>

#include "mlpd/rt/clock.h"

namespace mlpd::hooks {

namespace alloc_sampler {

uint64_t g_mean = 0;
thread_local constinit int64_t tls_left = 0;

namespace {

thread_local bool tls_started = false;
thread_local uint64_t tls_rng = 0;

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// An exponential interval of mean g_mean, at least 1 byte.
int64_t draw() {
  const double u = static_cast<double>(splitmix64(tls_rng) >> 11) * 0x1.0p-53;  // [0, 1)
  const double bytes = -std::log1p(-u) * static_cast<double>(g_mean);
  if (!(bytes >= 1.0)) return 1;
  if (bytes > 9.0e18) return INT64_MAX / 2;
  return static_cast<int64_t>(bytes);
}

}  // namespace

bool reached(uint64_t size) {
  if (!tls_started) {
    // The thread's first allocation: its process starts at this allocation's first byte.
    tls_started = true;
    tls_rng = static_cast<uint64_t>(pthread_self()) ^ rt::now_ns() ^ 0x5bd1e995u;
    tls_left = draw() - static_cast<int64_t>(size);
    if (tls_left > 0) return false;
  }
  // A sampling point falls inside this allocation: record it once, whatever the number of points
  // in it (the reader's weight accounts for that); the next interval starts at its end (the
  // exponential is memoryless).
  tls_left = draw();
  return true;
}

}  // namespace alloc_sampler

uint64_t alloc_sample_bytes() { return alloc_sampler::g_mean; }

}  // namespace mlpd::hooks
