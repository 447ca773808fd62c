// verify_buckets against brute force over every pair that shares a bucket, on messy clusters
// (pairs on both sides of the threshold, outliers first in their buckets, buckets larger than
// kDirectBucket so that the join completes them), with exact and estimated similarities.
#include "neardup/bucket_verify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "neardup/union_find.h"

using namespace neardup;

namespace {

constexpr double kT = 0.6;

// Families of documents: a base set, each member replacing 0-60% of it, some members an
// outlier sharing little; a pool of common values makes pairs across families.
std::vector<std::vector<ShingleHash>> messy_sets(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<ShingleHash> common(40);
  for (auto& x : common) x = rng();
  std::vector<std::vector<ShingleHash>> sets;
  while (sets.size() < n) {
    std::vector<ShingleHash> base(20 + rng() % 120);
    for (auto& x : base) x = rng() % 5 == 0 ? common[rng() % common.size()] : rng();
    const size_t members = 1 + rng() % 150;
    for (size_t m = 0; m < members && sets.size() < n; ++m) {
      std::vector<ShingleHash> s = base;
      const double change = rng() % 7 == 0 ? 0.9 : static_cast<double>(rng() % 60) / 100.0;
      for (auto& x : s)
        if (static_cast<double>(rng() % 1000) / 1000.0 < change) x = rng();
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
      sets.push_back(std::move(s));
    }
  }
  return sets;
}

// Buckets: runs of consecutive documents (a family, often more than kDirectBucket of them), and
// random mixtures; each ascending, as lsh_buckets gives them.
LshBuckets random_buckets(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  LshBuckets b;
  for (size_t i = 0; i < 60; ++i) {
    std::set<DocId> members;
    if (i % 3 == 0) {
      for (size_t m = 0; m < 2 + rng() % 20; ++m) members.insert(static_cast<DocId>(rng() % n));
    } else {
      const size_t start = rng() % n, len = 2 + rng() % (i % 4 == 1 ? 400 : 160);
      for (size_t d = start; d < std::min(n, start + len); ++d) members.insert(static_cast<DocId>(d));
    }
    if (members.size() < 2) continue;
    std::vector<DocId> v(members.begin(), members.end());
    b.members.insert(b.members.end(), v.begin(), v.end());
    b.offsets.push_back(b.members.size());
  }
  return b;
}

std::vector<DocId> docs_of(const LshBuckets& b) {
  std::vector<DocId> docs(b.members);
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  return docs;
}

// Every pair that shares a bucket with score >= t, sorted.
std::set<std::pair<DocId, DocId>> brute_force(const LshBuckets& b, const Scorer& score) {
  std::set<std::pair<DocId, DocId>> out;
  for (size_t i = 0; i < b.size(); ++i)
    for (const DocId x : b[i])
      for (const DocId y : b[i])
        if (x < y && score(x, y) + kSimilarityEpsilon >= kT) out.insert({x, y});
  return out;
}

std::vector<DocId> components(size_t n, const std::set<std::pair<DocId, DocId>>& pairs) {
  UnionFind uf(n);
  for (const auto& [a, b] : pairs) uf.unite(a, b);
  std::vector<DocId> first(n), label(n);
  std::iota(first.begin(), first.end(), DocId{0});
  for (DocId d = 0; d < n; ++d) first[uf.find(d)] = std::min(first[uf.find(d)], d);
  for (DocId d = 0; d < n; ++d) label[d] = first[uf.find(d)];
  return label;
}

struct Case {
  std::vector<std::vector<ShingleHash>> raw;
  ShingleSets sets;
  std::vector<SigValue> sigs;
  LshBuckets buckets;
  std::vector<DocId> docs;
  std::set<std::pair<DocId, DocId>> together;  // pairs that share a bucket
  static constexpr size_t kSig = 64;
  explicit Case(uint64_t seed, size_t n = 900) : raw(messy_sets(seed, n)), sets(n), buckets(random_buckets(seed + 1, n)) {
    docs = docs_of(buckets);
    for (size_t i = 0; i < buckets.size(); ++i)
      for (const DocId x : buckets[i])
        for (const DocId y : buckets[i])
          if (x < y) together.insert({x, y});
    for (DocId d = 0; d < n; ++d) sets.set(d, raw[d]);
    // Signatures: the bottom values of a hash of each element, per permutation (MinHash), so that
    // estimates scatter around the true similarity on both sides of the threshold.
    sigs.resize(n * kSig);
    for (DocId d = 0; d < n; ++d)
      for (size_t p = 0; p < kSig; ++p) {
        SigValue lo = ~SigValue{0};
        for (const ShingleHash h : raw[d]) lo = std::min(lo, static_cast<SigValue>((h ^ (0x9e3779b97f4a7c15ull * (p + 1))) * 0xff51afd7ed558ccdull >> 32));
        sigs[d * kSig + p] = lo;
      }
  }
  BucketVerification how(bool list_all, bool exact) {
    BucketVerification h;
    h.threshold = kT;
    h.threads = 2;
    h.list_all = list_all;
    // In a real run two documents share a band exactly when they share a bucket.
    h.share = [this](DocId a, DocId b) { return together.count({std::min(a, b), std::max(a, b)}) != 0; };
    if (exact) h.join = [this](std::span<const DocId> over) { return std::make_unique<SetJoin>(over, [this](DocId d) { return sets.get(d); }, kT, 2); };
    return h;
  }
};

void expect_listed(const std::set<std::pair<DocId, DocId>>& want, const VerifiedBuckets& v, const PairFilter& share) {
  std::set<std::pair<DocId, DocId>> got;
  for (const ScoredPair& p : v.pairs) got.insert({p.a, p.b});
  if (v.join) v.join->pairs(share, [&](std::span<const ScoredPair> c) {
      for (const ScoredPair& p : c) got.insert({p.a, p.b});
    });
  std::vector<std::pair<DocId, DocId>> extra, missing;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  EXPECT_TRUE(extra.empty()) << extra.size() << " pairs listed that are not bucket pairs >= t, the first " << extra[0].first << " " << extra[0].second;
  EXPECT_TRUE(missing.empty()) << missing.size() << " bucket pairs >= t missing, the first " << missing[0].first << " " << missing[0].second;
}

void expect_connects(const std::set<std::pair<DocId, DocId>>& want, const VerifiedBuckets& v, const Scorer& score, size_t n) {
  std::set<std::pair<DocId, DocId>> got;
  for (const ScoredPair& p : v.pairs) {
    EXPECT_TRUE(want.count({p.a, p.b})) << p.a << " " << p.b << " is not a bucket pair with similarity >= t";
    EXPECT_DOUBLE_EQ(p.similarity, score(p.a, p.b));
    got.insert({p.a, p.b});
  }
  EXPECT_TRUE(std::is_sorted(v.pairs.begin(), v.pairs.end(), [](const ScoredPair& x, const ScoredPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; }));
  EXPECT_EQ(components(n, got), components(n, want));
}

}  // namespace

// With or without every star scored exactly at once (whole_stars), and with the small buckets'
// pairs counted on their differences from the bucket's first document (delta_min_set 0: every
// set) or merged whole (the default's 256 hashes are more than these sets hold).
TEST(BucketVerify, ExactConnectsWhatEveryBucketPairConnects) {
  for (uint64_t seed : {1, 2, 3})
    for (const bool whole_stars : {false, true})
      for (const size_t delta_min_set : {size_t{256}, size_t{0}}) {
        Case c(seed);
        const Scorer score = Scorer::exact(c.sets);
        const auto want = brute_force(c.buckets, score);
        ASSERT_GT(want.size(), 100u);
        BucketVerification how = c.how(false, true);
        how.whole_stars = whole_stars;
        how.delta_min_set = delta_min_set;
        const VerifiedBuckets v = verify_buckets(c.buckets, c.docs, score, how);
        EXPECT_FALSE(v.join);
        expect_connects(want, v, score, c.raw.size());
        EXPECT_LT(v.pairs.size(), want.size()) << "connecting should not need every pair";
        if (delta_min_set > 0) {
          EXPECT_EQ(v.by_delta, 0u);
        }
      }
}

TEST(BucketVerify, ExactListsEveryBucketPair) {
  for (uint64_t seed : {4, 5})
    for (const bool whole_stars : {false, true})
      for (const size_t delta_min_set : {size_t{256}, size_t{0}})
        for (const size_t join_below_stars : {size_t{16}, SIZE_MAX})
          for (const bool connect_joined : {true, false}) {
          Case c(seed);
          const Scorer score = Scorer::exact(c.sets);
          BucketVerification how = c.how(true, true);
          how.whole_stars = whole_stars;
          how.delta_min_set = delta_min_set;
          how.join_below_stars = join_below_stars;
          how.connect_joined = connect_joined;
          const VerifiedBuckets v = verify_buckets(c.buckets, c.docs, score, how);
          EXPECT_TRUE(v.join) << "buckets larger than kDirectBucket go to the join";
          expect_listed(brute_force(c.buckets, score), v, how.share);
          for (const ScoredPair& p : v.pairs) EXPECT_EQ(p.similarity, score(p.a, p.b)) << p.a << " " << p.b;
          if (delta_min_set == 0 && join_below_stars == SIZE_MAX) {
            EXPECT_GT(v.by_delta, 10u) << "pairs of near-copies are counted on their differences";
          }
        }
}

// Listing every pair, the small buckets of one first document that follow each other (a cluster's
// buckets in several bands) are paired as one, keeping the pairs that share a band: a pair of
// members of two of them that shares no bucket is not listed, even where it reaches t, and a pair
// in several of them is listed once.
TEST(BucketVerify, ListingPairsTheBucketsOfOneFirstDocumentAsOne) {
  for (uint64_t seed : {7, 8}) {
    Case c(seed);
    std::mt19937_64 rng(seed);
    LshBuckets b;
    for (DocId first = 0; first + 40 < c.raw.size(); first += 40 + rng() % 20)
      for (size_t band = 0; band < 2 + rng() % 4; ++band) {  // several buckets of `first`, adjacent
        std::set<DocId> members{first};
        for (size_t m = 0; m < 2 + rng() % 12; ++m) members.insert(first + 1 + static_cast<DocId>(rng() % 39));
        b.members.insert(b.members.end(), members.begin(), members.end());
        b.offsets.push_back(b.members.size());
      }
    c.buckets = b;
    c.docs = docs_of(b);
    c.together.clear();
    for (size_t i = 0; i < b.size(); ++i)
      for (const DocId x : b[i])
        for (const DocId y : b[i])
          if (x < y) c.together.insert({x, y});
    const Scorer score = Scorer::exact(c.sets);
    const auto want = brute_force(c.buckets, score);
    size_t apart = 0;  // pairs >= t of one first document's buckets that share none of them
    for (DocId x = 0; x < c.raw.size(); ++x)
      for (DocId y = x + 1; y < std::min<DocId>(x + 40, c.raw.size()); ++y)
        apart += !c.together.count({x, y}) && score(x, y) + kSimilarityEpsilon >= kT;
    ASSERT_GT(want.size(), 30u);
    ASSERT_GT(apart, 10u);
    const BucketVerification how = c.how(true, true);
    const VerifiedBuckets v = verify_buckets(c.buckets, c.docs, score, how);
    expect_listed(want, v, how.share);
    EXPECT_TRUE(std::adjacent_find(v.pairs.begin(), v.pairs.end(), [](const ScoredPair& x, const ScoredPair& y) { return x.a == y.a && x.b == y.b; }) ==
                v.pairs.end());
    for (const ScoredPair& p : v.pairs) EXPECT_EQ(p.similarity, score(p.a, p.b)) << p.a << " " << p.b;
  }
}

// Listing without connecting leaves to the join the small buckets whose documents all lie in
// large ones (these runs inside longer runs): the same pairs are listed, with fewer compared
// before the join lists its own.
TEST(BucketVerify, ListingLeavesCoveredSmallBucketsToTheJoin) {
  for (uint64_t seed : {4, 8}) {
    Case c(seed);
    const Scorer score = Scorer::exact(c.sets);
    BucketVerification how = c.how(true, true);
    const VerifiedBuckets connected = verify_buckets(c.buckets, c.docs, score, how);
    how.connect_joined = false;
    const VerifiedBuckets listed = verify_buckets(c.buckets, c.docs, score, how);
    const uint64_t joined = connected.join->stats().verified;  // the connecting's comparisons
    EXPECT_LT(listed.verified, connected.verified - joined) << "seed " << seed;
    EXPECT_LT(listed.pairs.size(), connected.pairs.size());
    expect_listed(brute_force(c.buckets, score), listed, how.share);
  }
}

// The small buckets whose stars mostly fall below t (these random runs across families) go to
// the join: it holds more documents than the large buckets', the listing and the clusters stay
// complete, and fewer pairs are compared than when every small bucket is completed pair by pair.
TEST(BucketVerify, SmallBucketsMostlyBelowTheirStarsGoToTheJoin) {
  for (const bool list_all : {true, false}) {
    Case c(8);
    const Scorer score = Scorer::exact(c.sets);
    BucketVerification how = c.how(list_all, true);
    how.join_below_stars = SIZE_MAX;
    const VerifiedBuckets direct = verify_buckets(c.buckets, c.docs, score, how);
    how.join_below_stars = 16;
    const VerifiedBuckets joined = verify_buckets(c.buckets, c.docs, score, how);
    const auto truth = brute_force(c.buckets, score);
    if (list_all) {
      ASSERT_TRUE(direct.join && joined.join);
      EXPECT_GT(joined.join->size(), direct.join->size());
      // Pairs compared in all: the verification's (the join's connecting included), then the
      // join's while it lists its pairs.
      const auto compared = [&](const VerifiedBuckets& v) {
        const uint64_t before = v.join->stats().verified;
        expect_listed(truth, v, how.share);
        return v.verified + v.join->stats().verified - before;
      };
      EXPECT_LT(compared(joined), compared(direct));
    } else {
      std::set<std::pair<DocId, DocId>> found;
      for (const ScoredPair& p : joined.pairs) found.insert({p.a, p.b});
      EXPECT_EQ(components(c.raw.size(), found), components(c.raw.size(), truth));
    }
  }
}

// Pivot filtering (pairs_left): of the pairs of the small buckets past their first documents,
// those whose similarities to the first document differ by more than 1 - t are not compared;
// the listing is still complete, with fewer comparisons than the pairs the buckets hold.
TEST(BucketVerify, ExactListingComparesFewerPairsThanTheBucketsHold) {
  Case c(8);
  const Scorer score = Scorer::exact(c.sets);
  const BucketVerification how = c.how(true, true);
  const VerifiedBuckets v = verify_buckets(c.buckets, c.docs, score, how);
  const uint64_t joined = v.join ? v.join->stats().verified : 0;  // before listing its pairs adds to it
  expect_listed(brute_force(c.buckets, score), v, how.share);
  const std::vector<DocPair> stars = star_edges(c.buckets);
  std::set<std::pair<DocId, DocId>> rest;  // pairs of the small buckets that are not stars
  for (size_t i = 0; i < c.buckets.size(); ++i) {
    const auto b = c.buckets[i];
    if (b.size() > kDirectBucket) continue;
    for (size_t y = 2; y < b.size(); ++y)
      for (size_t x = 1; x < y; ++x)
        if (!std::binary_search(stars.begin(), stars.end(), DocPair{b[x], b[y]})) rest.insert({b[x], b[y]});
  }
  const uint64_t compared = v.verified - stars.size() - joined;
  EXPECT_LT(compared, rest.size());
}

// The pivot bound at its edge: J(0, 1) = 1 and J(0, 2) = 0.6 differ by exactly 1 - t, and
// J(1, 2) = 0.6 = t, so the pair must still be compared and listed.
TEST(BucketVerify, PairAtThePivotBoundIsKept) {
  ShingleSets sets(3);
  std::vector<ShingleHash> ten(10);
  std::iota(ten.begin(), ten.end(), ShingleHash{100});
  sets.set(0, ten);
  sets.set(1, ten);
  sets.set(2, std::vector<ShingleHash>(ten.begin(), ten.begin() + 6));
  LshBuckets b;
  b.members = {0, 1, 2};
  b.offsets = {0, 3};
  const Scorer score = Scorer::exact(sets);
  ASSERT_DOUBLE_EQ(score(1, 2), kT);
  BucketVerification how;
  how.threshold = kT;
  how.list_all = true;
  how.share = [](DocId, DocId) { return true; };
  how.join = [&](std::span<const DocId> over) { return std::make_unique<SetJoin>(over, [&](DocId d) { return sets.get(d); }, kT, 1); };
  const std::vector<DocId> docs = {0, 1, 2};
  const VerifiedBuckets v = verify_buckets(b, docs, score, how);
  ASSERT_EQ(v.pairs.size(), 3u);
  EXPECT_EQ(v.pairs[2].a, 1u);
  EXPECT_EQ(v.pairs[2].b, 2u);
}

// A star below the threshold bounds its bucket's pairs by its exact similarity, whether the
// stars below the threshold are scored again (exact_star_similarities) or every star is scored
// whole at once (whole_stars): x is below t from the bucket's first document p (0.54), but
// reaches t with y (0.67), which p's star joins (0.82). A merge that stopped early (0 for x)
// would put y beyond the pivot bound of x.
TEST(BucketVerify, AStarBelowTheThresholdBoundsItsPairsExactly) {
  const auto range = [](ShingleHash from, ShingleHash to) {
    std::vector<ShingleHash> v;
    for (ShingleHash h = from; h < to; ++h) v.push_back(h);
    return v;
  };
  const auto join = [](std::vector<ShingleHash> a, const std::vector<ShingleHash>& b) {
    a.insert(a.end(), b.begin(), b.end());
    std::sort(a.begin(), a.end());
    return a;
  };
  ShingleSets sets(3);
  sets.set(0, range(0, 100));                                     // p
  sets.set(1, join(join(range(30, 100), range(1000, 1010)), range(2000, 2020)));  // x
  sets.set(2, join(range(10, 100), range(1000, 1010)));           // y
  const Scorer score = Scorer::exact(sets);
  ASSERT_LT(score(0, 1), kT);
  ASSERT_GE(score(1, 2), kT);
  ASSERT_GT(score(0, 2) - score(0, 1), 0);
  ASSERT_GT(score(0, 2), 1 - kT);  // beyond the bound from 0
  LshBuckets b;
  b.members = {0, 1, 2};
  b.offsets = {0, 3};
  const std::vector<DocId> docs = {0, 1, 2};
  for (const bool whole_stars : {false, true})
    for (const bool list_all : {false, true}) {
      BucketVerification how;
      how.threshold = kT;
      how.list_all = list_all;
      how.whole_stars = whole_stars;
      how.share = [](DocId, DocId) { return true; };
      how.join = [&](std::span<const DocId> over) { return std::make_unique<SetJoin>(over, [&](DocId d) { return sets.get(d); }, kT, 1); };
      const VerifiedBuckets v = verify_buckets(b, docs, score, how);
      ASSERT_EQ(v.pairs.size(), 2u) << "whole_stars " << whole_stars << " list_all " << list_all;
      EXPECT_EQ(v.pairs[0].b, 2u);
      EXPECT_EQ(v.pairs[1].a, 1u);
      EXPECT_EQ(v.pairs[1].b, 2u);
    }
}

TEST(BucketVerify, EstimatedConnectsAndListsByTheSignatures) {
  Case c(6);
  const Scorer score = Scorer::signature_estimate(c.sigs, Case::kSig);
  const auto want = brute_force(c.buckets, score);
  ASSERT_GT(want.size(), 100u);
  expect_connects(want, verify_buckets(c.buckets, c.docs, score, c.how(false, false)), score, c.raw.size());
  const BucketVerification how = c.how(true, false);
  const VerifiedBuckets all = verify_buckets(c.buckets, c.docs, score, how);
  EXPECT_FALSE(all.join);
  expect_listed(want, all, how.share);
}

TEST(BucketVerify, NoBucketsNoPairs) {
  Case c(7, 10);
  const VerifiedBuckets v = verify_buckets(LshBuckets{}, {}, Scorer::exact(c.sets), c.how(true, true));
  EXPECT_TRUE(v.pairs.empty());
  EXPECT_EQ(v.verified, 0u);
}
