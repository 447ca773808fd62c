// LSD radix sort of unsigned 32-bit keys (three passes of 11 bits), for large arrays of hash
// values where std::sort's comparisons dominate.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace neardup::internal {

inline void radix_sort_u32(std::vector<uint32_t>& v) {
  constexpr int kBits = 11;
  constexpr uint32_t kBuckets = 1u << kBits;
  std::vector<uint32_t> tmp(v.size());
  for (int shift = 0; shift < 32; shift += kBits) {
    std::array<size_t, kBuckets> count{};
    for (uint32_t x : v) ++count[(x >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (auto& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (uint32_t x : v) tmp[count[(x >> shift) & (kBuckets - 1)]++] = x;
    v.swap(tmp);
  }
}

}  // namespace neardup::internal
