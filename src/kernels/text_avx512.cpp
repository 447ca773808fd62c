#include <immintrin.h>

#include "kernels/text_scan-inl.h"

namespace neardup::internal {

void scan_text_avx512(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept {
  const __m512i kA = _mm512_set1_epi8('A'), ka = _mm512_set1_epi8('a'), k0 = _mm512_set1_epi8('0');
  const __m512i k26 = _mm512_set1_epi8(26), k10 = _mm512_set1_epi8(10), k20 = _mm512_set1_epi8(0x20);
  scan_blocks(in, first_block, nblocks, out, [&](const uint8_t* p, uint8_t* lower, uint64_t& word, uint64_t& high) {
    const __m512i x = _mm512_loadu_si512(p);
    const __mmask64 upper = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(x, kA), k26);
    const __m512i l = _mm512_mask_add_epi8(x, upper, x, k20);
    _mm512_storeu_si512(lower, l);
    const __mmask64 h = _mm512_movepi8_mask(x);
    const __mmask64 alnum =
        _mm512_cmplt_epu8_mask(_mm512_sub_epi8(l, ka), k26) | _mm512_cmplt_epu8_mask(_mm512_sub_epi8(x, k0), k10);
    word = alnum | h;
    high = h;
  });
}

}  // namespace neardup::internal
