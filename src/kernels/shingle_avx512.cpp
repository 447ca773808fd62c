#include <immintrin.h>

#include "internal/hash.h"
#include "kernels/shingle_kernels.h"
#include "neardup/shingle.h"

namespace neardup::internal {

void combine_shingles_avx512(const uint64_t* t, size_t n, size_t k, uint64_t c, uint64_t* out) noexcept {
  if (k > 8) return combine_shingles_scalar(t, n, k, c, out);
  const size_t m = n - k + 1;  // windows
  __m512i rot[8];
  for (size_t j = 0; j < 8; ++j) rot[j] = _mm512_set1_epi64(static_cast<long long>((j * kShingleRotation) & 63));
  const __m512i vc = _mm512_set1_epi64(static_cast<long long>(c));
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(kFmixMul1));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(kFmixMul2));
  // Lane l of a block at i reads t[i + l + j] for j < k: within t[0, n) for every window l < m - i.
  const auto block = [&](size_t i, __mmask8 lanes) {
    __m512i y = _mm512_maskz_loadu_epi64(lanes, t + i);
    for (size_t j = 1; j < k; ++j) y = _mm512_xor_si512(y, _mm512_rolv_epi64(_mm512_maskz_loadu_epi64(lanes, t + i + j), rot[j]));
    __m512i x = _mm512_xor_si512(y, vc);  // fmix64, lane by lane
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
    x = _mm512_mullo_epi64(x, m1);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
    x = _mm512_mullo_epi64(x, m2);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
    _mm512_mask_storeu_epi64(out + i, lanes, x);
  };
  size_t i = 0;
  for (; i + 8 <= m; i += 8) block(i, 0xFF);
  if (i < m) block(i, static_cast<__mmask8>((1u << (m - i)) - 1));
}

}  // namespace neardup::internal
