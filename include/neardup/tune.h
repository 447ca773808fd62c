// Choosing LSH bands and rows from the S-curve (Leskovec, Rajaraman and Ullman, Mining of Massive Datasets, ch. 3).
//
// With b bands of r rows, a pair of Jaccard similarity s is a candidate with probability
// P(s) = 1 - (1 - s^r)^b (lsh_probability). A target names two points of the curve: at most
// `low_max` at similarity `low` (false positives) and at least `high_min` at `high` (recall).
// The tuner looks at every (b, r) with b * r <= P:
//   * recall comes first: among the (b, r) with P(high) >= high_min, the one with the least
//     P(low); ties go to fewer permutations used (b * r), then fewer bands;
//   * if none reaches the recall, the one with the largest P(high) (ties: least P(low));
//   * the target is met when that choice also has P(low) <= low_max.
// The similarities where the curve crosses low_max and high_min are found with a root finder
// (bisection on the monotone P), as E. Ross, "Searching for Near Duplicates with Minhash" (2020)
// suggests; they are reported with each choice.
//
// pairs and dedup turn a threshold t into (b, r) with lsh_tune_threshold: for every r, b =
// floor(P / r) (every permutation used), and the largest r with P(t) >= 0.99.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "neardup/lsh_index.h"

namespace neardup {

struct LshTarget {
  double low = 0.0;       ///< a similarity that should rarely become a candidate
  double low_max = 1.0;   ///< the largest P(low) allowed
  double high = 1.0;      ///< a similarity that should almost always become a candidate
  double high_min = 0.0;  ///< the smallest P(high) allowed
  /// Throws UsageError unless 0 <= low < high <= 1 and both probabilities are in (0, 1).
  void check() const;
};

struct LshChoice {
  LshParams params;
  double p_low = 0, p_high = 0;  ///< P at the target's two similarities
  bool met = false;
  double s_low = 0;   ///< where P(s) = low_max (root finder)
  double s_high = 0;  ///< where P(s) = high_min
  double threshold = 0;  ///< (1/b)^(1/r), near the curve's steepest point
};

/// The similarity s in [0, 1] with P(s) = p for 0 < p < 1 (bisection to 1e-12).
double lsh_similarity_at(double p, int bands, int rows);

/// The choice for `num_perm` permutations (rule above). Throws UsageError on a bad target.
LshChoice lsh_tune(int num_perm, const LshTarget& target);

/// Every (b, r) with b * r <= num_perm, scored against the target (for tables and plots), in
/// order of r, then b.
std::vector<LshChoice> lsh_tune_all(int num_perm, const LshTarget& target);

/// The fewest permutations with which the target can be met, or 0 if none up to `limit`.
int lsh_min_num_perm(const LshTarget& target, int limit = 4096);

/// The rule of pairs and dedup: the largest r with P(t) >= min_recall for b = floor(P / r).
LshChoice lsh_tune_threshold(double threshold, int num_perm, double min_recall = 0.99);

/// The pair similarities of a sample, to predict what (b, r) will do on the whole corpus.
struct SimilaritySample {
  static constexpr int kBins = 1000;
  std::vector<uint64_t> bins = std::vector<uint64_t>(kBins, 0);  ///< pairs with 0 < s, s in [i, i+1) / kBins (s = 1 in the last)
  std::vector<double> sums = std::vector<double>(kBins, 0.0);    ///< the sum of their similarities
  uint64_t disjoint = 0;  ///< pairs with s = 0 exactly (never candidates: P(0) = 0)
  uint64_t sample_docs = 0;
  uint64_t corpus_docs = 0;  ///< documents in the whole corpus

  /// Adds the Jaccard similarity of every pair of the given sorted, unique shingle sets.
  void add_all_pairs(std::span<const std::vector<uint64_t>> sets, int threads);  ///< threads 0: all
  uint64_t sample_pairs() const noexcept { return sample_docs < 2 ? 0 : sample_docs * (sample_docs - 1) / 2; }
  /// The expected number of distinct candidate pairs in the corpus: the sampled pairs' mean P
  /// (each bin's pairs at their mean similarity), times the corpus's pairs.
  double predicted_candidates(const LshParams& p) const noexcept;
  /// The expected fraction of the pairs with s >= t that become candidates; negative if the
  /// sample holds no such pair.
  double expected_recall(const LshParams& p, double t) const noexcept;
  /// Sampled pairs with s >= t (to the bin, 0.001).
  uint64_t pairs_at_least(double t) const noexcept;
  static int first_bin(double t) noexcept;
};

}  // namespace neardup
