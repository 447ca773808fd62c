// Verification of LSH buckets: the one procedure by which every driver (the pipeline, and each
// rank of neardup-mpi over the buckets it owns) turns buckets into verified pairs.
//
// Exact similarities: star edges first (a bucket of s documents gives s - 1, verified in
// parallel); on clean clusters they connect everything. A bucket the stars left split (its first
// document an outlier, or two clusters meeting in it) is completed exactly: a small one by
// verifying its pairs across clusters, save those that the stars prove below the threshold
// (Jaccard distance is a metric, so two documents whose similarities to the bucket's first
// differ by more than 1 - t are less than t alike), a large one by the exact join over its documents,
// restricted to pairs that share a band, which verifies only pairs not yet connected. So every
// pair that shares a bucket and has J >= t ends up in one cluster. Listing every pair (pairs
// mode) verifies all the pairs of the small buckets and hands back the join of the large ones,
// whose pairs the caller lists (SetJoin::pairs) as it writes them.
//
// Estimated similarities have no sets to join: each bucket's pairs are compared by their
// signatures (up to s(s - 1)/2 estimates), skipping a pair already connected unless every pair
// is listed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "neardup/lsh_index.h"
#include "neardup/setjoin.h"
#include "neardup/types.h"
#include "neardup/verify.h"

namespace neardup {

struct BucketVerification {
  double threshold = 0.8;
  int threads = 1;
  /// Every pair with similarity >= threshold (pairs mode), not only those that connect.
  bool list_all = false;
  /// Whether two documents share an LSH band: the join proposes no pair LSH would not have.
  PairFilter share;
  /// The exact join over some documents (ascending, their sets at hand); empty when similarities
  /// are estimated, which has no sets to join.
  std::function<std::unique_ptr<SetJoin>(std::span<const DocId>)> join;
  /// Score every star exactly at once, not only those that reach the threshold: for short sets
  /// (a few dozen hashes) a merge that stops early saves little, and the stars below the
  /// threshold of buckets that need more than their stars are scored again otherwise.
  bool whole_stars = false;
  /// The pairs of a small bucket past its first document are counted on their differences from
  /// it (when short: internal/pivot_delta.h) where both sets have at least this many hashes;
  /// SIZE_MAX: always by a merge of the two sets.
  size_t delta_min_set = 256;
  /// A small bucket of more than this many documents whose stars mostly fall below the threshold
  /// goes to the join: its members are not near-copies of its first document, so the bound by
  /// their similarities to it leaves most of their pairs, and the join's prefix filter few.
  /// SIZE_MAX: every small bucket is completed pair by pair.
  size_t join_below_stars = 16;
  /// With list_all: connect the joined documents too (SetJoin::connect), so that the pairs
  /// returned connect what every pair connects, as clustering needs. False where only the pairs
  /// are wanted: the join is built to list its pairs later, and the pairs returned are the
  /// stars' and the small buckets' alone (dense licence boilerplate: the connecting took 8% of
  /// a `pairs` run). Then a small bucket whose documents all lie in large ones is left to the
  /// join too, which lists its pairs: neither its stars nor its pairs are compared here.
  bool connect_joined = true;
};

struct VerifiedBuckets {
  /// Verified pairs with similarity >= threshold, sorted by (a, b): enough to connect what the
  /// buckets' pairs connect, and with list_all every pair of the small buckets the join does
  /// not list (see connect_joined).
  std::vector<ScoredPair> pairs;
  /// Pairs compared.
  uint64_t verified = 0;
  /// Of those, pairs of a small bucket counted on their differences from its first document.
  uint64_t by_delta = 0;
  /// list_all with large buckets: the join over them, whose pairs (with `share`) complete the
  /// list; some of them may also be in `pairs`.
  std::unique_ptr<SetJoin> join;
};

/// Buckets up to this size are completed pair by pair, of the pairs the stars' bound leaves (at
/// most 32,385 each); larger ones by the join, whose cost grows with the pairs it finds rather
/// than with s^2.
inline constexpr size_t kDirectBucket = 256;

/// Verifies `buckets` (each one's documents ascending, as lsh_buckets gives them), whose
/// documents are `docs` (ascending), scored by `score`.
VerifiedBuckets verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, const Scorer& score,
                               const BucketVerification& how);

}  // namespace neardup
