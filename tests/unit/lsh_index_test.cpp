#include "neardup/lsh_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>
#include <map>
#include <set>

#include "internal/flag_rank.h"
#include "internal/radix_sort.h"
#include "internal/repeated_keys.h"
#include "neardup/minhash.h"
#include "neardup/shingle.h"
#include "neardup/verify.h"
#include "neardup/error.h"
#include "test_util.h"

using namespace neardup;

TEST(Lsh, ProbabilityFormula) {
  EXPECT_NEAR(lsh_probability(0.8, 16, 8), 1 - std::pow(1 - std::pow(0.8, 8), 16), 1e-15);
  EXPECT_DOUBLE_EQ(lsh_probability(1.0, 4, 4), 1.0);
  EXPECT_DOUBLE_EQ(lsh_probability(0.0, 4, 4), 0.0);
}

// The rule: the largest r whose b = floor(P / r) gives P(t) >= 0.99.
TEST(Lsh, ChooseParamsFollowsTheRule) {
  for (int perm : {16, 64, 128, 256}) {
    for (double t : {0.3, 0.5, 0.7, 0.8, 0.9, 0.95}) {
      const LshParams p = choose_lsh_params(t, perm);
      EXPECT_LE(p.bands * p.rows, perm);
      if (p.rows > 1 || lsh_probability(t, perm, 1) >= 0.99) {
        EXPECT_GE(lsh_probability(t, p.bands, p.rows), 0.99) << t << " " << perm;
      }
      for (int r = p.rows + 1; r <= perm; ++r)
        EXPECT_LT(lsh_probability(t, perm / r, r), 0.99) << "r=" << r << " would do, t=" << t;
    }
  }
  EXPECT_EQ(choose_lsh_params(0.8, 128), (LshParams{21, 6}));
  EXPECT_THROW(choose_lsh_params(0.0, 128), UsageError);
}

// A bucket of s documents yields s - 1 star edges, never s^2 pairs.
TEST(Lsh, BucketsYieldStarEdges) {
  const size_t k = 8, n = 50;
  std::vector<SigValue> sigs(n * k, 7);  // all identical
  const auto pairs = lsh_candidates(sigs, k, {}, {4, 2}, 1, 2);
  ASSERT_EQ(pairs.size(), n - 1);
  for (size_t i = 0; i < pairs.size(); ++i) EXPECT_EQ(pairs[i], (DocPair{0, static_cast<DocId>(i + 1)}));
}

TEST(Lsh, SkippedDocumentsAreNeverCandidates) {
  const size_t k = 4, n = 3;
  std::vector<SigValue> sigs(n * k, 1);
  const std::vector<uint8_t> skip{1, 0, 0};
  EXPECT_EQ(lsh_candidates(sigs, k, skip, {2, 2}, 1, 1), (std::vector<DocPair>{{1, 2}}));
}

TEST(Lsh, RejectsTooManyRows) {
  std::vector<SigValue> sigs(16, 0);
  EXPECT_THROW(lsh_candidates(sigs, 8, {}, {3, 3}, 1, 1), UsageError);
}

// LSH + exact verification against a brute-force all-pairs oracle, on a generated corpus with
// planted near-duplicates at controlled edit rates.
TEST(Lsh, RecallAndPrecisionAgainstBruteForce) {
  std::mt19937_64 rng(2024);
  std::vector<std::string> docs;
  for (int base = 0; base < 150; ++base) {
    auto words = test::random_words(rng, 120 + rng() % 200);
    docs.push_back(test::join(words));
    const int copies = static_cast<int>(rng() % 4);
    for (int c = 0; c < copies; ++c) {
      auto w = words;
      const double rate = 0.002 * static_cast<double>(rng() % 40);  // 0 .. 8% of words replaced
      for (auto& x : w)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < rate) x = "edit" + std::to_string(rng() % 100000);
      docs.push_back(test::join(w));
    }
  }
  const double t = 0.7;
  const int k = 128;
  Shingler shingler({ShingleKind::Words, 5, kDefaultSeed});
  MinHasher hasher(k, kDefaultSeed);
  const size_t n = docs.size();
  ShingleSets sets(n);
  std::vector<SigValue> sigs(n * k);
  for (size_t i = 0; i < n; ++i) {
    auto s = shingler.shingle_set(docs[i]);
    hasher.sketch(s, std::span<SigValue>(sigs).subspan(i * k, k));
    sets.set(static_cast<DocId>(i), std::move(s));
  }
  // Oracle.
  std::set<std::pair<DocId, DocId>> truth, truth_margin;
  for (DocId a = 0; a < n; ++a)
    for (DocId b = a + 1; b < n; ++b) {
      const double j = jaccard(sets.get(a), sets.get(b));
      if (j >= t) truth.insert({a, b});
      if (j >= t + 0.05) truth_margin.insert({a, b});
    }
  ASSERT_GT(truth.size(), 50u);

  const LshParams p = choose_lsh_params(t, k);
  const auto cand = lsh_candidates(sigs, k, {}, p, kDefaultSeed, 2);
  // Exact verification of the star edges: precision 1.
  const Scorer exact = Scorer::exact(sets);
  const auto verified = verify_pairs(cand, exact, t, 2);
  for (const auto& e : verified) {
    EXPECT_GE(e.similarity, t);
    EXPECT_TRUE(truth.count({e.a, e.b})) << "false positive " << e.a << "," << e.b;
  }
  // Recall of the banding itself: true pairs above t + 0.05 share a band. (Recall of the whole
  // pairs pipeline against the oracle is Pipeline.PairsMatchBruteForceOracle.)
  size_t share = 0, in_margin = 0;
  for (const auto& [a, b] : truth_margin) {
    in_margin += 1;
    share += share_band(std::span<const SigValue>(sigs).subspan(a * k, k),
                        std::span<const SigValue>(sigs).subspan(b * k, k), p);
  }
  EXPECT_GE(static_cast<double>(share) / in_margin, 0.99) << share << "/" << in_margin;
  // Estimate verification: precision stays high at the threshold.
  const Scorer est = Scorer::signature_estimate(sigs, static_cast<size_t>(k));
  const auto est_pairs = verify_pairs(cand, est, t, 1);
  size_t est_true = 0;
  for (const auto& e : est_pairs) est_true += jaccard(sets.get(e.a), sets.get(e.b)) >= t - 0.1;
  EXPECT_GE(static_cast<double>(est_true) / std::max<size_t>(1, est_pairs.size()), 0.95);
}

// Enough documents for the radix sort (>= 4096 per band): the candidates are exactly the star
// edges of the buckets found by grouping equal band rows directly, and the same from band keys
// computed beforehand.
TEST(Lsh, LargeInputsGiveTheStarEdgesOfEqualBands) {
  std::mt19937_64 rng(77);
  const size_t n = 9000, k = 12;
  const LshParams p{4, 3};
  std::vector<SigValue> sigs(n * k);
  for (auto& v : sigs) v = static_cast<SigValue>(rng() % 5);  // few distinct values: many buckets of several
  for (size_t i = 0; i < n; ++i)
    if (i % 10 == 0)  // some documents copy another one's band
      for (size_t r = 0; r < 3; ++r) sigs[i * k + 3 + r] = sigs[(i / 3) * k + 3 + r];
  std::vector<uint8_t> skip(n, 0);
  for (size_t i = 0; i < n; i += 97) skip[i] = 1;
  std::set<std::pair<DocId, DocId>> want;
  for (int band = 0; band < p.bands; ++band) {
    std::map<std::vector<SigValue>, DocId> first;
    for (size_t i = 0; i < n; ++i) {
      if (skip[i]) continue;
      std::vector<SigValue> rows(sigs.begin() + static_cast<ptrdiff_t>(i * k + band * 3),
                                 sigs.begin() + static_cast<ptrdiff_t>(i * k + band * 3 + 3));
      const auto [it, fresh] = first.emplace(rows, static_cast<DocId>(i));
      if (!fresh) want.insert({it->second, static_cast<DocId>(i)});
    }
  }
  const auto got = lsh_candidates(sigs, k, skip, p, 5, 2);
  ASSERT_EQ(got.size(), want.size());
  size_t x = 0;
  for (const auto& [a, b] : want) {
    ASSERT_EQ(got[x].a, a);
    ASSERT_EQ(got[x].b, b);
    ++x;
  }
  std::vector<std::vector<uint64_t>> keys(p.bands, std::vector<uint64_t>(n));
  for (int band = 0; band < p.bands; ++band)
    for (size_t i = 0; i < n; ++i)
      keys[band][i] = signature_band_key(std::span<const SigValue>(sigs).subspan(i * k, k), band, p, 5);
  std::vector<std::span<const uint64_t>> views(keys.begin(), keys.end());
  EXPECT_EQ(lsh_candidates_from_keys(views, skip, 3), got);
}

// Band keys are hashes, sorted by their top 32 bits first: keys that share those bits but differ
// below them must still make separate buckets, each in document order.
TEST(Lsh, KeysSharingTheirTopBitsMakeSeparateBuckets) {
  const size_t n = 6000;
  std::vector<std::vector<uint64_t>> keys(2, std::vector<uint64_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const uint64_t top = uint64_t{i % 5} << 32;
    keys[0][i] = top | ((i / 5) % 3) * 0x9E37;
    keys[1][i] = top | ((i / 5) % 4) * 0x51;
  }
  std::set<std::vector<DocId>> want;
  for (const auto& band : keys) {
    std::map<uint64_t, std::vector<DocId>> by_key;
    for (size_t i = 0; i < n; ++i) by_key[band[i]].push_back(static_cast<DocId>(i));
    for (auto& [key, docs] : by_key) want.insert(docs);
  }
  std::vector<std::span<const uint64_t>> views(keys.begin(), keys.end());
  const LshBuckets got = lsh_buckets_from_keys(views, {}, 2);
  std::set<std::vector<DocId>> seen;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto b = got[i];
    EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
    if (i > 0) {
      EXPECT_LE(got[i - 1][0], b[0]);  // ordered by first document
    }
    EXPECT_TRUE(seen.insert(std::vector<DocId>(b.begin(), b.end())).second) << "bucket " << i << " listed twice";
  }
  EXPECT_EQ(seen, want);
  EXPECT_EQ(got.size(), 15u + 20u);
}

namespace {

// `bands` bands of n random keys.
std::vector<std::vector<uint64_t>> random_band_keys(std::mt19937_64& rng, size_t bands, size_t n) {
  std::vector<std::vector<uint64_t>> keys(bands, std::vector<uint64_t>(n));
  for (auto& band : keys)
    for (auto& k : band) k = rng();
  return keys;
}

// The buckets by brute force: per band, the documents not skipped of each key that two or more
// hold; `largest` gets the most documents of one key.
template <class Bands>
std::set<std::vector<DocId>> buckets_by_key(const Bands& bands, const std::vector<uint8_t>& skip, size_t& largest) {
  std::set<std::vector<DocId>> out;
  largest = 0;
  for (const auto& band : bands) {
    std::map<uint64_t, std::vector<DocId>> by_key;
    for (size_t i = 0; i < band.size(); ++i)
      if (!skip[i]) by_key[band[i]].push_back(static_cast<DocId>(i));
    for (auto& [key, docs] : by_key) {
      largest = std::max(largest, docs.size());
      if (docs.size() > 1) out.insert(docs);
    }
  }
  return out;
}

// The buckets found, each checked to list its documents in order, after the bucket before it by
// first document, and once.
std::set<std::vector<DocId>> checked_buckets(const LshBuckets& got) {
  std::set<std::vector<DocId>> seen;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(std::is_sorted(got[i].begin(), got[i].end()));
    if (i > 0) {
      EXPECT_LE(got[i - 1][0], got[i][0]);  // ordered by first document
    }
    EXPECT_TRUE(seen.insert(std::vector<DocId>(got[i].begin(), got[i].end())).second) << "bucket " << i << " listed twice";
  }
  return seen;
}

}  // namespace

// Narrow keys are the top halves of band keys: their buckets are those of the halves, in
// document order, so that two keys that differ only below their top half (a chance collision of
// the narrow keys) share one; every bucket of the full keys lies in one of them.
TEST(Lsh, NarrowKeysGiveTheBucketsOfTheirTopHalves) {
  std::mt19937_64 rng(92);
  const size_t n = 40000;
  std::vector<std::vector<uint64_t>> keys = random_band_keys(rng, 3, n);
  for (size_t i = 0; i < n; i += 40) keys[0][i] = keys[0][i / 9];  // repeats of earlier keys
  for (size_t i = 1; i < n; i += 300) keys[1][i] = keys[1][i - 1] ^ 5;  // the top half shared by chance
  for (size_t i = 0; i < 500; ++i) keys[2][n - 1 - 2 * i] = 0xABCDEF12345678ull;  // one large bucket
  std::vector<uint8_t> skip(n, 0);
  for (size_t i = 0; i < n; i += 97) skip[i] = 1;
  std::vector<std::vector<uint32_t>> narrow(keys.size(), std::vector<uint32_t>(n));
  for (size_t b = 0; b < keys.size(); ++b)
    for (size_t i = 0; i < n; ++i) narrow[b][i] = static_cast<uint32_t>(keys[b][i] >> 32);
  const std::vector<std::span<const uint32_t>> views(narrow.begin(), narrow.end());
  CandidateStats stats;
  const LshBuckets got = lsh_buckets_from_narrow_keys(views, skip, 2, &stats);
  const std::set<std::vector<DocId>> seen = checked_buckets(got);
  size_t largest = 0;
  EXPECT_EQ(seen, buckets_by_key(narrow, skip, largest));
  EXPECT_EQ(stats.largest_bucket, largest);
  EXPECT_GT(largest, 400u);
  const std::set<std::vector<DocId>> full = buckets_by_key(keys, skip, largest);
  EXPECT_LT(full.size(), seen.size());  // the pairs that share only a top half
  for (const auto& b : full)
    EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [&](const auto& s) { return std::includes(s.begin(), s.end(), b.begin(), b.end()); }));
}

// Narrow keys are sorted in parts by their top bits, each part filtered and sorted in the cache:
// the buckets are the brute force's where nearly every key repeats (a crowded corpus), where one
// key holds 40% of the documents (a part far beyond the cache), where unique and repeated keys
// share their top 16 bits (one part, the filter's bits taken below it), and in bands too short
// to split.
TEST(Lsh, NarrowKeysOfCrowdedAndSkewedBandsGiveTheBruteForceBuckets) {
  std::mt19937_64 rng(93);
  for (const size_t n : {size_t{1}, size_t{3}, size_t{70000}}) {
    std::vector<std::vector<uint32_t>> keys(4, std::vector<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) {
      keys[0][i] = static_cast<uint32_t>((rng() % (n / 8 + 1)) * 0x9E3779B1u);  // clusters of about 8
      keys[1][i] = rng() % 5 < 2 ? 0x12345678u : static_cast<uint32_t>(rng());
      keys[2][i] = 0xBEEF0000u | static_cast<uint32_t>(i % 3 == 0 ? i % 9000 : rng() % 65536);
      keys[3][i] = n == 3 && i > 0 ? 7u : static_cast<uint32_t>(rng());
    }
    std::vector<uint8_t> skip(n, 0);
    for (size_t i = 5; i < n; i += 89) skip[i] = 1;
    const std::vector<std::span<const uint32_t>> views(keys.begin(), keys.end());
    CandidateStats stats;
    const LshBuckets got = lsh_buckets_from_narrow_keys(views, skip, 2, &stats);
    const std::set<std::vector<DocId>> seen = checked_buckets(got);
    size_t largest = 0;
    EXPECT_EQ(seen, buckets_by_key(keys, skip, largest)) << n;
    EXPECT_EQ(stats.largest_bucket, largest) << n;
    EXPECT_EQ(stats.bucket_entries, 4 * (n - std::count(skip.begin(), skip.end(), 1))) << n;
    if (n == 3) {
      EXPECT_TRUE(seen.count({1, 2}));  // band 3
    }
    if (n == 70000) {
      EXPECT_GT(largest, n / 3);
      EXPECT_GT(seen.size(), n / 8);
    }
  }
}

// The bands' buckets are merged in parts, ranges of first documents with about as many buckets
// each, one per thread: any thread count gives the buckets of one, in the same order, where the
// buckets crowd the input's start (clusters, whose first documents are their smallest), where a
// few first documents hold most buckets, and where there are fewer buckets than parts.
TEST(Lsh, BucketsMergedInPartsAreTheOnesOfOneMerge) {
  std::mt19937_64 rng(94);
  for (const size_t n : {size_t{5}, size_t{2000}, size_t{120000}}) {
    std::vector<std::vector<uint32_t>> keys(6, std::vector<uint32_t>(n));
    for (size_t b = 0; b < keys.size(); ++b)
      for (size_t i = 0; i < n; ++i) {
        const size_t cluster = rng() % (n / 6 + 1);  // about 6 documents each, spread over the input
        keys[b][i] = b % 3 == 2 && rng() % 4 == 0 ? static_cast<uint32_t>(i % 7) : static_cast<uint32_t>((cluster * 2654435761u) ^ (b * 0x9E3779B9u));
      }
    std::vector<uint8_t> skip(n, 0);
    for (size_t i = 3; i < n; i += 101) skip[i] = 1;
    const std::vector<std::span<const uint32_t>> views(keys.begin(), keys.end());
    const LshBuckets one = lsh_buckets_from_narrow_keys(views, skip, 1);
    checked_buckets(one);
    if (n == 120000) {
      EXPECT_GT(one.size(), n / 2) << n;
    }
    for (const int threads : {2, 3, 5}) {
      const LshBuckets got = lsh_buckets_from_narrow_keys(views, skip, threads);
      EXPECT_EQ(got.members, one.members) << n << " " << threads;
      EXPECT_EQ(got.offsets, one.offsets) << n << " " << threads;
    }
  }
}

// A band whose keys are nearly all unique (a copy-free corpus) is filtered before its sort
// (keep_repeated_keys): the buckets are still every repeated key's documents, in order, also
// where unique keys share their top bits with each other or with a repeated key; the counts are
// over every entry.
TEST(Lsh, MostlyUniqueKeysGiveTheBucketsOfTheRepeatedOnes) {
  std::mt19937_64 rng(91);
  const size_t n = 50000;
  std::vector<std::vector<uint64_t>> keys = random_band_keys(rng, 3, n);
  for (size_t i = 0; i < n; i += 50) keys[0][i] = keys[0][i / 7];  // repeats of earlier keys
  for (size_t i = 1; i < n; i += 400) keys[1][i] = keys[1][i - 1] ^ 1;  // same top bits, unique
  for (size_t i = 2; i < n; i += 300) keys[1][i] = keys[1][i - 2] = keys[1][i - 1] ^ 2;  // top bits shared with a pair
  for (size_t i = 0; i < 700; ++i) keys[2][n - 1 - i] = 0xABCDEF;  // one large bucket
  std::vector<uint8_t> skip(n, 0);
  for (size_t i = 0; i < n; i += 101) skip[i] = 1;
  size_t largest = 0;
  const std::set<std::vector<DocId>> want = buckets_by_key(keys, skip, largest);
  std::vector<std::span<const uint64_t>> views(keys.begin(), keys.end());
  CandidateStats stats;
  const LshBuckets got = lsh_buckets_from_keys(views, skip, 2, &stats);
  std::set<std::vector<DocId>> seen;
  for (size_t i = 0; i < got.size(); ++i) seen.insert(std::vector<DocId>(got[i].begin(), got[i].end()));
  EXPECT_EQ(seen.size(), got.size());
  EXPECT_EQ(seen, want);
  EXPECT_GT(want.size(), 300u);
  EXPECT_EQ(stats.largest_bucket, largest);
  EXPECT_EQ(stats.bucket_entries, 3 * (n - (n + 100) / 101));
}

// The two passes over keys made twice (internal::for_each_repeated_key) keep every occurrence of
// each repeated key, in order, with their items, and few unique ones (the bit tables have 8 to
// 16 bits per key); keep_repeated_keys, the same in place over an array, keeps the same.
TEST(Lsh, RepeatedKeysAreKeptEveryOneInOrder) {
  std::mt19937_64 rng(17);
  const size_t n = 200000;
  std::vector<uint64_t> keys(n);
  for (auto& k : keys) k = rng();
  for (size_t i = 3; i < n; i += 10) keys[i] = keys[i / 4];  // repeats of earlier keys
  std::map<uint64_t, size_t> count;
  for (const uint64_t k : keys) ++count[k];
  std::vector<size_t> want;
  for (size_t i = 0; i < n; ++i)
    if (count[keys[i]] > 1) want.push_back(i);
  std::vector<uint64_t> words;
  std::vector<size_t> got;
  const auto each = [&](auto&& fn) {
    for (size_t i = 0; i < n; ++i) fn(keys[i], i);
  };
  EXPECT_EQ(internal::for_each_repeated_key<size_t>(n, 27, each, [&](uint64_t k, size_t i) {
    EXPECT_EQ(k, keys[i]);
    got.push_back(i);
  }, words), n);
  std::vector<size_t> repeated;
  std::copy_if(got.begin(), got.end(), std::back_inserter(repeated), [&](size_t i) { return count[keys[i]] > 1; });
  EXPECT_EQ(repeated, want);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  EXPECT_GT(want.size(), 30000u);
  EXPECT_LT(got.size() - want.size(), (n - want.size()) / 8);  // unique keys passing the tables
  std::vector<uint64_t> in_place = keys;
  in_place.resize(internal::keep_repeated_keys(in_place.data(), n, [](uint64_t k) { return k; }, words));
  std::vector<uint64_t> kept;
  for (const size_t i : got) kept.push_back(keys[i]);
  EXPECT_EQ(in_place, kept);
}

// Band keys read from elsewhere a chunk at a time (spilled to disk) give the buckets and counts of
// the same keys in memory: mostly unique keys with repeats, one large bucket, skipped documents,
// sizes below and above the sort's 4,096 entries and the reader's chunk, on 1 and 3 threads, with
// each band's buckets held in memory or in a file until they are merged (a stream of 1 MiB and
// more is let go behind the merge, read again where needed).
TEST(Lsh, KeysReadInChunksGiveTheBucketsOfKeysInMemory) {
  const test::TempDir dir;
  for (const size_t n : {size_t{0}, size_t{1}, size_t{3000}, size_t{70000}, size_t{140001}, size_t{1000000}})
    for (const int threads : {1, 3})
    for (const bool spill : {false, true}) {
      if (n == 1000000 && (threads == 3 || !spill)) continue;  // band 0's stream passes 1 MiB
      std::mt19937_64 rng(n + 7);
      std::vector<std::vector<uint64_t>> keys(4, std::vector<uint64_t>(n));
      for (auto& band : keys)
        for (auto& k : band) k = rng();
      for (size_t i = 0; i < n; i += 9) keys[0][i] = keys[0][i / 3];
      for (size_t i = 0; i < n; i += 5) keys[1][i] = rng() % 50;                 // small buckets
      for (size_t i = 0; i < n / 20; ++i) keys[2][n - 1 - i] = 0x5EED;           // one large bucket
      for (size_t i = 1; i < n; i += 700) keys[3][i] = keys[3][i - 1] ^ 1;       // top bits shared, unique
      std::vector<uint8_t> skip(n, 0);
      for (size_t i = 0; i < n; i += 13) skip[i] = 1;
      std::vector<std::span<const uint64_t>> views(keys.begin(), keys.end());
      CandidateStats want_stats, got_stats;
      const LshBuckets want = lsh_buckets_from_keys(views, skip, threads, &want_stats);
      size_t reads = 0;
      std::mutex mu;
      const LshBuckets got = lsh_buckets_from_reader(n, 4, [&](size_t band, size_t begin, size_t count, uint64_t* out) {
        ASSERT_LE(begin + count, n);
        std::copy(keys[band].begin() + static_cast<ptrdiff_t>(begin), keys[band].begin() + static_cast<ptrdiff_t>(begin + count), out);
        std::lock_guard<std::mutex> lock(mu);
        ++reads;
      }, skip, threads, &got_stats, spill ? dir.path() : std::string());
      EXPECT_EQ(got.members, want.members) << n;
      EXPECT_EQ(got.offsets, want.offsets) << n;
      EXPECT_EQ(got_stats.largest_bucket, want_stats.largest_bucket) << n;
      EXPECT_EQ(got_stats.bucket_entries, want_stats.bucket_entries) << n;
      if (n > 3000) {
        EXPECT_GT(got.size(), 100u);
      }
      EXPECT_EQ(reads, n == 0 ? 0u : 4 * 2 * ((n + 65535) / 65536)) << "each band read twice, in chunks";
    }
}

// The radix sort of candidate pairs gives what std::sort and std::unique give, at every size
// (below 4,096 pairs std::sort itself) and with ids of any width.
TEST(Lsh, PairsSortedAndMadeDistinct) {
  std::mt19937_64 rng(5);
  for (const size_t n : {0, 1, 100, 4095, 4096, 20000}) {
    for (const DocId range : {DocId{3}, DocId{70000}, DocId{4000000000u}}) {
      std::vector<DocPair> v(n);
      for (auto& p : v) p = {static_cast<DocId>(rng() % range), static_cast<DocId>(rng() % range)};
      for (size_t i = 0; i + 7 < n; i += 7) v[i + 3] = v[i];  // repeats
      std::vector<DocPair> want = v;
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      internal::sort_unique_pairs(v);
      EXPECT_EQ(v, want) << n << " pairs of ids below " << range;
    }
  }
}

// A flagged document's rank is the count of flagged documents before it, at every place of a
// 64-document word and across words, as a prefix count gives.
TEST(Lsh, FlagRankCountsTheFlaggedDocumentsBefore) {
  std::mt19937_64 rng(11);
  for (const size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{10000}}) {
    std::vector<uint8_t> flags(n);
    for (auto& f : flags) f = rng() % 3 == 0;
    if (n > 200) std::fill(flags.begin() + 64, flags.begin() + 192, uint8_t{1});  // two full words
    const internal::FlagRank rank(flags);
    const internal::FlagRank by_test(n, [&](size_t d) { return flags[d] != 0; });  // flags told by a function
    uint32_t before = 0;
    for (size_t d = 0; d < n; ++d) {
      ASSERT_EQ(rank(d), before) << n << " " << d;
      ASSERT_EQ(by_test(d), before) << n << " " << d;
      before += flags[d];
    }
    EXPECT_EQ(rank.count(), before);
    EXPECT_EQ(by_test.count(), before);
  }
  EXPECT_EQ(internal::FlagRank().count(), 0u);
}
