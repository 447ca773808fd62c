// All pairs of similar fingerprints, exactly (Bayardo, Ma and Srikant, WWW 2007; Xiao et al., WWW 2008).
//
// fingerprint_join finds every pair whose fingerprint Jaccard (bottomk.h) reaches alpha with a
// prefix-filter join (AllPairs, Bayardo et al. 2007): values are put in one global order, rarest
// first (document frequency, then value); two sets x, y with J(x, y) >= alpha share at least
// ceil(alpha * max(|x|, |y|)) values, so the first |x| - ceil(alpha * |x|) + 1 values of x and
// the first |y| - ceil(alpha * |y|) + 1 values of y have one in common. Each document probes an
// inverted index of every prefix for documents no longer than itself, keeps those that pass the
// length filter alpha * |x| <= |y|, and scores them with the early-abort SIMD merge. The result
// is the same set of pairs, with the same values, as comparing every pair.
//
// top_pairs returns the M most similar pairs with no threshold: bounded min-heaps, one
// per thread, fed by joins at falling thresholds until M pairs are found above one.
#pragma once

#include <cstdint>
#include <vector>

#include "neardup/bottomk.h"
#include "neardup/types.h"

namespace neardup {

struct JoinStats {
  uint64_t candidates = 0;  ///< pairs that shared a prefix value and passed the length and position filters
  uint64_t pruned = 0;      ///< pairs that shared a prefix value, passed the length filter, failed the position filter
  uint64_t aborted = 0;     ///< candidates whose merge stopped early
  uint64_t results = 0;
};

/// Every pair (a < b) with fingerprint_jaccard(a, b) + kSimilarityEpsilon >= alpha, alpha in
/// (0, 1]; similarity = fingerprint_jaccard. Sorted by (a, b). Empty fingerprints pair with none.
std::vector<ScoredPair> fingerprint_join(const Fingerprints& fps, double alpha, int threads,
                                         JoinStats* stats = nullptr);

/// What top_pairs ranks by.
enum class PairScore {
  FingerprintJaccard,  ///< fingerprint_jaccard
  BottomKEstimate,     ///< bottomk_estimate with the fingerprints' size N
};

/// The m pairs with the highest score above 0, best first; ties go to the smaller (a, b). Fewer
/// than m if fewer pairs share a value. Memory: m pairs per thread.
std::vector<ScoredPair> top_pairs(const Fingerprints& fps, size_t m, PairScore score, int threads);

/// Every pair (a < b) with score + kSimilarityEpsilon >= threshold, sorted by (a, b), found by a
/// join at the fingerprint threshold that score implies (for BottomKEstimate,
/// fingerprint_threshold_for_estimate).
std::vector<ScoredPair> pairs_above(const Fingerprints& fps, double threshold, PairScore score, int threads,
                                    JoinStats* stats = nullptr);

/// Bytes per document of fingerprint_join and pairs_above over fingerprints of
/// `values_per_document` values on average: ranks, sort keys and postings per value.
inline double fingerprint_join_bytes_per_document(double values_per_document) noexcept { return 10.0 * values_per_document; }

/// The total order of results: higher similarity first, then smaller a, then smaller b.
inline bool better_pair(const ScoredPair& x, const ScoredPair& y) noexcept {
  if (x.similarity != y.similarity) return x.similarity > y.similarity;
  if (x.a != y.a) return x.a < y.a;
  return x.b < y.b;
}

}  // namespace neardup
