// LSD radix sort of unsigned integer keys by a range of their bits (passes of 11 bits), for
// large arrays of hash values where std::sort's comparisons dominate. Stable.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace neardup::internal {

/// Sorts `v` by bits [lo_bit, hi_bit) of each key; keys equal there keep their order.
template <class Key>
void radix_sort_bits(std::vector<Key>& v, int lo_bit, int hi_bit) {
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::vector<Key> tmp(v.size());
  for (int shift = lo_bit; shift < hi_bit; shift += kBits) {
    std::array<size_t, kBuckets> count{};
    for (Key x : v) ++count[(x >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (auto& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (Key x : v) tmp[count[(x >> shift) & (kBuckets - 1)]++] = x;
    v.swap(tmp);
  }
}

inline void radix_sort_u32(std::vector<uint32_t>& v) { radix_sort_bits(v, 0, 32); }

}  // namespace neardup::internal

#include "internal/parallel.h"

namespace neardup::internal {

/// Sorts 64-bit keys by their upper 32 bits (stable): one most-significant pass on the top 11
/// bits scatters the keys into 2048 buckets, then each bucket, small enough for the cache, is
/// sorted by the remaining 21 bits with two least-significant passes, buckets in parallel.
inline void radix_sort_u64_by_high32(std::vector<uint64_t>& v, int threads) {
  constexpr int kTop = 11;
  constexpr size_t kBuckets = size_t{1} << kTop;
  std::vector<uint64_t> tmp(v.size());
  std::vector<size_t> start(kBuckets + 1, 0);
  for (uint64_t x : v) ++start[(x >> (64 - kTop)) + 1];
  for (size_t b = 1; b <= kBuckets; ++b) start[b] += start[b - 1];
  {
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    for (uint64_t x : v) tmp[fill[x >> (64 - kTop)]++] = x;
  }
  parallel_for(kBuckets, threads, [&](size_t b, size_t) {
    const size_t lo = start[b], hi = start[b + 1];
    if (hi - lo < 2) {
      if (hi > lo) v[lo] = tmp[lo];
      return;
    }
    // Two passes of 11 and 10 bits over bits 32..52: tmp -> v -> tmp, then copied back to v.
    uint64_t* src = tmp.data() + lo;
    uint64_t* dst = v.data() + lo;
    const size_t n = hi - lo;
    for (int shift : {32, 43}) {
      std::array<size_t, 2048> count{};
      for (size_t i = 0; i < n; ++i) ++count[(src[i] >> shift) & 2047];
      size_t sum = 0;
      for (auto& c : count) {
        const size_t here = c;
        c = sum;
        sum += here;
      }
      for (size_t i = 0; i < n; ++i) dst[count[(src[i] >> shift) & 2047]++] = src[i];
      std::swap(src, dst);
    }
    // After two passes the sorted keys are back in tmp (src); move them to v.
    std::copy(src, src + n, v.data() + lo);
  });
}

}  // namespace neardup::internal
