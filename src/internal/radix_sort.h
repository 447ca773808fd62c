// LSD radix sort of 64-bit keys by a range of their bits, for arrays small enough for the cache
// (one bucket of a most-significant pass done by the caller). Stable.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace neardup::internal {

/// Sorts v[0, n) by bits [lo_bit, hi_bit) of each key, in passes of 12 bits, with tmp[0, n) as
/// scratch; the result is in v. Keys equal in those bits keep their order.
inline void radix_sort_u64_bits(uint64_t* v, uint64_t* tmp, size_t n, int lo_bit, int hi_bit) noexcept {
  constexpr int kBits = 12;
  constexpr size_t kDigits = size_t{1} << kBits;
  std::array<uint32_t, kDigits> count;  // n < 2^32 in any one bucket
  uint64_t* src = v;
  uint64_t* dst = tmp;
  for (int shift = lo_bit; shift < hi_bit; shift += kBits) {
    const int bits = std::min(kBits, hi_bit - shift);
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    std::fill(count.begin(), count.begin() + (size_t{1} << bits), 0u);
    for (size_t i = 0; i < n; ++i) ++count[(src[i] >> shift) & mask];
    uint32_t sum = 0;
    for (size_t d = 0; d < (size_t{1} << bits); ++d) {
      const uint32_t here = count[d];
      count[d] = sum;
      sum += here;
    }
    for (size_t i = 0; i < n; ++i) dst[count[(src[i] >> shift) & mask]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v) std::copy(src, src + n, v);
}

}  // namespace neardup::internal
