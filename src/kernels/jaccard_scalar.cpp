// The scalar twins of the SIMD block comparators: the same walk with a W x W scalar test, for the
// AVX2 width (8) and the AVX-512 width (16).
#include "kernels/jaccard_block-inl.h"
#include "kernels/join_loops-inl.h"
#include "kernels/jaccard_kernels.h"

namespace neardup::internal {

long set_common_at_least_scalar(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept {
  return count_common_at_least(a, la, b, lb, need);
}

size_t unmarked_members_scalar(const uint32_t* members, size_t n, uint32_t x, uint32_t* mark, uint32_t* found) noexcept {
  return unmarked_members_loop(members, 0, n, x, mark, found, 0);
}

size_t dense_walk_scalar(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) noexcept {
  return dense_walk_by_words(bits, before, lo, hi, met, places);
}

long common_bits_scalar(const uint32_t* index, const uint64_t* bits, size_t n, const uint64_t* map) noexcept {
  return common_bits_loop(index, bits, n, map);
}

namespace {

template <size_t Width>
struct ScalarBlock {
  static constexpr size_t kWidth = Width;
  static bool any_equal(const uint32_t* a, const uint32_t* b) noexcept {
    // Both blocks are sorted: disjoint ranges cannot share a value.
    if (a[kWidth - 1] < b[0] || b[kWidth - 1] < a[0]) return false;
    uint32_t eq = 0;
    for (size_t x = 0; x < kWidth; ++x)
      for (size_t y = 0; y < kWidth; ++y) eq |= a[x] == b[y];
    return eq != 0;
  }
};

}  // namespace

long jaccard_block_scalar(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<ScalarBlock<8>>(a, la, b, lb, smax);
}

long jaccard_block_scalar16(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<ScalarBlock<16>>(a, la, b, lb, smax);
}

}  // namespace neardup::internal
