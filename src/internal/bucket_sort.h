// Sorting a few hundred hash values fast. Values known to lie in [0, bound) and spread evenly
// there (hashes) are scattered into about one bucket each by a multiply, then an insertion pass
// puts the few that share a bucket in order: linear time and almost no mispredicted branches,
// where std::sort mispredicts about every other comparison.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace neardup::internal {

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
  // Insertion pass: a value only moves past values of its own bucket.
  v[0] = out[0];
  for (size_t i = 1; i < n; ++i) {
    const uint32_t x = out[i];
    size_t j = i;
    while (j > 0 && v[j - 1] > x) {
      v[j] = v[j - 1];
      --j;
    }
    v[j] = x;
  }
}

}  // namespace neardup::internal
