// Compiled with -mavx2 only; called only when the CPU has AVX2.
#include <immintrin.h>

#include "kernels/minhash_kernels.h"

namespace neardup::internal {
namespace {

// a*x mod 2^64 for 64-bit a and 32-bit x in each 64-bit lane: lo(a)*x + (hi(a)*x << 32).
inline __m256i hash4(__m256i a, __m256i a_hi, __m256i b, __m256i x) {
  const __m256i lo = _mm256_mul_epu32(a, x);
  const __m256i hi = _mm256_slli_epi64(_mm256_mul_epu32(a_hi, x), 32);
  return _mm256_srli_epi64(_mm256_add_epi64(_mm256_add_epi64(lo, hi), b), 32);
}

inline void store4(__m256i m, uint32_t* out) {
  alignas(32) uint64_t tmp[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), m);
  for (int l = 0; l < 4; ++l) out[l] = static_cast<uint32_t>(tmp[l]);
}

}  // namespace

void minhash_avx2(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b, size_t num_perm,
                  const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  // Values after the shift are below 2^32, so an unsigned 32-bit min on the lanes (whose high
  // halves are zero) is a 64-bit min.
  const __m256i init = _mm256_set1_epi64x(0xFFFFFFFFLL);
  size_t p = 0;
  constexpr size_t kBlock = 32;  // 8 accumulators of 4 permutations
  for (; p + kBlock <= num_perm; p += kBlock) {
    __m256i m[8];
    for (int g = 0; g < 8; ++g) m[g] = init;
    for (size_t j = 0; j < n; ++j) {
      const __m256i x = _mm256_set1_epi64x(keys[j]);
      for (int g = 0; g < 8; ++g) {
        const size_t q = p + 4 * g;
        const __m256i h = hash4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + q)),
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a_hi + q)),
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q)), x);
        m[g] = _mm256_min_epu32(m[g], h);
      }
    }
    for (int g = 0; g < 8; ++g) store4(m[g], out + p + 4 * g);
  }
  for (; p + 4 <= num_perm; p += 4) {
    __m256i m = init;
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + p));
    const __m256i vh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a_hi + p));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + p));
    for (size_t j = 0; j < n; ++j) m = _mm256_min_epu32(m, hash4(va, vh, vb, _mm256_set1_epi64x(keys[j])));
    store4(m, out + p);
  }
  if (p < num_perm) minhash_scalar(a + p, a_hi + p, b + p, num_perm - p, keys, n, out + p);
}

}  // namespace neardup::internal
