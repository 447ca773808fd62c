// Sorting a few hundred hash values fast. Values known to lie in [0, bound) and spread evenly
// there (hashes) are scattered into about one bucket each (by a multiply, or by their top bits),
// then an insertion pass puts the few that share a bucket in order: linear time and almost no
// mispredicted branches, where std::sort mispredicts about every other comparison.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace neardup::internal {

/// v[0, n) = out[0, n) in order, where each value of out is at most a few places from its own:
/// a value only moves past values of its own bucket.
template <class T>
void insertion_pass(const T* out, T* v, size_t n) {
  if (n == 0) return;
  v[0] = out[0];
  for (size_t i = 1; i < n; ++i) {
    const T x = out[i];
    size_t j = i;
    while (j > 0 && v[j - 1] > x) {
      v[j] = v[j - 1];
      --j;
    }
    v[j] = x;
  }
}

/// Sorts v[0, n), every value < bound (1 <= bound <= 2^32). `scratch` is reused between calls.
inline void bucket_sort_u32(uint32_t* v, size_t n, uint64_t bound, std::vector<uint32_t>& scratch) {
  if (n < 24) {
    std::sort(v, v + n);
    return;
  }
  const size_t buckets = n;
  // bucket(x) = x * buckets / bound, by a 32.32 fixed-point reciprocal: x < bound keeps it
  // below `buckets`.
  const uint64_t recip = (static_cast<uint64_t>(buckets) << 32) / bound;
  scratch.resize(2 * n + 1);
  uint32_t* count = scratch.data();
  uint32_t* out = scratch.data() + n + 1;
  std::fill(count, count + buckets + 1, 0u);
  for (size_t i = 0; i < n; ++i) ++count[(v[i] * recip) >> 32];
  uint32_t sum = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const uint32_t c = count[b];
    count[b] = sum;
    sum += c;
  }
  for (size_t i = 0; i < n; ++i) out[count[(v[i] * recip) >> 32]++] = v[i];
  insertion_pass(out, v, n);
}

/// Sorts the 64-bit keys v[0, n) whose top bits are spread (hashes), except that runs of keys may
/// agree in all but their low bits and come in order (the join's ranking: the entries of one value
/// held by many sets, PackedEntries; the LSH search: the documents of one band key). Scattered by
/// their top bits below the first `equal_bits` (which all of v shares: a part of a larger sort by
/// those) into about n buckets; a bucket of more than kCrowded, where such runs interleave and the
/// insertion pass would be quadratic, is sorted alone (unless already in order) before the pass.
inline void bucket_sort_top_bits(uint64_t* v, size_t n, std::vector<uint64_t>& scratch, int equal_bits = 0) {
  constexpr size_t kCrowded = 32;  // at most 32 * 31 / 2 moves however the keys interleave
  if (n < 2) return;
  const int bits = std::clamp(static_cast<int>(std::bit_width(n)), 1, 12);
  const int shift = 64 - bits;
  const auto bucket = [&](uint64_t x) { return (x << equal_bits) >> shift; };
  // at[b]: bucket b's count, then where it starts, then (once scattered) where it ends.
  thread_local std::vector<uint32_t> at;
  at.assign(size_t{1} << bits, 0);
  for (size_t i = 0; i < n; ++i) ++at[bucket(v[i])];
  uint32_t sum = 0;
  for (uint32_t& c : at) {
    const uint32_t here = c;
    c = sum;
    sum += here;
  }
  if (scratch.size() < n) scratch.resize(n);
  uint64_t* out = scratch.data();
  for (size_t i = 0; i < n; ++i) out[at[bucket(v[i])]++] = v[i];
  for (size_t b = 0, from = 0; b < at.size(); from = at[b++])
    if (at[b] - from > kCrowded && !std::is_sorted(out + from, out + at[b])) std::sort(out + from, out + at[b]);
  insertion_pass(out, v, n);
}

}  // namespace neardup::internal
