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
#include <unordered_map>
#include <utility>
#include <vector>

#include "neardup/bottomk.h"
#include "neardup/types.h"

namespace neardup {

enum class VerifyMode { Exact, Estimate };

/// Shingle sets of some of the n documents of a run, looked up by DocId.
///
/// Documents with identical sets share one stored copy: crowded corpora repeat whole texts
/// (licence files, generated headers), and on a 1.5 GB mix of them a fifth of the bytes of the
/// verified documents' sets were such repeats, and over half of the pairs reported had J = 1.
/// The copies a document brings are let go as it is stored, so their memory serves the sets
/// stored after it, and jaccard() of two documents sharing a copy is 1 without a merge.
class ShingleSets {
 public:
  explicit ShingleSets(size_t num_docs = 0) : slot_(num_docs, kNone) {}

  /// Finds each document's set through a table of the documents that have one, not an entry
  /// per document of the run: for a run whose memory is limited, which holds the sets of one
  /// verification group at a time among many millions of documents (4 B per document of the
  /// run, 190 MiB for 50 million, against about 16 B per document held). Lookups cost a probe
  /// more. Only while no set is stored: returns false otherwise, keeping the dense table.
  bool use_sparse_slots();

  /// Stores the sorted, distinct set of `doc` (replacing any previous one; `doc` may be past the
  /// count given so far). Shares the stored copy of an identical set of another document. Not
  /// thread-safe.
  void set(DocId doc, std::vector<ShingleHash> set);
  /// Stores for `doc` the set of `from`, which has one, shared (the set of a copy of its text).
  void share(DocId doc, DocId from);
  bool has(DocId doc) const noexcept { return slot_of(doc) != kNone; }
  /// The set of `doc`; empty if none was stored. Two documents with a shared copy get the same
  /// span (the same data()).
  std::span<const ShingleHash> get(DocId doc) const noexcept;
  /// The sets of each pair's two documents, as get() gives them, into out[0, pairs.size()).
  /// Each lookup is two dependent cache misses on tables of the whole run (the document's slot,
  /// then the slot's entry): the slots are found first, prefetched 16 pairs ahead, then the
  /// entries, prefetched 8 ahead, so that the misses of different pairs overlap.
  using SetPair = std::pair<std::span<const ShingleHash>, std::span<const ShingleHash>>;
  void get_pairs(std::span<const DocPair> pairs, SetPair* out) const;
  /// Keeps the sets of the documents with needed[d] != 0 and lets the others go; afterwards the
  /// sets are for needed.size() documents.
  void keep_only(std::span<const uint8_t> needed);
  /// Lets the sets of `docs` go.
  void release(std::span<const DocId> docs);
  /// Total number of hashes stored, each shared copy once (memory is 8 bytes each).
  uint64_t total_hashes() const noexcept { return total_; }
  /// Documents whose set is a shared copy of an earlier document's.
  uint64_t shared_docs() const noexcept { return shared_docs_; }

  /// Sets shorter than this are stored for each document: finding identical sets takes a digest
  /// and an entry of a node-based table per set, which for the sets of short texts cost more
  /// time than sharing saves memory (the copies of one text share their set anyway, through
  /// share()).
  static constexpr size_t kShareMin = 128;

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  static constexpr uint64_t kFree = ~uint64_t{0};  // an empty entry of the sparse table
  void drop(uint32_t slot) noexcept;
  void forget(DocId doc) noexcept;  ///< lets doc's set go (its slot dropped), if it has one
  // The set stored at `slot`; empty for kNone.
  std::span<const ShingleHash> set_in(uint32_t slot) const noexcept {
    return slot == kNone ? std::span<const ShingleHash>() : std::span<const ShingleHash>(sets_[slot]);
  }
  uint32_t slot_of(DocId doc) const noexcept {
    if (!sparse_) return doc < slot_.size() ? slot_[doc] : kNone;
    return sparse_slot(doc);
  }
  void assign(DocId doc, uint32_t slot);
  uint32_t sparse_slot(DocId doc) const noexcept;
  void sparse_erase(DocId doc) noexcept;
  size_t sparse_home(DocId doc) const noexcept { return static_cast<size_t>((doc * 0x9E3779B97F4A7C15ull) >> 32) & (table_.size() - 1); }
  std::vector<uint32_t> slot_;  // dense: each document's slot, or kNone
  // sparse: (document << 32 | slot) by linear probing, at most half full; erased by shifting
  // the entries of a probe run back, so no marker of an erased entry lengthens later probes.
  bool sparse_ = false;
  std::vector<uint64_t> table_;
  size_t in_table_ = 0;
  std::vector<std::vector<ShingleHash>> sets_;
  std::vector<uint32_t> users_;                       // documents per slot
  // Each slot's digest (0 for a set shorter than kShareMin): kept, so that letting a set go
  // does not hash it again (a verification in groups lets every set of a group go: for the
  // licence group of the dense licence mix, 23,715 sets of about 500 shingles, 30 ms on the
  // thread that reads the next group while the verifying thread waited for it).
  std::vector<uint64_t> digests_;
  std::unordered_map<uint64_t, uint32_t> by_digest_;  // the digest of a set of kShareMin or more -> its slot
  uint64_t total_ = 0, shared_docs_ = 0;
  size_t live_ = 0;  // slots with at least one user
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
  /// The sets exact scoring compares (null for an estimate).
  const ShingleSets* exact_sets() const noexcept { return kind_ == Kind::Exact ? sets_ : nullptr; }
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

/// Scores `candidates` in parallel: each pair's similarity when it is at least `floor` (every
/// one with floor 0), otherwise a value below `floor` (Scorer::at_least), in their order.
std::vector<double> score_pairs(std::span<const DocPair> candidates, const Scorer& scorer, double floor, int threads);

/// A small tolerance so that a similarity printed as the threshold (for example 4/5 = 0.8) is
/// not lost to rounding.
inline constexpr double kSimilarityEpsilon = 1e-12;

}  // namespace neardup
