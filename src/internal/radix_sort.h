// LSD radix sort of unsigned integer keys by a range of their bits (passes of 11 bits), for
// large arrays of hash values where std::sort's comparisons dominate. Stable.
#pragma once

#include <algorithm>
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

/// Sorts 64-bit keys by their upper 32 bits (stable): one most-significant pass on the top 8
/// bits (in parallel) scatters the keys into 256 buckets, then each bucket, small enough for the
/// cache, is sorted by the remaining 24 bits with three 8-bit least-significant passes, buckets
/// in parallel. Small digits keep the counting arrays small next to the buckets.
inline void radix_sort_u64_by_high32(std::vector<uint64_t>& v, int threads) {
  constexpr int kTop = 8;
  constexpr size_t kBuckets = size_t{1} << kTop;
  std::vector<uint64_t> tmp(v.size());
  // The most-significant pass: each part of the input counts its keys per bucket, and scatters
  // them after the keys of the earlier parts (stable).
  const size_t parts = static_cast<size_t>(std::clamp(threads, 1, 64));
  const size_t part_len = (v.size() + parts - 1) / parts;
  std::vector<std::array<size_t, kBuckets>> count(parts);
  parallel_for(parts, threads, [&](size_t p, size_t) {
    auto& c = count[p];
    c.fill(0);
    for (size_t i = p * part_len, e = std::min(v.size(), (p + 1) * part_len); i < e; ++i) ++c[v[i] >> (64 - kTop)];
  });
  std::vector<size_t> start(kBuckets + 1, 0);
  {
    size_t sum = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      start[b] = sum;
      for (size_t p = 0; p < parts; ++p) {
        const size_t here = count[p][b];
        count[p][b] = sum;
        sum += here;
      }
    }
    start[kBuckets] = sum;
  }
  parallel_for(parts, threads, [&](size_t p, size_t) {
    auto& fill = count[p];
    for (size_t i = p * part_len, e = std::min(v.size(), (p + 1) * part_len); i < e; ++i)
      tmp[fill[v[i] >> (64 - kTop)]++] = v[i];
  });
  parallel_for(kBuckets, threads, [&](size_t b, size_t) {
    const size_t lo = start[b], hi = start[b + 1];
    const size_t n = hi - lo;
    uint64_t* src = tmp.data() + lo;
    uint64_t* dst = v.data() + lo;
    // Three passes over bits 32..56: tmp -> v -> tmp -> v, so the result lands in v.
    for (int shift : {32, 40, 48}) {
      std::array<size_t, 256> c{};
      for (size_t i = 0; i < n; ++i) ++c[(src[i] >> shift) & 255];
      size_t sum = 0;
      for (auto& x : c) {
        const size_t here = x;
        x = sum;
        sum += here;
      }
      for (size_t i = 0; i < n; ++i) dst[c[(src[i] >> shift) & 255]++] = src[i];
      std::swap(src, dst);
    }
  });
}

}  // namespace neardup::internal
