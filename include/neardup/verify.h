// Verification: every candidate pair gets a similarity, and only those at or above the
// threshold are kept.
//
// * Exact: the Jaccard similarity of the two shingle sets (the sets of the documents that appear
//   in candidate pairs, computed again from the inputs; see pipeline.h).
// * Estimate: the sketch's estimate: the fraction of equal signature values (k-permutation
//   MinHash), the bottom-k estimator (bottomk.h), or 1 - d / 64 for SimHashes d bits apart.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "neardup/bottomk.h"
#include "neardup/types.h"

namespace neardup {

enum class VerifyMode { Exact, Estimate };

/// Shingle sets of some of the n documents of a run, looked up by DocId.
class ShingleSets {
 public:
  explicit ShingleSets(size_t num_docs = 0) : slot_(num_docs, kNone) {}

  /// Stores the sorted, distinct set of `doc` (replacing any previous one). Not thread-safe.
  void set(DocId doc, std::vector<ShingleHash> set);
  bool has(DocId doc) const noexcept { return doc < slot_.size() && slot_[doc] != kNone; }
  /// The set of `doc`; empty if none was stored.
  std::span<const ShingleHash> get(DocId doc) const noexcept;
  /// Total number of hashes stored (memory is 8 bytes each).
  uint64_t total_hashes() const noexcept { return total_; }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  std::vector<uint32_t> slot_;
  std::vector<std::vector<ShingleHash>> sets_;
  uint64_t total_ = 0;
};

/// The similarity of two documents: exact Jaccard of their shingle sets, or a sketch's estimate.
/// Made by one of the named constructors, each taking exactly what it needs (the data must
/// outlive the scorer).
class Scorer {
 public:
  /// Jaccard of the two sets (both must be in `sets`).
  static Scorer exact(const ShingleSets& sets) noexcept;
  /// The fraction of equal values of two signatures of k values (minhash, oph): n x k, row-major.
  static Scorer signature_estimate(std::span<const SigValue> sigs, size_t k) noexcept;
  /// The bottom-k estimate of two fingerprints (bottomk.h).
  static Scorer bottomk_estimate(const Fingerprints& fingerprints) noexcept;
  /// 1 - d / 64 for SimHashes d bits apart.
  static Scorer simhash_estimate(std::span<const uint64_t> simhashes) noexcept;

  double operator()(DocId a, DocId b) const noexcept;
  /// The same when it is at least `floor`; otherwise a value below `floor`, which exact scoring
  /// finds without finishing the merge (jaccard_at_least).
  double at_least(DocId a, DocId b, double floor) const noexcept;
  VerifyMode mode() const noexcept { return kind_ == Kind::Exact ? VerifyMode::Exact : VerifyMode::Estimate; }

 private:
  enum class Kind { Exact, Signature, BottomK, SimHash };
  explicit Scorer(Kind kind) noexcept : kind_(kind) {}
  Kind kind_;
  const ShingleSets* sets_ = nullptr;
  std::span<const SigValue> sigs_{};
  size_t k_ = 0;
  const Fingerprints* fingerprints_ = nullptr;
  std::span<const uint64_t> simhashes_{};
};

/// Scores `candidates` in parallel; returns those with similarity >= threshold, in the order of
/// `candidates`.
std::vector<ScoredPair> verify_pairs(std::span<const DocPair> candidates, const Scorer& scorer, double threshold,
                                     int threads);

/// A small tolerance so that a similarity printed as the threshold (for example 4/5 = 0.8) is
/// not lost to rounding.
inline constexpr double kSimilarityEpsilon = 1e-12;

}  // namespace neardup
