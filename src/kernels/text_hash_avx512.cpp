// The word hash (internal/hash.h) of 8 ASCII words at a time with AVX-512: the same function as
// the scalar loop, bit for bit. Each 64x64-bit product is put together from four 32x32-bit ones
// (vpmuludq). The words' 16 bytes are loaded one by one and inserted: gathers were slower
// (BENCHMARKS.md). Words over 16 bytes, rare, are hashed by the scalar code afterwards. A file
// of its own: text_avx512.cpp is built with VBMI2, which this kernel must not need.
#include <immintrin.h>

#include "internal/hash.h"
#include "kernels/text_kernels.h"

namespace neardup::internal {
namespace {

// mum (internal/hash.h) lane by lane: the 128-bit product of x and y, low half XOR high half.
inline __m512i mum8(__m512i x, __m512i y) noexcept {
  const __m512i xh = _mm512_srli_epi64(x, 32), yh = _mm512_srli_epi64(y, 32);
  const __m512i ll = _mm512_mul_epu32(x, y), lh = _mm512_mul_epu32(x, yh);
  const __m512i hl = _mm512_mul_epu32(xh, y), hh = _mm512_mul_epu32(xh, yh);
  const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFF);
  // The middle 32-bit column with its carry: below 3 * 2^32.
  const __m512i mid = _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, low32)),
                                       _mm512_and_si512(hl, low32));
  const __m512i hi = _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32)),
                                      _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(mid, 32)));
  const __m512i lo = _mm512_mask_blend_epi32(0xAAAA, ll, _mm512_slli_epi64(mid, 32));
  return _mm512_xor_si512(lo, hi);
}

inline __m128i load16(const uint8_t* p) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

}  // namespace

void hash_ascii_words_avx512(const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count,
                             uint64_t seed, uint64_t* out) noexcept {
  const __m512i k0 = _mm512_set1_epi64(static_cast<long long>(kWordK0 ^ seed));
  const __m512i k1 = _mm512_set1_epi64(static_cast<long long>(kWordK1));
  const __m512i k2 = _mm512_set1_epi64(static_cast<long long>(kWordK2));
  const __m512i k3 = _mm512_set1_epi64(static_cast<long long>(kWordK3));
  const __m512i ones = _mm512_set1_epi64(-1), c64 = _mm512_set1_epi64(64), c16 = _mm512_set1_epi64(16);
  // Words 0-3 are in one register as (a, b) pairs, words 4-7 in another: the a and b halves.
  const __m512i take_a = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), take_b = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i s32 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(starts + i));
    const __m512i len =
        _mm512_cvtepu32_epi64(_mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ends + i)), s32));
    alignas(32) uint32_t s[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(s), s32);
    __m512i w0 = _mm512_castsi128_si512(load16(lower + s[0]));
    w0 = _mm512_inserti32x4(w0, load16(lower + s[1]), 1);
    w0 = _mm512_inserti32x4(w0, load16(lower + s[2]), 2);
    w0 = _mm512_inserti32x4(w0, load16(lower + s[3]), 3);
    __m512i w1 = _mm512_castsi128_si512(load16(lower + s[4]));
    w1 = _mm512_inserti32x4(w1, load16(lower + s[5]), 1);
    w1 = _mm512_inserti32x4(w1, load16(lower + s[6]), 2);
    w1 = _mm512_inserti32x4(w1, load16(lower + s[7]), 3);
    // The bytes past the word are cleared: shifts of 64 bits or more give 0 (all kept).
    const __m512i bits = _mm512_slli_epi64(len, 3);
    const __m512i a = _mm512_andnot_si512(_mm512_sllv_epi64(ones, bits), _mm512_permutex2var_epi64(w0, take_a, w1));
    const __m512i b = _mm512_andnot_si512(_mm512_sllv_epi64(ones, _mm512_max_epi64(_mm512_sub_epi64(bits, c64), _mm512_setzero_si512())),
                                          _mm512_permutex2var_epi64(w0, take_b, w1));
    const __m512i h = mum8(_mm512_xor_si512(mum8(_mm512_xor_si512(a, k0), _mm512_xor_si512(b, k1)), k2), _mm512_xor_si512(len, k3));
    _mm512_storeu_si512(out + i, h);
    const auto longer = static_cast<unsigned>(_mm512_cmpgt_epu64_mask(len, c16));
    if (longer != 0) [[unlikely]]
      hash_long_words(lower, s, ends + i, longer, seed, out + i);
  }
  hash_ascii_words_scalar(lower, starts + i, ends + i, count - i, seed, out + i);
}

}  // namespace neardup::internal
