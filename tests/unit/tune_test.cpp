#include "neardup/tune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "neardup/error.h"
#include "neardup/minhash.h"

using namespace neardup;

namespace {

// The rule of tune.h written out as one sort key over every (b, r), independently of the
// tuner's pairwise comparison.
LshParams brute_force_choice(int P, const LshTarget& t, bool* met) {
  std::vector<std::tuple<int, double, double, int, int, int>> keys;  // recall-missed, -P(high) if missed, P(low), b*r, b, r
  for (int r = 1; r <= P; ++r)
    for (int b = 1; b * r <= P; ++b) {
      const double lo = lsh_probability(t.low, b, r), hi = lsh_probability(t.high, b, r);
      const bool recall = hi >= t.high_min;
      keys.emplace_back(recall ? 0 : 1, recall ? 0.0 : -hi, lo, b * r, b, r);
    }
  const auto& k = *std::min_element(keys.begin(), keys.end());
  *met = std::get<0>(k) == 0 && std::get<2>(k) <= t.low_max;
  return {std::get<4>(k), std::get<5>(k)};
}

bool any_meets(int P, const LshTarget& t) {
  for (int r = 1; r <= P; ++r)
    for (int b = 1; b * r <= P; ++b)
      if (lsh_probability(t.low, b, r) <= t.low_max && lsh_probability(t.high, b, r) >= t.high_min) return true;
  return false;
}

LshTarget random_target(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  LshTarget t;
  t.low = 0.02 + 0.6 * u(rng);
  t.high = std::min(1.0, t.low + 0.05 + 0.4 * u(rng));
  t.low_max = std::pow(10.0, -1 - 3 * u(rng));     // 1e-4 .. 0.1
  t.high_min = 1.0 - std::pow(10.0, -1 - 3 * u(rng));  // 0.9 .. 0.9999
  return t;
}

}  // namespace

TEST(Tune, EqualsBruteForceOverEveryBandsAndRows) {
  std::mt19937_64 rng(3);
  int met = 0, not_met = 0;
  for (int round = 0; round < 150; ++round) {
    const LshTarget t = random_target(rng);
    const int P = 8 + static_cast<int>(rng() % 250);
    bool want_met = false;
    const LshParams want = brute_force_choice(P, t, &want_met);
    const LshChoice c = lsh_tune(P, t);
    ASSERT_EQ(c.params, want) << "P " << P << " low " << t.low << " high " << t.high;
    ASSERT_EQ(c.met, want_met);
    ASSERT_EQ(c.met, any_meets(P, t)) << "a target that some (b, r) meets must be met by the choice";
    // The root finder's crossings say the same thing as the two evaluations.
    EXPECT_NEAR(lsh_probability(c.s_low, c.params.bands, c.params.rows), t.low_max, 1e-6);
    EXPECT_NEAR(lsh_probability(c.s_high, c.params.bands, c.params.rows), t.high_min, 1e-6);
    EXPECT_EQ(c.s_low >= t.low - 1e-9 && c.s_high <= t.high + 1e-9, c.met);
    (c.met ? met : not_met)++;
  }
  EXPECT_GT(met, 10);  // both outcomes are exercised
  EXPECT_GT(not_met, 10);
}

TEST(Tune, TheWorkedExampleOfThePost) {
  // The worked example of E. Ross, "Searching for Near Duplicates with Minhash" (2020): < 0.1% at
  // 0.05 and > 99% at 0.5 with 128 permutations. Three rows are needed for the recall; 35 bands are
  // the fewest that reach it (the post's 42 x 3 passes 0.5% at 0.05).
  const LshTarget t{0.05, 0.001, 0.5, 0.99};
  const LshChoice c = lsh_tune(128, t);
  EXPECT_EQ(c.params, (LshParams{35, 3}));
  EXPECT_FALSE(c.met);
  EXPECT_EQ(lsh_min_num_perm(t), 288);  // 72 x 4
  EXPECT_TRUE(lsh_tune(288, t).met);
  EXPECT_FALSE(lsh_tune(287, t).met);
}

TEST(Tune, FewestPermutationsEqualsBruteForce) {
  std::mt19937_64 rng(4);
  for (int round = 0; round < 25; ++round) {
    const LshTarget t = random_target(rng);
    const int got = lsh_min_num_perm(t, 200);
    int want = 0;
    for (int P = 1; P <= 200 && !want; ++P)
      if (any_meets(P, t)) want = P;
    EXPECT_EQ(got, want) << "low " << t.low << ":" << t.low_max << " high " << t.high << ":" << t.high_min;
  }
}

TEST(Tune, ThresholdRuleOfPairsAndDedup) {
  // docs/params.md's table; choose_lsh_params is this rule.
  EXPECT_EQ(lsh_tune_threshold(0.5, 128).params, (LshParams{42, 3}));
  EXPECT_EQ(lsh_tune_threshold(0.7, 128).params, (LshParams{32, 4}));
  EXPECT_EQ(lsh_tune_threshold(0.8, 128).params, (LshParams{21, 6}));
  EXPECT_EQ(lsh_tune_threshold(0.9, 128).params, (LshParams{12, 10}));
  for (double t = 0.05; t <= 1.0; t += 0.05)
    for (int P : {16, 64, 128, 256}) {
      const LshParams p = lsh_tune_threshold(t, P).params;
      EXPECT_EQ(choose_lsh_params(t, P), p);
      EXPECT_EQ(p.bands, P / p.rows);
      if (p.rows > 1) {
        EXPECT_GE(lsh_probability(t, p.bands, p.rows), 0.99);
      }
      if (p.rows < P) {
        EXPECT_LT(lsh_probability(t, P / (p.rows + 1), p.rows + 1), 0.99) << "a larger r works";
      }
    }
}

TEST(Tune, RejectsBadTargets) {
  EXPECT_THROW(lsh_tune(128, LshTarget{0.5, 0.01, 0.4, 0.99}), UsageError);
  EXPECT_THROW(lsh_tune(128, LshTarget{0.1, 0.0, 0.5, 0.99}), UsageError);
  EXPECT_THROW(lsh_tune(128, LshTarget{0.1, 0.01, 0.5, 1.0}), UsageError);
  EXPECT_THROW(lsh_tune(0, LshTarget{0.1, 0.01, 0.5, 0.99}), UsageError);
  EXPECT_THROW(lsh_similarity_at(0.0, 4, 4), UsageError);
}

TEST(Tune, SCurveMatchesMonteCarloOfBandedMinHash) {
  // Pairs of sets of Jaccard exactly s, sketched with neardup's MinHash under fresh seeds: the
  // fraction that share a band is P(s) within 4.5 standard errors.
  std::mt19937_64 rng(5);
  const int trials = 1500;
  for (const auto& [b, r] : std::vector<std::pair<int, int>>{{20, 5}, {8, 4}, {42, 3}})
    for (double s : {0.2, 0.4, 0.5, 0.6, 0.8}) {
      const int uni = 200, inter = static_cast<int>(std::lround(s * uni));
      const double js = static_cast<double>(inter) / uni;
      int hits = 0;
      for (int trial = 0; trial < trials; ++trial) {
        std::vector<uint64_t> a, c;
        for (int i = 0; i < inter; ++i) {
          const uint64_t x = rng();
          a.push_back(x);
          c.push_back(x);
        }
        for (int i = inter; i < uni; ++i) (i % 2 ? a : c).push_back(rng());
        MinHasher h(b * r, rng());
        hits += share_band(h.sketch(a), h.sketch(c), {b, r});
      }
      const double p = lsh_probability(js, b, r), got = static_cast<double>(hits) / trials;
      const double se = std::sqrt(std::max(p * (1 - p), 1e-4) / trials);
      EXPECT_NEAR(got, p, 4.5 * se) << b << "x" << r << " s " << js;
    }
}

TEST(Tune, SamplePredictionsFollowTheHistogram) {
  // Sets with known pairwise similarities: copies, half overlaps and disjoint sets.
  std::vector<std::vector<uint64_t>> sets;
  for (uint64_t g = 0; g < 4; ++g) {
    std::vector<uint64_t> base;
    for (uint64_t i = 0; i < 100; ++i) base.push_back(g * 1000 + i);
    sets.push_back(base);
    sets.push_back(base);  // a copy: s = 1
    std::vector<uint64_t> half(base.begin(), base.begin() + 50);
    for (uint64_t i = 0; i < 50; ++i) half.push_back(g * 1000 + 500 + i);
    sets.push_back(half);  // s = 50/150 with each of the two
  }
  SimilaritySample s;
  s.add_all_pairs(sets, 2);
  s.corpus_docs = 1200;  // 100 times the sample
  EXPECT_EQ(s.sample_pairs(), 66u);
  EXPECT_EQ(s.pairs_at_least(1.0), 4u);
  EXPECT_EQ(s.pairs_at_least(0.3), 12u);
  EXPECT_EQ(s.pairs_at_least(0.34), 4u);
  const LshParams p{20, 5};
  EXPECT_EQ(s.disjoint, 54u);  // the other pairs share nothing: never candidates
  const double pthird = lsh_probability(50.0 / 150, 20, 5), pone = lsh_probability(1.0, 20, 5);
  const double mean = (4 * pone + 8 * pthird) / 66;
  EXPECT_NEAR(s.predicted_candidates(p), mean * 1200.0 * 1199 / 2, 1e-6 * mean * 1200 * 1199);
  EXPECT_NEAR(s.expected_recall(p, 0.3), (4 * pone + 8 * pthird) / 12, 1e-9);
  EXPECT_LT(s.expected_recall(p, 0.3), s.expected_recall({40, 5}, 0.3));  // more bands, more recall
  SimilaritySample none;
  none.add_all_pairs(std::vector<std::vector<uint64_t>>{{1}, {2}}, 1);
  EXPECT_LT(none.expected_recall(p, 0.5), 0.0);  // no sampled pair above: unknown
}
