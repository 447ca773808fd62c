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

bool oph_densify_vbmi(uint32_t* o, uint32_t k, const uint8_t* pre, size_t rounds) noexcept {
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
  // The bins are filled in a copy, so that a bin whose rows hold no native bin (then the caller
  // densifies the scalar way) leaves `o` as it was. Each empty bin's value is a native bin's,
  // which no write changes, so the bins are independent: the loop has no chain but the mask's.
  alignas(64) uint32_t filled[128];
  std::memcpy(filled, o, k * sizeof(uint32_t));
  for (int half = 0; half < 2; ++half)
    for (uint64_t m = empty[half]; m != 0; m &= m - 1) {
      const uint32_t j = static_cast<uint32_t>(half * 64 + __builtin_ctzll(m));
      const uint8_t* row = pre + size_t{j} * rounds;
      __mmask64 hit = _mm512_movepi8_mask(_mm512_permutex2var_epi8(lo, _mm512_loadu_si512(row), hi));
      size_t t = 0;
      while (hit == 0) {  // rare: none of the first 64 pre-images is a native bin
        if ((t += 64) >= rounds) return false;
        hit = _mm512_movepi8_mask(_mm512_permutex2var_epi8(lo, _mm512_loadu_si512(row + t), hi));
      }
      filled[j] = o[row[t + static_cast<size_t>(__builtin_ctzll(hit))]];
    }
  std::memcpy(o, filled, k * sizeof(uint32_t));
  return true;
}

}  // namespace neardup::internal
