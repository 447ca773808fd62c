#include "internal/testing.h"
#include "neardup/allpairs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/shingle.h"
#include "neardup/verify.h"

using namespace neardup;

namespace {

// Fingerprints of planted families: each family shares a base set, members replace a random
// fraction of it; some values are frequent across families (boilerplate), some documents are
// short, empty, or exact copies.
Fingerprints clustered(uint64_t seed, size_t families, int n) {
  std::mt19937_64 rng(seed);
  std::vector<ShingleHash> boilerplate(40);
  for (auto& x : boilerplate) x = rng();
  Fingerprints f;
  f.size = n;
  for (size_t fam = 0; fam < families; ++fam) {
    std::vector<ShingleHash> base(rng() % 3 == 0 ? rng() % 40 : 50 + rng() % 600);
    for (auto& x : base) x = rng() % 7 == 0 ? boilerplate[rng() % boilerplate.size()] : rng();
    const size_t members = 1 + rng() % 5;
    for (size_t m = 0; m < members; ++m) {
      auto doc = base;
      const double change = m == 0 ? 0.0 : 0.05 * static_cast<double>(rng() % 12);
      for (auto& x : doc)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < change) x = rng();
      f.push_back(bottomk_fingerprint(doc, n));
    }
  }
  return f;
}

Fingerprints real_fingerprints(const std::string& path, int k, int n, size_t limit) {
  io::InputSet in({path}, io::InputFormat::Auto);
  io::RecordReader r(in, {});
  io::Record rec;
  Shingler sh({ShingleKind::Words, k, kDefaultSeed});
  std::vector<ShingleHash> s;
  Fingerprints f;
  f.size = n;
  while (f.count() < limit && r.next(rec)) {
    sh.shingles(rec.text, s);
    f.push_back(bottomk_fingerprint(s, n));
  }
  return f;
}

}  // namespace

TEST(Join, EqualsBruteForceOnPlantedFamilies) {
  for (uint64_t seed : {1, 2, 3}) {
    const Fingerprints f = clustered(seed, 250, seed == 3 ? 16 : 128);
    for (double alpha : {0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0}) {
      const auto want = fingerprint_join_brute_force(f, alpha, 2);
      JoinStats st;
      const auto got = fingerprint_join(f, alpha, 2, &st);
      EXPECT_EQ(got, want) << "seed " << seed << " alpha " << alpha;
      EXPECT_EQ(st.results, got.size());
      if (alpha <= 0.8) {
        EXPECT_FALSE(want.empty());
      }
      // The filters do prune: far fewer candidates than pairs.
      EXPECT_LT(st.candidates, f.count() * (f.count() - 1) / 2 / 4);
    }
  }
}

// Fingerprints made directly (not bottom-k): values over the whole 32-bit range, so every bucket
// of the join's value sort is used, lengths from 1 to 300, and families that share most values.
TEST(Join, EqualsBruteForceWithValuesAcrossTheRange) {
  std::mt19937 rng(17);
  Fingerprints f;
  f.size = 300;
  for (int fam = 0; fam < 150; ++fam) {
    std::vector<SigValue> base(1 + rng() % 300);
    for (auto& v : base) v = static_cast<SigValue>(rng());
    for (int m = 0, members = 1 + static_cast<int>(rng() % 4); m < members; ++m) {
      std::vector<SigValue> doc = base;
      for (auto& v : doc)
        if (rng() % 8 < static_cast<unsigned>(m)) v = static_cast<SigValue>(rng());
      if (m == 3) doc.resize(doc.size() * 3 / 4);  // a shorter member
      std::sort(doc.begin(), doc.end());
      doc.erase(std::unique(doc.begin(), doc.end()), doc.end());
      f.push_back(doc);
    }
  }
  for (double alpha : {0.25, 0.5, 0.75, 0.95})
    for (int threads : {1, 3}) {
      const auto want = fingerprint_join_brute_force(f, alpha, 1);
      EXPECT_EQ(fingerprint_join(f, alpha, threads), want) << alpha << " " << threads;
      EXPECT_FALSE(want.empty());
    }
}

TEST(Join, IdenticalForAnyThreadCount) {
  const Fingerprints f = clustered(9, 200, 64);
  const auto one = fingerprint_join(f, 0.4, 1);
  EXPECT_EQ(fingerprint_join(f, 0.4, 2), one);
  EXPECT_EQ(fingerprint_join(f, 0.4, 5), one);
}

TEST(Join, EqualsBruteForceOnRealDocuments) {
  const Fingerprints f = real_fingerprints(NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst", 3, 128, 2500);
  ASSERT_EQ(f.count(), 2500u);
  for (double alpha : {0.2, 0.5, 0.8}) {
    const auto want = fingerprint_join_brute_force(f, alpha, 2);
    EXPECT_EQ(fingerprint_join(f, alpha, 2), want) << alpha;
    EXPECT_FALSE(want.empty());
  }
}

TEST(Join, EdgeCases) {
  Fingerprints f;
  EXPECT_TRUE(fingerprint_join(f, 0.5, 2).empty());
  f.push_back(std::vector<SigValue>{});
  f.push_back(std::vector<SigValue>{});
  f.push_back(std::vector<SigValue>{1, 2, 3});
  f.push_back(std::vector<SigValue>{1, 2, 3});
  f.push_back(std::vector<SigValue>{3});
  const auto got = fingerprint_join(f, 0.3, 2);
  ASSERT_EQ(got, fingerprint_join_brute_force(f, 0.3, 1));
  ASSERT_EQ(got.size(), 3u);  // (2,3) = 1, (2,4) = (3,4) = 1/3; empty documents pair with nothing
  EXPECT_EQ(got[0], (ScoredPair{2, 3, 1.0}));
  EXPECT_THROW(fingerprint_join(f, 0.0, 1), UsageError);
  // Long identical fingerprints at the largest threshold accepted (1 + epsilon).
  Fingerprints longf;
  std::vector<SigValue> big(5000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<SigValue>(i * 7919);
  longf.push_back(big);
  longf.push_back(big);
  EXPECT_EQ(fingerprint_join(longf, 1.0 + kSimilarityEpsilon, 1), (std::vector<ScoredPair>{{0, 1, 1.0}}));
}

TEST(Join, PairsAboveEstimateThresholdMissNothing) {
  const Fingerprints f = clustered(4, 300, 32);
  for (double t : {0.3, 0.6, 0.9}) {
    std::vector<ScoredPair> want;
    for (DocId a = 0; a < f.count(); ++a)
      for (DocId b = a + 1; b < f.count(); ++b)
        if (const double e = bottomk_estimate(f[a], f[b], f.size); e + kSimilarityEpsilon >= t) want.push_back({a, b, e});
    EXPECT_EQ(pairs_above(f, t, PairScore::BottomKEstimate, 2), want) << t;
    EXPECT_EQ(pairs_above(f, t, PairScore::FingerprintJaccard, 2), fingerprint_join_brute_force(f, t, 1)) << t;
  }
}

TEST(TopPairs, EqualsBruteForceTopM) {
  for (uint64_t seed : {5, 6}) {
    const Fingerprints f = clustered(seed, 150, 64);
    for (PairScore score : {PairScore::FingerprintJaccard, PairScore::BottomKEstimate})
      for (size_t m : {1, 7, 50, 400, 100000}) {
        const auto want = top_pairs_brute_force(f, m, score);
        EXPECT_EQ(top_pairs(f, m, score, 2), want) << "m=" << m;
        EXPECT_EQ(top_pairs(f, m, score, 3), want) << "m=" << m;
        EXPECT_LE(want.size(), m);
        if (m >= 100000) {
          EXPECT_LT(want.size(), m);  // only pairs that share a value, never padded
        }
        for (size_t i = 1; i < want.size(); ++i) EXPECT_TRUE(better_pair(want[i - 1], want[i]));
      }
  }
}

TEST(TopPairs, TiesAreBrokenByDocumentOrder) {
  Fingerprints f;
  f.size = 8;
  for (int i = 0; i < 6; ++i) f.push_back(std::vector<SigValue>{10, 20, 30});  // 15 pairs at 1.0
  const auto top = top_pairs(f, 4, PairScore::FingerprintJaccard, 2);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0], (ScoredPair{0, 1, 1.0}));
  EXPECT_EQ(top[1], (ScoredPair{0, 2, 1.0}));
  EXPECT_EQ(top[3], (ScoredPair{0, 4, 1.0}));
  EXPECT_TRUE(top_pairs(f, 0, PairScore::FingerprintJaccard, 2).empty());
}
