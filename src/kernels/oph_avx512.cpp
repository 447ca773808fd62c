// Compiled with -mavx512f/bw/vbmi only; called only when the CPU has them (oph.cpp).
#include <immintrin.h>

#include <cstring>

#include "kernels/oph_kernels.h"

namespace neardup::internal {

void oph_pull_vbmi(const uint8_t* pre, size_t rounds, const uint8_t* native, const uint32_t* empty, uint32_t count,
                   uint32_t* from) noexcept {
  // Bytes 0..63 and 64..127 of the native flags: vpermi2b picks by bits 0-5 of an index, and by
  // bit 6 from which of the two.
  const __m512i lo = _mm512_loadu_si512(native), hi = _mm512_loadu_si512(native + 64);
  for (uint32_t x = 0; x < count; ++x) {
    const uint8_t* row = pre + size_t{empty[x]} * rounds;
    uint32_t f = 0xFFFFFFFFu;
    for (size_t t = 0; t < rounds; t += 64) {
      const __m512i idx = _mm512_loadu_si512(row + t);
      const __mmask64 hit = _mm512_movepi8_mask(_mm512_permutex2var_epi8(lo, idx, hi));
      if (hit) {
        f = row[t + static_cast<size_t>(__builtin_ctzll(hit))];
        break;
      }
    }
    from[x] = f;
  }
}

bool oph_densify_vbmi(uint32_t* o, uint32_t k, const uint8_t* cols, size_t rounds) noexcept {
  // Per half of the bins (0-63, 64-127): which are empty, which exist.
  uint64_t empty[2] = {0, 0}, valid[2] = {0, 0};
  const __m512i none = _mm512_set1_epi32(-1);
  for (uint32_t j = 0; j < k; j += 16) {
    const __mmask16 lanes = k - j >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (k - j)) - 1);
    const __mmask16 e = _mm512_mask_cmpeq_epi32_mask(lanes, _mm512_maskz_loadu_epi32(lanes, o + j), none);
    empty[j >> 6] |= uint64_t{e} << (j & 63);
    valid[j >> 6] |= uint64_t{lanes} << (j & 63);
  }
  const int count = __builtin_popcountll(empty[0]) + __builtin_popcountll(empty[1]);
  if (count == 0 || count == static_cast<int>(k)) return true;
  const __m512i lo = _mm512_movm_epi8(valid[0] & ~empty[0]), hi = _mm512_movm_epi8(valid[1] & ~empty[1]);
  // Round by round, the bins not yet decided take their pre-image of the round where it is a
  // native bin: the first such round of each, as the pull of one bin at a time.
  __m512i src0 = _mm512_setzero_si512(), src1 = _mm512_setzero_si512();
  uint64_t todo0 = empty[0], todo1 = empty[1];
  for (size_t t = 0; (todo0 | todo1) != 0; ++t) {
    if (t == rounds) return false;  // rare: a bin without a native pre-image in these rounds
    const __m512i idx0 = _mm512_loadu_si512(cols + t * 128), idx1 = _mm512_loadu_si512(cols + t * 128 + 64);
    const __mmask64 hit0 = _mm512_movepi8_mask(_mm512_permutex2var_epi8(lo, idx0, hi)) & todo0;
    const __mmask64 hit1 = _mm512_movepi8_mask(_mm512_permutex2var_epi8(lo, idx1, hi)) & todo1;
    src0 = _mm512_mask_mov_epi8(src0, hit0, idx0);
    src1 = _mm512_mask_mov_epi8(src1, hit1, idx1);
    todo0 &= ~hit0;
    todo1 &= ~hit1;
  }
  alignas(64) uint8_t src[128];
  _mm512_store_si512(src, src0);
  _mm512_store_si512(src + 64, src1);
  // Each empty bin takes its source's value: the 128 values in eight registers, looked up 16
  // bins at a time by the source's bits 0-4 (a two-register permutation per 32 values), then
  // bits 5 and 6. Every value is read before any is written.
  __m512i v[8];
  for (uint32_t c = 0; c < 8; ++c) {
    const uint32_t j = 16 * c;
    const __mmask16 lanes = j >= k ? __mmask16{0} : k - j >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (k - j)) - 1);
    v[c] = _mm512_maskz_loadu_epi32(lanes, o + j);
  }
  for (uint32_t j = 0; j < k; j += 16) {
    const auto e = static_cast<__mmask16>(empty[j >> 6] >> (j & 63));
    if (e == 0) continue;
    const __m512i idx = _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_load_si128(reinterpret_cast<const __m128i*>(src + j)));
    const __m512i low = _mm512_mask_blend_epi32(_mm512_test_epi32_mask(idx, _mm512_set1_epi32(32)),
                                                _mm512_permutex2var_epi32(v[0], idx, v[1]), _mm512_permutex2var_epi32(v[2], idx, v[3]));
    const __m512i high = _mm512_mask_blend_epi32(_mm512_test_epi32_mask(idx, _mm512_set1_epi32(32)),
                                                 _mm512_permutex2var_epi32(v[4], idx, v[5]), _mm512_permutex2var_epi32(v[6], idx, v[7]));
    const __m512i value = _mm512_mask_blend_epi32(_mm512_test_epi32_mask(idx, _mm512_set1_epi32(64)), low, high);
    _mm512_mask_storeu_epi32(o + j, e, value);
  }
  return true;
}

}  // namespace neardup::internal
