// Bottom-k (single-hash) MinHash (Broder 1997; Cohen and Kaplan, PODC 2007).
//
// The fingerprint of a document is the N smallest distinct values v(s) = hi32(s) of its shingle
// hashes s, sorted ascending (fewer than N when the document has fewer distinct values). One
// hash for every shingle and one streaming pass: the cheapest sketch to build.
//
// Two ways to compare fingerprints F1, F2 (both estimate the Jaccard similarity of the shingle
// sets; docs/bottomk.md measures them):
//   * the reference design's: the Jaccard similarity of the fingerprints, |F1 n F2| / |F1 u F2|;
//   * the standard bottom-k estimator: among the N smallest values of F1 u F2 (all of them if
//     there are fewer), the fraction present in both.
// The second is the one neardup reports (docs/bottomk.md says why); the first is the one the
// all-pairs join (allpairs.h) filters on, since it is a set similarity and admits prefix filters.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "neardup/cpu.h"
#include "neardup/types.h"

namespace neardup {

inline constexpr int kDefaultSketchSize = 128;

/// The fingerprint value of a shingle hash.
inline constexpr SigValue bottomk_value(ShingleHash s) noexcept { return static_cast<SigValue>(s >> 32); }

/// Selects the N smallest distinct values of a stream, in one pass. The default design: a running
/// threshold (the N-th smallest distinct value seen so far), a buffer of the values under it
/// written branch-free, and a sort + unique + cut to N when the buffer fills.
class BottomKSelector {
 public:
  explicit BottomKSelector(int size);
  int size() const noexcept { return n_; }
  void reset() noexcept;
  /// Adds the values of a span of shingle hashes.
  void add(std::span<const ShingleHash> shingles) noexcept;
  void add_value(SigValue v) noexcept;
  /// Replaces `out` with the fingerprint (sorted, distinct, at most N). Resets the selector.
  void finish(std::vector<SigValue>& out);

 private:
  void compact() noexcept;
  void add_all(std::span<const ShingleHash> shingles) noexcept;
  int n_;
  size_t cap_;
  std::vector<SigValue> buf_;  // cap_ + 1 slots: the branch-free write may touch one past
  size_t len_ = 0;
  SigValue thr_ = 0xFFFFFFFFu;  // values < thr_ are kept (thr_ excluded once N are known)
  bool full_ = false;           // N distinct values are known: thr_ is exclusive
  bool has_max_ = false;        // the value 0xFFFFFFFF was seen while not full
  std::vector<SigValue> scratch_;  // the sort's
  static constexpr size_t kNever = ~size_t{0};
  size_t compact_len_ = kNever;  // len_ right after the last compaction
};


/// The fingerprint of a sequence of shingle hashes (any order, repeats allowed).
std::vector<SigValue> bottomk_fingerprint(std::span<const ShingleHash> shingles, int size);

/// Fingerprints of n documents in one buffer (CSR): document i is values[offsets[i], offsets[i+1]).
struct Fingerprints {
  int size = kDefaultSketchSize;  ///< N
  std::vector<SigValue> values;
  std::vector<uint64_t> offsets{0};

  size_t count() const noexcept { return offsets.size() - 1; }
  std::span<const SigValue> operator[](size_t i) const noexcept {
    return std::span<const SigValue>(values).subspan(offsets[i], offsets[i + 1] - offsets[i]);
  }
  void push_back(std::span<const SigValue> fp) {
    values.insert(values.end(), fp.begin(), fp.end());
    offsets.push_back(values.size());
  }
};

// ---- Comparing two fingerprints (sorted, distinct) ----

/// Returned by the early-abort variants when the similarity is certainly below the threshold.
inline constexpr double kAborted = -1.0;

/// The reference design's classical merge: |a n b| / |a u b| (0 when both are empty).
double fingerprint_jaccard(std::span<const SigValue> a, std::span<const SigValue> b) noexcept;
/// The same with the reference design's early abort: returns kAborted as soon as
/// pos1 + pos2 - 2 * common > ceil((1 - alpha) / (1 + alpha) * (len1 + len2)), which implies a
/// result below alpha; otherwise exactly fingerprint_jaccard(a, b).
double fingerprint_jaccard_abort(std::span<const SigValue> a, std::span<const SigValue> b, double alpha) noexcept;
/// The early abort plus a SIMD block-skip prefilter: blocks of W values (8 with AVX2, 16 with
/// AVX-512, 8 in the scalar twin) are compared all against all; a block without any equal value
/// is skipped whole. Returns exactly what fingerprint_jaccard_abort's contract says (the result,
/// or kAborted only when the result is below alpha), identically for every `isa`.
double fingerprint_jaccard_fast(std::span<const SigValue> a, std::span<const SigValue> b, double alpha,
                                Isa isa) noexcept;
/// The same with the fastest walk for this CPU (the AVX2 walk on AVX-512 machines, as measured).
double fingerprint_jaccard_fast(std::span<const SigValue> a, std::span<const SigValue> b, double alpha) noexcept;

/// The count behind fingerprint_jaccard_fast: the values common to two sorted lists of distinct
/// values, or -1 once more than `smax` values have been passed without a match (the fastest
/// walk for this CPU). Callers that know a part of both lists holds no common value pass only
/// the rest, with smax lowered by the length of the parts left out.
long count_common_abort(std::span<const SigValue> a, std::span<const SigValue> b, long smax) noexcept;
/// The reference design's abort bound ceil((1 - alpha) / (1 + alpha) * (la + lb)): a merge that passes more
/// values than this without a match ends below alpha.
long fingerprint_abort_bound(double alpha, size_t la, size_t lb) noexcept;
/// |a n b| / |a u b| from |a n b| and the two lengths: the value every comparison above returns
/// (inline: the exact join calls it for each of millions of pairs).
inline double jaccard_from_common(long common, size_t la, size_t lb) noexcept {
  const size_t uni = la + lb - static_cast<size_t>(common);
  return uni == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(uni);
}

/// The standard bottom-k estimator: among the min(N, |a u b|) smallest values of a u b, the
/// fraction present in both. `n` is the sketch size N.
double bottomk_estimate(std::span<const SigValue> a, std::span<const SigValue> b, int n) noexcept;

/// A fingerprint-Jaccard threshold that every pair with bottomk_estimate >= s passes:
/// s / (2 - s) (proof in docs/bottomk.md).
inline double fingerprint_threshold_for_estimate(double s) noexcept { return s / (2.0 - s); }

/// The estimate threshold that every pair with true Jaccard >= j passes with probability
/// >= 99.8%: the least over J in [j, 1] of J - 3 sqrt(J (1 - J) / N) (3 standard errors of the
/// estimator), and at least 0.01.
double bottomk_screen_threshold(double j, int n) noexcept;

/// The least true Jaccard J whose estimate reaches e with probability >= 0.2%: the J with
/// J + 3 sqrt(J (1 - J) / N) = e. A pair estimated at e has true Jaccard >= this, but for 1 in 700.
double bottomk_lower_bound(double e, int n) noexcept;

/// The estimate threshold that exact verification at t screens candidates with: low enough that
/// a pair with true Jaccard t + 0.05 passes with probability >= 99.8%
/// (bottomk_screen_threshold(t + 0.05)), and never above t. docs/bottomk.md measures it.
double bottomk_candidate_threshold(double t, int n) noexcept;

}  // namespace neardup
