#include <immintrin.h>

#include <bit>

#include "internal/hash.h"
#include "kernels/shingle_kernels.h"
#include "neardup/shingle.h"

namespace neardup::internal {
namespace {

// The low 64 bits of a 64 x 64-bit product, lane by lane: AVX2 multiplies only 32 x 32 -> 64, so
// a * b = lo(a) lo(b) + ((hi(a) lo(b) + lo(a) hi(b)) << 32) (mod 2^64).
inline __m256i mullo64(__m256i a, __m256i b) noexcept {
  const __m256i lo = _mm256_mul_epu32(a, b);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b), _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

}  // namespace

void combine_shingles_avx2(const uint64_t* t, size_t n, size_t k, uint64_t c, uint64_t* out) noexcept {
  // Four windows at a time, each computed directly (k loads, shifts and XORs) rather than rolled:
  // the scalar kernel's rolling XOR is a chain of dependent operations, these lanes are not, and
  // the emulated 64-bit multiply still leaves this about 1.7x the scalar kernel's speed at k = 5.
  if (k > 16) return combine_shingles_scalar(t, n, k, c, out);
  const size_t m = n - k + 1;  // windows
  __m256i left[16], right[16];
  for (size_t j = 0; j < k; ++j) {
    const long long s = static_cast<long long>((j * kShingleRotation) & 63);
    left[j] = _mm256_set1_epi64x(s);
    right[j] = _mm256_set1_epi64x(64 - s);  // a count of 64 shifts every bit out: rotl by 0 is v
  }
  const __m256i vc = _mm256_set1_epi64x(static_cast<long long>(c));
  const __m256i m1 = _mm256_set1_epi64x(static_cast<long long>(kFmixMul1));
  const __m256i m2 = _mm256_set1_epi64x(static_cast<long long>(kFmixMul2));
  size_t i = 0;
  // Lane l of the block at i reads t[i + l + j] for j < k: within t[0, n) while i + 4 <= m.
  for (; i + 4 <= m; i += 4) {
    __m256i y = vc;
    for (size_t j = 0; j < k; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + i + j));
      y = _mm256_xor_si256(y, _mm256_or_si256(_mm256_sllv_epi64(v, left[j]), _mm256_srlv_epi64(v, right[j])));
    }
    __m256i x = _mm256_xor_si256(y, _mm256_srli_epi64(y, 33));  // fmix64, lane by lane
    x = mullo64(x, m1);
    x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
    x = mullo64(x, m2);
    x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), x);
  }
  if (i < m) combine_shingles_scalar(t + i, n - i, k, c, out + i);  // the last 1-3 windows
}

}  // namespace neardup::internal
