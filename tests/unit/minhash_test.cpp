#include "neardup/minhash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "internal/hash.h"
#include "neardup/error.h"
#include "test_util.h"

using namespace neardup;
using neardup::test::random_set;

// The signature is exactly the documented function of the seed and the set.
TEST(MinHash, MatchesItsSpecification) {
  const int k = 16;
  MinHasher h(k, 99);
  std::mt19937_64 rng(1);
  const auto s = random_set(rng, 50);
  uint64_t state = 99;
  std::vector<SigValue> expect(k);
  for (int i = 0; i < k; ++i) {
    const uint64_t a = internal::splitmix64(state) | 1;
    uint32_t m = 0xFFFFFFFFu;
    for (uint64_t x : s) {
      const uint32_t key = static_cast<uint32_t>(x ^ (x >> 32));
      m = std::min(m, static_cast<uint32_t>((a * key) >> 32));
    }
    expect[i] = m;
  }
  for (Isa isa : test::available_isas()) {
    std::vector<SigValue> got(k);
    h.sketch(s, got, isa);
    EXPECT_EQ(got, expect) << isa_name(isa);
  }
}

// Computed independently from the definition by tools/known_answers/known_answers.py.
TEST(MinHash, KnownAnswer) {
  MinHasher h(4, kDefaultSeed);
  const std::vector<ShingleHash> s{1, 2, 3};
  EXPECT_EQ(h.sketch(s), (std::vector<SigValue>{0x25C10CBDu, 0x09376C5Cu, 0x530076C9u, 0x1B103A9Au}));
}

TEST(MinHash, EmptySetIsAllOnes) {
  MinHasher h(128, 5);
  const auto sig = h.sketch(std::span<const ShingleHash>{});
  for (SigValue v : sig) EXPECT_EQ(v, kEmptySigValue);
}

// Every SIMD variant equals the scalar reference bit for bit, for many lengths (block tails).
TEST(MinHash, SimdMatchesScalarBitForBit) {
  std::mt19937_64 rng(7);
  for (int k : {1, 3, 4, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 128, 200, 256}) {
    MinHasher h(k, rng());
    for (size_t n : {0, 1, 2, 17, 500}) {
      const auto s = random_set(rng, n);
      std::vector<SigValue> ref(k), got(k);
      h.sketch(s, ref, Isa::Scalar);
      for (Isa isa : test::available_isas()) {
        h.sketch(s, got, isa);
        ASSERT_EQ(got, ref) << isa_name(isa) << " k=" << k << " n=" << n;
      }
    }
  }
}

// The fraction of equal values estimates Jaccard without bias: over many independent seeds, the
// mean estimate is within 4 standard errors of the true similarity.
TEST(MinHash, EstimatesJaccardWithoutBias) {
  std::mt19937_64 rng(11);
  const int k = 128, trials = 60;
  for (double target : {0.2, 0.5, 0.8, 0.95}) {
    // |A| = |B| = 400, |A ∩ B| = m: J = m / (800 - m).
    const int m = static_cast<int>(std::lround(800 * target / (1 + target)));
    const double j = static_cast<double>(m) / (800 - m);
    double sum = 0;
    for (int t = 0; t < trials; ++t) {
      auto common = random_set(rng, m);
      auto a = common, b = common;
      for (int i = m; i < 400; ++i) a.push_back(rng()), b.push_back(rng());
      MinHasher h(k, rng());
      sum += estimate_jaccard(h.sketch(a), h.sketch(b));
    }
    const double mean = sum / trials;
    const double se = std::sqrt(j * (1 - j) / (k * trials));
    EXPECT_NEAR(mean, j, 4 * se + 1e-9) << "J=" << j;
  }
}

TEST(MinHash, RejectsBadSizes) {
  EXPECT_THROW(MinHasher(0, 1), UsageError);
  EXPECT_THROW(MinHasher(5000, 1), UsageError);
}
