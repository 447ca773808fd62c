// Compiled with -mavx2 only; called only when the CPU has AVX2.
#include <immintrin.h>

#include "kernels/jaccard_block-inl.h"
#include "kernels/jaccard_kernels.h"
#include "kernels/join_loops-inl.h"
#include "kernels/set_merge-inl.h"

namespace neardup::internal {
namespace {

// 8 x 8 all-pairs equality: b is compared in its 4 in-lane rotations, and again with its two
// 128-bit halves swapped, which covers every pairing of the 8 values of a with the 8 of b.
struct Avx2Block {
  static constexpr size_t kWidth = 8;
  static bool any_equal(const uint32_t* a, const uint32_t* b) noexcept {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i vs = _mm256_permute2x128_si256(vb, vb, 0x01);
    __m256i m = _mm256_or_si256(_mm256_cmpeq_epi32(va, vb), _mm256_cmpeq_epi32(va, vs));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vb, 0x39)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vs, 0x39)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vb, 0x4E)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vs, 0x4E)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vb, 0x93)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vs, 0x93)));
    return !_mm256_testz_si256(m, m);
  }
};

// 4 x 4 of 64-bit values: b in its 4 rotations.
struct Avx2SetBlock {
  static constexpr size_t kWidth = 4;
  static long common(const uint64_t* a, const uint64_t* b) noexcept {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    __m256i m = _mm256_or_si256(_mm256_cmpeq_epi64(va, vb), _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x39)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x4E)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x93)));
    return __builtin_popcount(static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(m))));
  }
};

}  // namespace

// The scalar loop, where popcount is one instruction (this file is compiled with -mpopcnt).
long common_bits_popcnt(const uint32_t* index, const uint64_t* bits, size_t n, const uint64_t* map) noexcept {
  return common_bits_loop(index, bits, n, map);
}

size_t dense_walk_popcnt(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) noexcept {
  return dense_walk_by_words(bits, before, lo, hi, met, places);
}

long jaccard_block_avx2(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<Avx2Block>(a, la, b, lb, smax);
}

long set_common_at_least_avx2(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept {
  size_t i = 0, j = 0;
  long common = set_common_blocks<Avx2SetBlock>(a, la, b, lb, need, i, j);
  if (common < 0) return -1;
  common += count_common(a, la, b, lb, i, j);
  return common >= need ? common : -1;
}

}  // namespace neardup::internal
