// Compiled with -mavx2 only; called only when the CPU has AVX2.
#include <immintrin.h>

#include "kernels/jaccard_block-inl.h"
#include "kernels/jaccard_kernels.h"

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

}  // namespace

long jaccard_block_avx2(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<Avx2Block>(a, la, b, lb, smax);
}

}  // namespace neardup::internal
