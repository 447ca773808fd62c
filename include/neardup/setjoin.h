// The exact set-similarity join: every pair of shingle sets with Jaccard >= t, found without
// comparing every pair (AllPairs, Bayardo, Ma and Srikant 2007, with the positional filter of
// PPJoin, Xiao, Wang, Lin and Yu 2008).
//
//  * One global order of the shingles, rarest first (the number of joined sets holding it, then
//    the hash). A shingle held by one set only can never make a pair, so only the shared ones get
//    a rank; each set keeps its count of unshared shingles, which come first in the order.
//  * Prefix filter: sets x, y with J >= t share o >= ceil(t * max(|x|, |y|)) shingles, so the
//    first common shingle lies within the first |x| - ceil(t |x|) + 1 of x and within the first
//    |y| - ceil(t |y|) + 1 of y. Only those prefixes are indexed and probed.
//  * Length filter: t |x| <= |y| <= |x| / t.
//  * Positional filter: found at the first common shingle, the overlap is at most 1 plus the
//    shingles after it on the shorter side; below ceil(t / (1 + t) (|x| + |y|)) the pair is dropped.
//  * A prefix list that more than 1/64 of the members hold (a dense family's boilerplate) is also
//    a bitmap of members: the probes walk it a word of 64 members at a time, skipping those met.
//  * Verification merges the rank lists after the first common shingle, with the early abort;
//    or, where it costs less, counts the pair on the members' differences from a shared pivot
//    (internal/pivot_delta.h) or as the candidate's words of 64 ranks against a bitmap of the
//    probing member's ranks (dense families of near-copies: their ranks lie close together).
//
// The threshold is an exact fraction (ExactThreshold): J >= t is decided in integers, so a pair
// exactly at the threshold (4 of 5 shingles shared at t = 0.8) is always included.
//
// The LSH paths use it too: joined over the documents that share an LSH bucket with another,
// with a filter that keeps only the pairs sharing a band, it finds every such pair with J >= t
// (pairs), or connects them (connect) while verifying only pairs not yet connected.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "neardup/types.h"

namespace neardup {

/// A similarity threshold t in (0, 1] as the fraction num / den (den = 10^9: t rounded to nine
/// decimals), so that comparisons with it are exact.
struct ExactThreshold {
  uint64_t num = 4;
  uint64_t den = 5;

  /// t rounded to nine decimals; a t <= 0 becomes 10^-9 (a pair must share a shingle).
  static ExactThreshold from(double t) noexcept;
  double value() const noexcept { return static_cast<double>(num) / static_cast<double>(den); }
  // Inline: the join's probes ask these of every member they meet.
  /// ceil(t * len), at least 1: the overlap a set of `len` shingles needs with any partner.
  uint64_t min_overlap(uint64_t len) const noexcept { return std::max<uint64_t>(1, (num * len + den - 1) / den); }
  /// ceil(t / (1 + t) * (la + lb)): the overlap two sets of these sizes need, as
  /// J = o / (la + lb - o) >= num / den  <=>  o (num + den) >= num (la + lb).
  uint64_t pair_overlap(uint64_t la, uint64_t lb) const noexcept {
    return std::max<uint64_t>(1, (num * (la + lb) + num + den - 1) / (num + den));
  }
  /// Whether an overlap of `bound` reaches pair_overlap(la, lb), without dividing: lengths below
  /// 2^32 and num + den below 2^31 keep both products below 2^63.
  bool overlap_reachable(uint64_t bound, uint64_t la, uint64_t lb) const noexcept {
    return bound >= 1 && bound * (num + den) >= num * (la + lb);
  }
  /// The longest set an overlap of `bound` can still take to t with a set of `la`: for lb >= 1,
  /// overlap_reachable(bound, la, lb) <=> lb <= longest_partner(bound, la) (0: none).
  uint64_t longest_partner(uint64_t bound, uint64_t la) const noexcept {
    const uint64_t reach = bound * (num + den) / num;  // the most la + lb can be
    return bound >= 1 && reach > la ? reach - la : 0;
  }
  /// common / (la + lb - common) >= t, exactly. Empty sets never reach it.
  bool reached(uint64_t common, uint64_t la, uint64_t lb) const noexcept {
    return common > 0 && common * (num + den) >= num * (la + lb);
  }
};

/// Decides, before a candidate pair (a < b) is verified, whether it is wanted: the LSH paths keep
/// only pairs that share a band. A test of two documents; a filter that keeps the pairs sharing a
/// key (a band key) may also give each document's keys as a row (shared_key), from which a join's
/// listing gathers its members' rows once, in member order, and tests each candidate against the
/// probing member's row where it lies: asked one pair at a time, the test read up to 21 band
/// arrays at two places far apart (12% of the listing's CPU time on dense licence families).
class PairFilter {
 public:
  using Test = std::function<bool(DocId a, DocId b)>;
  /// Fills `rows` (docs.size() rows of width() keys each, row-major) with the keys of `docs`
  /// (ascending).
  using FillRows = std::function<void(std::span<const DocId> docs, std::span<uint64_t> rows)>;

  PairFilter() = default;
  /// Any test, as the std::function it converts from.
  template <class F>
    requires std::is_invocable_r_v<bool, const F&, DocId, DocId> && (!std::is_same_v<std::decay_t<F>, PairFilter>)
  PairFilter(F test) : test_(std::move(test)) {}  // NOLINT(google-explicit-constructor)
  /// Keeps the pairs that hold the same key in some column of their rows of `width` keys: `test`
  /// decides a single pair, `fill` gives many documents' rows at once; the two must agree.
  static PairFilter shared_key(Test test, size_t width, FillRows fill) {
    PairFilter f(std::move(test));
    f.width_ = width;
    f.fill_ = std::move(fill);
    return f;
  }

  explicit operator bool() const noexcept { return static_cast<bool>(test_); }
  bool operator()(DocId a, DocId b) const { return test_(a, b); }
  /// The keys per row; 0 when the filter is a test only.
  size_t width() const noexcept { return width_; }
  void fill_rows(std::span<const DocId> docs, std::span<uint64_t> rows) const { fill_(docs, rows); }
  /// Whether two rows of `width` keys hold the same key in some column.
  static bool share_key(const uint64_t* x, const uint64_t* y, size_t width) noexcept {
    // Four columns a step, without a branch between them: a pair of near-copies at J 0.8 shares
    // its first band with probability 0.8^6 (rows of 6), so most pairs read several.
    for (size_t i = 0; i < width; i += 4) {
      bool any = false;
      for (size_t j = i; j < std::min(width, i + 4); ++j) any |= x[j] == y[j];
      if (any) return true;
    }
    return false;
  }

 private:
  Test test_;
  size_t width_ = 0;
  FillRows fill_;
};

struct SetJoinStats {
  uint64_t candidates = 0;  ///< pairs that shared a prefix shingle and passed the length and positional filters
  uint64_t filtered = 0;    ///< candidates the PairFilter dropped, already connected (connect) or known (pairs_of)
  uint64_t verified = 0;    ///< candidates whose overlap was computed (the merge may abort early)
  uint64_t results = 0;     ///< pairs with J >= t
  uint64_t by_delta = 0;    ///< verified candidates counted on their differences from a shared pivot
  uint64_t by_words = 0;    ///< verified candidates counted as words of 64 ranks against a bitmap
  uint64_t dense_walks = 0; ///< prefix lists walked as bitmaps of members (held by more than 1/64 of them)
};

class SetJoin {
 public:
  /// The shingle set of a document: sorted, distinct, its span valid until the join is built.
  /// Called once or twice per document while the join is built, from several threads.
  using SetOf = std::function<std::span<const ShingleHash>(DocId)>;

  /// Ranks the sets of `docs` (ascending, distinct) and indexes their prefixes for `threshold`.
  /// Memory while building: 4 bytes per shingle of every set and 16 MB (twice that in a join of
  /// more than 2^16 documents) to rank them, then 4 bytes per shared shingle, about 80 per
  /// document (its offsets, lengths, pivot and differences, and a record of them for the
  /// probes), 12 per indexed prefix shingle (at most 12 more where a prefix shingle's list is
  /// also a bitmap of members) and at most 4 more per shared shingle of the members held as
  /// words. The sets themselves are not needed afterwards.
  SetJoin(std::span<const DocId> docs, const SetOf& set_of, double threshold, int threads);
  ~SetJoin();
  SetJoin(const SetJoin&) = delete;
  SetJoin& operator=(const SetJoin&) = delete;

  /// Every pair (a < b) of the joined documents with J >= threshold and keep(a, b) (an empty
  /// filter keeps all), in (a, b) order, handed to emit a chunk at a time: memory does not grow
  /// with the number of pairs. Parallel; the result does not depend on the number of threads.
  /// A shared_key filter's rows take 8 bytes per key of each document of the joins that hold
  /// families of near-copies (a prefix shingle held by more than 1/64 of their documents)
  /// meanwhile; the other joins ask the filter's test.
  void pairs(const PairFilter& keep, const std::function<void(std::span<const ScoredPair>)>& emit) const;
  /// The pairs of several joins over disjoint documents (a run's groups, each joined on its
  /// own), in (a, b) order over them all: what pairs() lists of each, merged. A pair in `known`
  /// (sorted by (a, b): pairs the caller verified already and lists itself) is neither verified
  /// again nor emitted.
  static void pairs_of(std::span<const SetJoin* const> joins, const PairFilter& keep,
                       const std::function<void(std::span<const ScoredPair>)>& emit, std::span<const ScoredPair> known = {});
  /// The same, all at once.
  std::vector<ScoredPair> all_pairs(const PairFilter& keep = {}) const;

  /// Connected components over `num_docs` documents: starting from the edges `known` (already
  /// verified, any documents below num_docs), adds every pair of joined documents with J >=
  /// threshold and keep(a, b). Documents are taken in order and each is compared with earlier
  /// ones only while they are not yet connected to it, so a cluster of m documents costs about m
  /// verifications, not m^2. Returns the edges that joined two components, in the order found
  /// (deterministic). Together with `known` they connect exactly what all the pairs connect.
  std::vector<ScoredPair> connect(size_t num_docs, std::span<const ScoredPair> known, const PairFilter& keep) const;
  /// The same from what is connected already given as a component per joined document, in the
  /// order of the join's documents (equal values: connected), which costs the join's size where
  /// the known edges are many more than its documents (a large group of a dedup's verification).
  std::vector<ScoredPair> connect(std::span<const uint32_t> component, const PairFilter& keep) const;

  /// The exact Jaccard similarity of two joined documents (from their ranks).
  double similarity(DocId a, DocId b) const;
  bool contains(DocId d) const noexcept;
  size_t size() const noexcept;
  /// Counters, summed over every call so far.
  SetJoinStats stats() const noexcept;

 private:
  struct Impl;
  static std::vector<std::vector<uint64_t>> filter_rows(std::span<const SetJoin* const> joins, const PairFilter& keep);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup
