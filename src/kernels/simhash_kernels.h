// SimHash tallies, one kernel per instruction set; all compute the same sums (simhash.h):
//   count:  counts[b] += the number of h[i] (i < n) with bit b set;
//   weigh:  sums[b]   += the sum of w[i] over the h[i] with bit b set.
// The SIMD kernels count in narrow lanes (8 bits for count, 32 for weigh) over chunks small
// enough that no lane overflows, then add the chunk into the 64-bit totals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace neardup::internal {

void simhash_count_scalar(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept;
void simhash_count_avx2(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept;
void simhash_count_avx512(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept;

void simhash_weigh_scalar(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept;
void simhash_weigh_avx2(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept;
void simhash_weigh_avx512(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept;

/// A fingerprint in a table: permuted, with its index.
struct SimHashEntry {
  uint64_t key;
  uint32_t idx;
};

/// Appends to (out_a, out_b) the positions a < b of every pair of e[0, n) whose keys are within
/// Hamming distance k. The popcnt variant is compiled with the POPCNT instruction (used on every
/// CPU that has AVX2); the scalar one calls the compiler's popcount.
void simhash_close_pairs_scalar(const SimHashEntry* e, size_t n, int k, std::vector<uint32_t>& out_a,
                                std::vector<uint32_t>& out_b);
void simhash_close_pairs_popcnt(const SimHashEntry* e, size_t n, int k, std::vector<uint32_t>& out_a,
                                std::vector<uint32_t>& out_b);
/// Appends to `hits` the positions i of keys[0, n) within distance k of q.
void simhash_close_keys_scalar(const uint64_t* keys, size_t n, uint64_t q, int k, std::vector<uint32_t>& hits);
void simhash_close_keys_popcnt(const uint64_t* keys, size_t n, uint64_t q, int k, std::vector<uint32_t>& hits);

/// The distinct values of xs[0, n) in order of first occurrence, written to out; returns their
/// number. `table` is 8 * (bucket_mask + 1) zeroed, 64-byte aligned words: buckets of eight
/// values, one cache line each, compared at once. It is left dirty (the caller clears it). The
/// portable equivalent is the slot table in simhash.cpp.
size_t simhash_distinct_avx512(const uint64_t* xs, size_t n, uint64_t* table, size_t bucket_mask,
                               uint64_t* out) noexcept;

/// Features per chunk for the 32-bit lanes of weigh: no lane can pass 2^32 when every weight is
/// below 2^20 (simhash.h caps weights there).
inline constexpr size_t kWeighChunk = size_t{1} << 12;
inline constexpr uint32_t kMaxSimHashWeight = (uint32_t{1} << 20) - 1;

}  // namespace neardup::internal
