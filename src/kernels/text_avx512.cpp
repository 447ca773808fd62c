#include <immintrin.h>

#include "kernels/text_scan-inl.h"

namespace neardup::internal {
namespace {

// Positions of set bits by compression (AVX512-VBMI2): the byte indices 0..63 under the mask,
// packed, widened to 32 bits 16 at a time.
struct CompressFlatten {
  __m512i iota = _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42,
                                 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20,
                                 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  size_t operator()(uint64_t bits, size_t b, uint32_t* out) const noexcept {
    const __m512i packed = _mm512_maskz_compress_epi8(bits, iota);
    const __m512i base = _mm512_set1_epi32(static_cast<int>(b * 64));
    const auto cnt = static_cast<size_t>(__builtin_popcountll(bits));
    _mm512_storeu_si512(out, _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(packed)), base));
    if (cnt > 16) [[unlikely]] {
      _mm512_storeu_si512(out + 16, _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(packed, 1)), base));
      _mm512_storeu_si512(out + 32, _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(packed, 2)), base));
      _mm512_storeu_si512(out + 48, _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(packed, 3)), base));
    }
    return cnt;
  }
};

}  // namespace

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
  }, CompressFlatten{});
}

}  // namespace neardup::internal
