// Compiled with -mavx2 -mbmi only; called only when the CPU has them (dispatch.cpp).
#include <immintrin.h>

#include <cstring>

#include "kernels/oph_kernels.h"

namespace neardup::internal {
namespace {

// Whether each of 32 bytes, a bin number below 128, names a native bin: the bit of the bin in
// the 128-bit native set, looked up with two in-lane byte shuffles (the set's 16 bytes in both
// lanes, picked by the number's bits 3-6; the bit within that byte by its bits 0-2). 0xFF where
// it does.
inline __m256i native_of(__m256i bins, __m256i set, __m256i bit_of) noexcept {
  const __m256i byte = _mm256_shuffle_epi8(set, _mm256_and_si256(_mm256_srli_epi16(bins, 3), _mm256_set1_epi8(0x0F)));
  const __m256i bit = _mm256_shuffle_epi8(bit_of, bins);  // bins < 128: bit 7 clear, bits 0-3 pick
  return _mm256_cmpeq_epi8(_mm256_and_si256(byte, bit), bit);
}

}  // namespace

bool oph_densify_avx2(uint32_t* o, uint32_t k, const uint8_t* cols, size_t rounds) noexcept {
  // The empty bins, 32 to a word, and the native ones as a 128-bit set.
  uint32_t empty[4] = {0, 0, 0, 0};
  int count = 0;
  for (uint32_t j = 0; j < k; j += 8) {
    const uint32_t lanes = k - j >= 8 ? 0xFFu : (1u << (k - j)) - 1;
    __m256i v;
    if (lanes == 0xFFu) {
      v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + j));
    } else {
      alignas(32) uint32_t tail[8];
      std::memset(tail, 0, sizeof tail);
      std::memcpy(tail, o + j, (k - j) * sizeof(uint32_t));
      v = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
    }
    const uint32_t e = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_set1_epi32(-1))))) & lanes;
    empty[j >> 5] |= e << (j & 31);
    count += __builtin_popcount(e);
  }
  if (count == 0 || count == static_cast<int>(k)) return true;
  alignas(16) uint8_t native_set[16];  // bin j at bit j % 8 of byte j / 8 (little-endian words)
  for (uint32_t c = 0; c < 4; ++c) {
    const uint32_t first = 32 * c;
    const uint32_t valid = first >= k ? 0 : k - first >= 32 ? ~0u : (1u << (k - first)) - 1;
    const uint32_t native = valid & ~empty[c];
    std::memcpy(native_set + 4 * c, &native, sizeof native);
  }
  const __m256i set = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(native_set)));
  const __m256i bit_of = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128,  //
                                          1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  // Round by round, the bins not yet decided take their pre-image of the round where it is a
  // native bin: the first such round of each, as the pull of one bin at a time.
  __m256i src[4], todo[4];
  uint32_t left = 0;
  for (int c = 0; c < 4; ++c) {
    src[c] = _mm256_setzero_si256();
    // The empty bins of the quarter as bytes of 0xFF: the 32 mask bits spread one to a byte.
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(empty[c])),
                                               _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                                2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    todo[c] = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_of), bit_of);
    left |= empty[c];
  }
  // All four quarters every round, without a branch on which are done, and two rounds between
  // checks (a round after the last bin's does nothing): most documents need about 14 rounds,
  // through which nearly every quarter still has a bin left.
  const auto round = [&](size_t t) {
    for (int c = 0; c < 4; ++c) {
      const __m256i bins = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + t * 128 + 32 * c));
      const __m256i hit = _mm256_and_si256(native_of(bins, set, bit_of), todo[c]);
      src[c] = _mm256_blendv_epi8(src[c], bins, hit);
      todo[c] = _mm256_andnot_si256(hit, todo[c]);
    }
  };
  for (size_t t = 0; left != 0; t += 2) {
    if (t >= rounds) return false;  // rare: a bin without a native pre-image in these rounds
    round(t);
    if (t + 1 < rounds) round(t + 1);
    const __m256i any = _mm256_or_si256(_mm256_or_si256(todo[0], todo[1]), _mm256_or_si256(todo[2], todo[3]));
    left = !_mm256_testz_si256(any, any);
  }
  alignas(32) uint8_t from[128];
  for (int c = 0; c < 4; ++c) _mm256_store_si256(reinterpret_cast<__m256i*>(from + 32 * c), src[c]);
  // Each empty bin takes its source's value, eight bins to a gather (faster on Zen 3
  // than one at a time). The sources are native bins, which no write changes.
  for (uint32_t j = 0; j < k; j += 8) {
    const uint32_t e = empty[j >> 5] >> (j & 31) & 0xFFu;
    if (e == 0) continue;
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(from + j)));
    if (k - j >= 8) {
      const __m256i mask = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(e)), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
                                              _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128));
      const __m256i old = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + j));
      const __m256i value = _mm256_mask_i32gather_epi32(old, reinterpret_cast<const int*>(o), idx, mask, 4);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + j), value);
    } else {
      for (uint32_t b = e; b != 0; b &= b - 1) {
        const uint32_t x = static_cast<uint32_t>(__builtin_ctz(b));
        o[j + x] = o[from[j + x]];
      }
    }
  }
  return true;
}

}  // namespace neardup::internal
