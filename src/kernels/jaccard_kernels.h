// Fingerprint-Jaccard kernels with the early abort and a block-skip prefilter (bottomk.h), one per
// instruction set; all return the same value for the same input. smax is the abort bound
// ceil((1 - alpha) / (1 + alpha) * (len1 + len2)).
#pragma once

#include <cstddef>
#include <cstdint>

namespace neardup::internal {

/// Return the number of common values, or -1 if the merge aborted. The scalar twins walk with
/// blocks of 8 (as AVX2 does) and 16 (as AVX-512 does), and return exactly what those return.
long jaccard_block_scalar16(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept;
long jaccard_block_scalar(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept;
long jaccard_block_avx2(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept;
long jaccard_block_avx512(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept;

/// The number of values common to two shingle sets (sorted, distinct 64-bit values), or -1 once
/// it is certain to be below `need` (count_common_at_least, internal/sorted_merge.h). Every
/// kernel returns the same value: the abort is taken only when the count cannot reach `need`.
long set_common_at_least_scalar(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept;
long set_common_at_least_avx2(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept;
long set_common_at_least_avx512(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept;

/// The values common to a set given as n words of 64 values (word k holds the values
/// 64 index[k] + i for each bit i of bits[k]) and a bitmap of another (`map`, bit v for value v):
/// the sum of popcount(bits[k] & map[index[k]]). The popcnt kernel needs POPCNT (every AVX2
/// machine has it).
long common_bits_scalar(const uint32_t* index, const uint64_t* bits, size_t n, const uint64_t* map) noexcept;
long common_bits_popcnt(const uint32_t* index, const uint64_t* bits, size_t n, const uint64_t* map) noexcept;

/// The members of a posting list (distinct, below 2^31) not yet marked for the probing member x
/// (mark[y] != x, y != x): marks each (mark[y] = x) and writes its place in the list to `found`
/// (room for n), in list order; returns how many. A probe of a dense family meets the same
/// members in list after list, so most are marked already: the AVX-512 kernel tests 16 at a
/// time.
size_t unmarked_members_scalar(const uint32_t* members, size_t n, uint32_t x, uint32_t* mark, uint32_t* found) noexcept;
size_t unmarked_members_avx512(const uint32_t* members, size_t n, uint32_t x, uint32_t* mark, uint32_t* found) noexcept;

/// A probe's walk over a posting list held as a bitmap of members (internal/dense_postings.h):
/// the list's members in [lo, hi) whose bit in `met` is clear, each one's place in the list
/// (before[w], the list's members in the words before word w, plus those below it in its word)
/// written to `places`, ascending; sets the bits of all the list's members in [lo, hi) in `met`
/// and returns how many places it wrote. Most words of a dense family's walk hold no new member:
/// the AVX-512 kernel tests 8 words at a time.
size_t dense_walk_scalar(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) noexcept;
size_t dense_walk_popcnt(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) noexcept;
size_t dense_walk_avx512(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) noexcept;

}  // namespace neardup::internal
