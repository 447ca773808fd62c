// The exact join's two small loops (SetJoin), written once and included by the .cpp of each
// instruction set (docs/architecture.md, "Habits": kernels written once): compiled with POPCNT,
// std::popcount is one instruction; the AVX-512 probe runs the same loop on its tail.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace neardup::internal {

// common_bits (jaccard_kernels.h).
inline long common_bits_loop(const uint32_t* index, const uint64_t* bits, size_t n, const uint64_t* map) noexcept {
  long c = 0;
  for (size_t k = 0; k < n; ++k) c += std::popcount(bits[k] & map[index[k]]);
  return c;
}

// unmarked_members (jaccard_kernels.h) over members[k, n), appending to found[j, ...): the new j.
inline size_t unmarked_members_loop(const uint32_t* members, size_t k, size_t n, uint32_t x, uint32_t* mark, uint32_t* found,
                                    size_t j) noexcept {
  for (; k < n; ++k) {
    const uint32_t y = members[k];
    if (y == x || mark[y] == x) continue;
    mark[y] = x;
    found[j++] = static_cast<uint32_t>(k);
  }
  return j;
}

}  // namespace neardup::internal
