// LSD radix sort by a range of the bits of a 64-bit key, in passes of up to 12 bits. Stable. For
// arrays small enough for the cache (one bucket of a most-significant pass done by the caller),
// or large ones sorted by a few bits.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "neardup/types.h"

namespace neardup::internal {

/// Sorts v[0, n) by bits [lo_bit, hi_bit) of key(v[i]), with tmp[0, n) as scratch, in passes
/// of at most max_digit bits (more bits: fewer passes, larger counting arrays); the result is in
/// v. Items equal in those bits keep their order. n < 2^32.
template <class T, class KeyOf>
void radix_sort_by_bits(T* v, T* tmp, size_t n, int lo_bit, int hi_bit, KeyOf key, int max_digit = 12) {
  // Equal digits: the fewest passes of at most max_digit bits.
  const int passes = std::max(1, (hi_bit - lo_bit + max_digit - 1) / max_digit);
  const int kBits = std::max(1, (hi_bit - lo_bit + passes - 1) / passes);
  std::vector<uint32_t> count(size_t{1} << kBits);
  T* src = v;
  T* dst = tmp;
  for (int shift = lo_bit; shift < hi_bit; shift += kBits) {
    const int bits = std::min(kBits, hi_bit - shift);
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    std::fill(count.begin(), count.begin() + (ptrdiff_t{1} << bits), 0u);
    for (size_t i = 0; i < n; ++i) ++count[(key(src[i]) >> shift) & mask];
    uint32_t sum = 0;
    for (size_t d = 0; d < (size_t{1} << bits); ++d) {
      const uint32_t here = count[d];
      count[d] = sum;
      sum += here;
    }
    for (size_t i = 0; i < n; ++i) dst[count[(key(src[i]) >> shift) & mask]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v) std::copy(src, src + n, v);
}

/// Sorts v[0, n) by the 64-bit key(v[i]), items with equal keys in their order, where the keys'
/// top 32 bits are spread (hashes): a radix sort of those bits (two passes of 16, not four), a
/// run of equal top halves almost always being one key; the rare run of several keys is sorted
/// stably by the whole key. on_run(i, j) is called for each run [i, j) of one top half, in order,
/// once it is in order (a caller that scans equal keys does so while the run is in the cache).
/// max_digit as radix_sort_by_bits's (16: two passes).
template <class T, class KeyOf, class OnRun>
void radix_sort_hashes(T* v, T* tmp, size_t n, KeyOf key, OnRun&& on_run, int max_digit = 16) {
  radix_sort_by_bits(v, tmp, n, 32, 64, key, max_digit);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    bool mixed = false;
    for (; j < n && (key(v[j]) >> 32) == (key(v[i]) >> 32); ++j) mixed |= key(v[j]) != key(v[i]);
    if (mixed) std::stable_sort(v + i, v + j, [&](const T& x, const T& y) { return key(x) < key(y); });
    on_run(i, j);
    i = j;
  }
}

/// The same for plain 64-bit keys.
inline void radix_sort_u64_bits(uint64_t* v, uint64_t* tmp, size_t n, int lo_bit, int hi_bit) {
  radix_sort_by_bits(v, tmp, n, lo_bit, hi_bit, [](uint64_t x) { return x; });
}

/// Sorts pairs of documents (by a, then b) and drops repeats. Large lists by an LSD radix sort
/// of (a, b) packed into as many bits as the largest ids need (three passes for 100k documents,
/// where std::sort compares each pair about 18 times).
inline void sort_unique_pairs(std::vector<DocPair>& v) {
  if (v.size() < 4096) {
    std::sort(v.begin(), v.end());
  } else {
    DocId max_a = 0, max_b = 0;
    for (const DocPair& p : v) {
      max_a = std::max(max_a, p.a);
      max_b = std::max(max_b, p.b);
    }
    const int wb = std::bit_width(max_b), wa = std::bit_width(max_a);
    std::vector<DocPair> tmp(v.size());
    radix_sort_by_bits(v.data(), tmp.data(), v.size(), 0, std::max(1, wa + wb),
                       [wb](const DocPair& p) { return static_cast<uint64_t>(p.a) << wb | p.b; });
  }
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace neardup::internal
