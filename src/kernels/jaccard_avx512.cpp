// Compiled with AVX-512 F/BW/DQ/VL; called only when the CPU has them.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "kernels/jaccard_block-inl.h"
#include "kernels/jaccard_kernels.h"
#include "kernels/set_merge-inl.h"

namespace neardup::internal {
namespace {

// The OR of cmp(a, b rotated by r) over every rotation r in R...: each value of a against each
// value of b.
template <class Vec, class Cmp, class Rot, int... R>
auto any_rotation(Vec va, Vec vb, Cmp cmp, Rot rot, std::integer_sequence<int, R...>) noexcept {
  return (cmp(va, rot(vb, std::integral_constant<int, R>{})) | ...);
}

// 16 x 16 all-pairs equality of 32-bit values: a against the 16 rotations of b, one mask.
struct Avx512Block {
  static constexpr size_t kWidth = 16;
  static bool any_equal(const uint32_t* a, const uint32_t* b) noexcept {
    const __mmask16 m = any_rotation(
        _mm512_loadu_si512(a), _mm512_loadu_si512(b), [](__m512i x, __m512i y) { return _mm512_cmpeq_epi32_mask(x, y); },
        [](__m512i v, auto r) { return _mm512_alignr_epi32(v, v, decltype(r)::value); }, std::make_integer_sequence<int, 16>{});
    return m != 0;
  }
};

// 8 x 8 of 64-bit values: b in its 8 rotations.
struct Avx512SetBlock {
  static constexpr size_t kWidth = 8;
  static long common(const uint64_t* a, const uint64_t* b) noexcept {
    const __mmask8 m = any_rotation(
        _mm512_loadu_si512(a), _mm512_loadu_si512(b), [](__m512i x, __m512i y) { return _mm512_cmpeq_epi64_mask(x, y); },
        [](__m512i v, auto r) { return _mm512_alignr_epi64(v, v, decltype(r)::value); }, std::make_integer_sequence<int, 8>{});
    return __builtin_popcount(static_cast<unsigned>(m));
  }
};

}  // namespace

long jaccard_block_avx512(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<Avx512Block>(a, la, b, lb, smax);
}

long set_common_at_least_avx512(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept {
  // Blocks of 8 (the 4-value kernel's walk, set_merge-inl.h), then the tail (fewer than 8
  // values left on a side) to the 4-value kernel from where this walk stopped. On sets of the
  // sizes and similarities an LSH run verifies, 1.04-1.18x the 4-value kernel's speed
  // (BM_SetCommon); broadcasting b's values one by one instead of rotating them was no faster
  // than the 4-value kernel.
  size_t i = 0, j = 0;
  const long common = set_common_blocks<Avx512SetBlock>(a, la, b, lb, need, i, j);
  if (common < 0) return -1;
  const long rest = set_common_at_least_avx2(a + i, la - i, b + j, lb - j, std::max(0L, need - common));
  return rest < 0 ? -1 : common + rest;
}

}  // namespace neardup::internal
