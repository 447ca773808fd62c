// The close-pair scans of SimHash, written once and compiled twice (docs/architecture.md, "Habits":
// kernels written once): by simhash_scalar.cpp for any x86-64, and by simhash_avx2.cpp with POPCNT,
// where __builtin_popcountll is one instruction instead of a call. Internal linkage keeps the two
// copies apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/simhash_kernels.h"

namespace neardup::internal {
namespace {

void close_pairs(const SimHashEntry* e, size_t n, int k, std::vector<uint32_t>& out_a, std::vector<uint32_t>& out_b) {
  for (size_t a = 0; a < n; ++a) {
    const uint64_t x = e[a].key;
    for (size_t b = a + 1; b < n; ++b)
      if (__builtin_popcountll(x ^ e[b].key) <= k) {
        out_a.push_back(static_cast<uint32_t>(a));
        out_b.push_back(static_cast<uint32_t>(b));
      }
  }
}

void close_keys(const uint64_t* keys, size_t n, uint64_t q, int k, std::vector<uint32_t>& hits) {
  for (size_t i = 0; i < n; ++i)
    if (__builtin_popcountll(keys[i] ^ q) <= k) hits.push_back(static_cast<uint32_t>(i));
}

}  // namespace
}  // namespace neardup::internal
