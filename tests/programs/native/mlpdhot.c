/* A native library for the sampling tests (tests/integration/agent/test_sampling.py): the C#
 * programs call it through P/Invoke. mlpd_hot_spin is where the time goes; its neighbours are cold,
 * so a sampler that blames the nearest symbol instead of the containing one is caught. */
#include <stdint.h>

__attribute__((noinline)) uint64_t mlpd_cold_before(uint64_t x) { return x * 3 + 1; }

__attribute__((noinline)) uint64_t mlpd_hot_spin(uint64_t x, int32_t iters) {
  for (int32_t i = 0; i < iters; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

__attribute__((noinline)) uint64_t mlpd_cold_after(uint64_t x) { return x * 5 + 3; }
