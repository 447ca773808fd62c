// Compiled with -mavx512f/bw/vbmi only; called only when the CPU has them (oph.cpp).
#include <immintrin.h>

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

}  // namespace neardup::internal
