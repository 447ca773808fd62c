// SimHash tallies, one kernel per instruction set; all compute the same sums (simhash.h):
//   count:  counts[b] += the number of h[i] (i < n) with bit b set;
//   weigh:  sums[b]   += the sum of w[i] over the h[i] with bit b set.
// The SIMD kernels count in narrow lanes (8 bits for count, 32 for weigh) over chunks small
// enough that no lane overflows, then add the chunk into the 64-bit totals.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neardup::internal {

void simhash_count_scalar(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept;
void simhash_count_avx2(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept;
void simhash_count_avx512(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept;

void simhash_weigh_scalar(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept;
void simhash_weigh_avx2(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept;
void simhash_weigh_avx512(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept;

/// Features per chunk for the 32-bit lanes of weigh: no lane can pass 2^32 when every weight is
/// below 2^20 (simhash.h caps weights there).
inline constexpr size_t kWeighChunk = size_t{1} << 12;
inline constexpr uint32_t kMaxSimHashWeight = (uint32_t{1} << 20) - 1;

}  // namespace neardup::internal
