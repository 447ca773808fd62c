// Compiled with -mavx512f/dq/bw/vl only; called only when the CPU has them.
#include <immintrin.h>

#include "kernels/minhash_kernels.h"

namespace neardup::internal {
namespace {

inline __m512i hash8(__m512i a, __m512i a_hi, __m512i b, __m512i x) {
  const __m512i lo = _mm512_mul_epu32(a, x);
  const __m512i hi = _mm512_slli_epi64(_mm512_mul_epu32(a_hi, x), 32);
  return _mm512_srli_epi64(_mm512_add_epi64(_mm512_add_epi64(lo, hi), b), 32);
}

inline void store8(__m512i m, uint32_t* out) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi64_epi32(m));
}

}  // namespace

void minhash_avx512(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b, size_t num_perm,
                    const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  const __m512i init = _mm512_set1_epi64(0xFFFFFFFFLL);
  size_t p = 0;
  constexpr size_t kBlock = 64;  // 8 accumulators of 8 permutations
  for (; p + kBlock <= num_perm; p += kBlock) {
    __m512i m[8];
    for (int g = 0; g < 8; ++g) m[g] = init;
    for (size_t j = 0; j < n; ++j) {
      const __m512i x = _mm512_set1_epi64(keys[j]);
      for (int g = 0; g < 8; ++g) {
        const size_t q = p + 8 * g;
        m[g] = _mm512_min_epu64(m[g], hash8(_mm512_loadu_si512(a + q), _mm512_loadu_si512(a_hi + q),
                                            _mm512_loadu_si512(b + q), x));
      }
    }
    for (int g = 0; g < 8; ++g) store8(m[g], out + p + 8 * g);
  }
  for (; p + 8 <= num_perm; p += 8) {
    __m512i m = init;
    const __m512i va = _mm512_loadu_si512(a + p), vh = _mm512_loadu_si512(a_hi + p),
                  vb = _mm512_loadu_si512(b + p);
    for (size_t j = 0; j < n; ++j) m = _mm512_min_epu64(m, hash8(va, vh, vb, _mm512_set1_epi64(keys[j])));
    store8(m, out + p);
  }
  if (p < num_perm) minhash_scalar(a + p, a_hi + p, b + p, num_perm - p, keys, n, out + p);
}

}  // namespace neardup::internal
