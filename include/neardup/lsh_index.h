// LSH banding over MinHash signatures (Indyk and Motwani 1998; Mining of Massive Datasets, ch. 3).
//
// The signature is cut into b bands of r rows (b * r <= number of permutations; rows past b * r
// are unused). Two documents are candidates when all r values of some band are equal, which
// happens with probability P(s) = 1 - (1 - s^r)^b for Jaccard similarity s.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "neardup/types.h"

namespace neardup {

struct LshParams {
  int bands = 0;
  int rows = 0;
  friend bool operator==(const LshParams&, const LshParams&) = default;
};

/// P(s) = 1 - (1 - s^r)^b: the probability that a pair of similarity s becomes a candidate.
double lsh_probability(double s, int bands, int rows) noexcept;

/// The default rule turning a threshold t into (b, r) for `num_perm` permutations: the largest r
/// such that, with b = floor(num_perm / r), P(t) >= 0.99 (so at most 1% of the pairs exactly at
/// the threshold are missed, and the fewest dissimilar pairs are candidates); r = 1 if none.
/// docs/params.md explains the choice.
LshParams choose_lsh_params(double threshold, int num_perm);

/// The key of band `band` of a signature: XXH3-64 of its r values (little-endian), seeded
/// with seed + band.
uint64_t band_key(std::span<const SigValue> band_values, int band, uint64_t seed) noexcept;

/// The key of band `band` of a whole signature: band_key of its rows [band * r, band * r + r).
inline uint64_t signature_band_key(std::span<const SigValue> sig, int band, const LshParams& p, uint64_t seed) noexcept {
  return band_key(sig.subspan(static_cast<size_t>(band) * static_cast<size_t>(p.rows), static_cast<size_t>(p.rows)), band, seed);
}

/// True if the two signatures agree on all rows of at least one band.
bool share_band(std::span<const SigValue> a, std::span<const SigValue> b, const LshParams& p) noexcept;

struct CandidateStats {
  uint64_t bucket_entries = 0;  ///< documents put in buckets, summed over bands
  uint64_t largest_bucket = 0;
  uint64_t spilled_bytes = 0;   ///< the bands' buckets written to disk for the merge (lsh_buckets_from_reader)
};

/// Candidate pairs from n signatures of length k (row-major, types.h). Documents with
/// skip[i] != 0 (empty documents) are left out. Band by band, the (key, doc) entries are sorted
/// (a radix sort: a few sequential passes over memory instead of n log n random accesses);
/// a bucket of s documents yields s - 1 star edges from its first (smallest) document to each
/// other one, never s^2 pairs. The result is sorted and unique; it does not depend on `threads`.
std::vector<DocPair> lsh_candidates(std::span<const SigValue> sigs, size_t k, std::span<const uint8_t> skip,
                                    const LshParams& params, uint64_t seed, int threads,
                                    CandidateStats* stats = nullptr);

/// The same from band keys computed beforehand: band_keys[band][i] is signature_band_key of
/// document i (all bands of the same length n). Gives exactly what lsh_candidates gives.
std::vector<DocPair> lsh_candidates_from_keys(std::span<const std::span<const uint64_t>> band_keys,
                                              std::span<const uint8_t> skip, int threads, CandidateStats* stats = nullptr);

/// The buckets of two or more documents over every band, each distinct list of documents once
/// (a cluster of near-copies falls into the same bucket in many bands): members ascending,
/// buckets in order of their first member. Row-major like a signature batch: bucket i is
/// members[offsets[i], offsets[i + 1]).
struct LshBuckets {
  std::vector<uint64_t> offsets{0};
  std::vector<DocId> members;
  size_t size() const noexcept { return offsets.size() - 1; }
  std::span<const DocId> operator[](size_t i) const noexcept {
    return std::span<const DocId>(members).subspan(offsets[i], offsets[i + 1] - offsets[i]);
  }
};

/// The buckets of lsh_candidates, instead of its star edges. Throws UsageError like it.
LshBuckets lsh_buckets(std::span<const SigValue> sigs, size_t k, std::span<const uint8_t> skip, const LshParams& params,
                       uint64_t seed, int threads, CandidateStats* stats = nullptr);
LshBuckets lsh_buckets_from_keys(std::span<const std::span<const uint64_t>> band_keys, std::span<const uint8_t> skip,
                                 int threads, CandidateStats* stats = nullptr);
/// The same for keys of 32 bits, each the top half of a band key (signature_band_key >> 32): 4
/// bytes per band and document instead of 8. Two documents of different buckets share such a key
/// by chance, about one pair in 2^32 per band (2,400 pairs among a million documents in 21
/// bands), so a bucket may hold a pair that the full keys would not: a caller that verifies the
/// pairs exactly finds the same ones.
LshBuckets lsh_buckets_from_narrow_keys(std::span<const std::span<const uint32_t>> band_keys, std::span<const uint8_t> skip,
                                        int threads, CandidateStats* stats = nullptr);

/// Reads keys [begin, begin + count) of band `band` (one per document, in document order) into
/// out; called from several threads at once.
using BandKeyReader = std::function<void(size_t band, size_t begin, size_t count, uint64_t* out)>;

/// lsh_buckets_from_keys for `bands` bands of n keys that are not in memory (spilled to disk:
/// RunTuning::spill_band_keys): each band's keys are read twice, in order, a chunk at a time, so
/// that memory holds the entries whose key may repeat (the documents in buckets and a few
/// percent of the others), not every document's. The same buckets. With `spill_dir`, each
/// band's buckets wait for the others' in a file there (IoError naming it if the disk refuses),
/// not in memory.
LshBuckets lsh_buckets_from_reader(size_t n, int bands, const BandKeyReader& read, std::span<const uint8_t> skip, int threads,
                                   CandidateStats* stats = nullptr, const std::string& spill_dir = {});

/// The memory of an LSH search of `docs` documents on `threads` threads (lsh_buckets, or
/// lsh_buckets_from_narrow_keys with `narrow_keys`): bytes per document, and fixed bytes for the
/// band keys kept per band (`band_arrays` of them): the most their rounding to 2 MiB huge pages
/// adds, which they take once past 2 MiB.
struct LshMemory {
  double per_document = 0;
  double fixed = 0;
};
LshMemory lsh_search_memory(const LshParams& params, int threads, size_t band_arrays, bool narrow_keys = false) noexcept;

/// Every pair of documents that share a bucket (what the S-curve promises to find), sorted and
/// unique. A bucket of s documents gives s(s-1)/2 pairs: for crowded buckets the pipeline
/// verifies star edges and joins instead (src/pipeline/candidates.cpp).
std::vector<DocPair> bucket_pairs(const LshBuckets& buckets);

/// A bucket's s - 1 star edges, from its first document to each other one, over all buckets:
/// sorted and unique. lsh_candidates is star_edges(lsh_buckets(...)).
std::vector<DocPair> star_edges(const LshBuckets& buckets);

}  // namespace neardup
