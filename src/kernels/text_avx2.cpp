#include <immintrin.h>

#include "kernels/text_scan-inl.h"

namespace neardup::internal {
namespace {

// Signed compares stand in for unsigned range checks: x + (0x80 - lo) < -128 + width (signed)
// exactly when lo <= x < lo + width, for every byte x.
inline __m256i in_range(__m256i x, char lo, char width) {
  const __m256i shifted = _mm256_add_epi8(x, _mm256_set1_epi8(static_cast<char>(0x80 - lo)));
  return _mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(-128 + width)), shifted);
}

inline void half(const uint8_t* in, uint8_t* lower, uint32_t& word, uint32_t& high) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  const __m256i upper = in_range(x, 'A', 26);
  const __m256i l = _mm256_or_si256(x, _mm256_and_si256(upper, _mm256_set1_epi8(0x20)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lower), l);
  const __m256i alnum = _mm256_or_si256(in_range(l, 'a', 26), in_range(x, '0', 10));
  high = static_cast<uint32_t>(_mm256_movemask_epi8(x));
  word = static_cast<uint32_t>(_mm256_movemask_epi8(alnum)) | high;
}

}  // namespace

void scan_text_avx2(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept {
  scan_blocks(in, first_block, nblocks, out, [](const uint8_t* p, uint8_t* lower, uint64_t& word, uint64_t& high) {
    uint32_t w0, h0, w1, h1;
    half(p, lower, w0, h0);
    half(p + 32, lower + 32, w1, h1);
    word = w0 | (static_cast<uint64_t>(w1) << 32);
    high = h0 | (static_cast<uint64_t>(h1) << 32);
  });
}

}  // namespace neardup::internal
