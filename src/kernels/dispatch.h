// One table of kernels per instruction-set level, filled once, and the active one looked up by
// every module (the way xxHash and simdjson dispatch): a module never switches on the ISA
// itself, and each level, chosen with force_isa() or NEARDUP_FORCE_ISA, is a whole table that
// the tests compare with the scalar one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/json_text_kernels.h"
#include "kernels/simhash_kernels.h"
#include "kernels/text_kernels.h"
#include "neardup/cpu.h"

namespace neardup::internal {

struct Kernels {
  Isa level;
  /// The word scan of text (text_kernels.h).
  void (*scan_text)(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept;
  /// The hashes of lowercased ASCII words.
  void (*hash_ascii_words)(const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count, uint64_t seed,
                           uint64_t* out) noexcept;
  /// Word hashes to k-word shingle hashes.
  void (*combine_shingles)(const uint64_t* t, size_t n, size_t k, uint64_t c, uint64_t* out) noexcept;
  /// k-permutation MinHash of 32-bit keys.
  void (*minhash)(const uint64_t* a, const uint64_t* a_hi, size_t num_perm, const uint32_t* keys, size_t n,
                  uint32_t* out) noexcept;
  /// SimHash bit tallies, unweighted and weighted.
  void (*simhash_count)(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept;
  void (*simhash_weigh)(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept;
  /// Pairs within Hamming distance k in a sorted run of table entries, and keys near a query.
  void (*simhash_close_pairs)(const SimHashEntry* e, size_t n, int k, std::vector<uint32_t>& out_a,
                              std::vector<uint32_t>& out_b);
  void (*simhash_close_keys)(const uint64_t* keys, size_t n, uint64_t q, int k, std::vector<uint32_t>& hits);
  /// Common values of two sorted fingerprints, stopping once more than smax are missed: the
  /// level's own block merge, and the 8-wide walk the joins use (AVX2's also on AVX-512
  /// machines, where it measured faster: BENCHMARKS.md).
  long (*jaccard_block)(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept;
  long (*jaccard_walk)(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept;
  /// Common values of two shingle sets, or -1 once below `need` (jaccard_kernels.h); AVX2's
  /// also on AVX-512 machines.
  long (*set_common_at_least)(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept;
  /// Common values of a set as 64-value words and a bitmap (jaccard_kernels.h).
  long (*common_bits)(const uint32_t* index, const uint64_t* bits, size_t n, const uint64_t* map) noexcept;
  /// The members of a posting list not yet marked for a probe (jaccard_kernels.h).
  size_t (*unmarked_members)(const uint32_t* members, size_t n, uint32_t x, uint32_t* mark, uint32_t* found) noexcept;
  /// The new members of a posting list held as a bitmap (jaccard_kernels.h).
  size_t (*dense_walk)(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) noexcept;
  /// JSON string contents to word text (json_text_kernels.h).
  int (*json_word_text)(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept;
  /// OPH's whole densification of up to 128 bins (kernels/oph_kernels.h), or null where the
  /// scalar classification and pull serve.
  bool (*oph_densify)(uint32_t* o, uint32_t k, const uint8_t* cols, size_t rounds) noexcept;
  /// Whether OPH densification may use the VBMI pull of one bin at a time (kernels/oph_kernels.h).
  bool oph_pull_vbmi;
};

/// The table of the active level (active_isa()).
const Kernels& kernels() noexcept;
/// The table of a level (the CPU must support it).
const Kernels& kernels(Isa level) noexcept;

}  // namespace neardup::internal
