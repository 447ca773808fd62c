#include "internal/testing.h"
#include "neardup/oph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "neardup/error.h"
#include "test_util.h"
#include "neardup/minhash.h"

using namespace neardup;
using neardup::test::random_set;

namespace {

// The documented binning, written out: bin (hi32 * K) >> 32, value min(lo32, 0xFFFFFFFE).
std::vector<SigValue> bins_by_definition(const std::vector<ShingleHash>& s, int k) {
  std::vector<SigValue> out(static_cast<size_t>(k), kEmptySigValue);
  for (const ShingleHash x : s) {
    const size_t j = static_cast<size_t>(((x >> 32) * static_cast<uint64_t>(k)) >> 32);
    out[j] = std::min(out[j], std::min(static_cast<SigValue>(x), SigValue{0xFFFFFFFE}));
  }
  return out;
}

}  // namespace

// Native bins hold the minimum of their shingles; every other bin holds the value of a native
// bin; an empty set gives the all-0xFFFFFFFF signature, a one-shingle set K copies of its value.
TEST(Oph, BinsFollowTheDefinitionAndEmptyBinsCopyNativeOnes) {
  std::mt19937_64 rng(3);
  for (const int k : {1, 2, 3, 7, 64, 100, 128, 256}) {
    OphHasher h(k, 42);
    for (const size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, size_t{40}, size_t{300}, size_t{3000}}) {
      auto s = random_set(rng, n);
      if (n > 2) s.push_back(s[0]);  // repeats change nothing
      const auto sig = h.sketch(s);
      const auto native = bins_by_definition(s, k);
      std::set<SigValue> native_values;
      for (const SigValue v : native)
        if (v != kEmptySigValue) native_values.insert(v);
      EXPECT_EQ(h.empty_bins(s), std::count(native.begin(), native.end(), kEmptySigValue));
      for (int j = 0; j < k; ++j) {
        if (n == 0) {
          ASSERT_EQ(sig[j], kEmptySigValue);
        } else if (native[j] != kEmptySigValue) {
          ASSERT_EQ(sig[j], native[j]) << "k=" << k << " n=" << n << " bin " << j;
        } else {
          ASSERT_TRUE(native_values.count(sig[j])) << "k=" << k << " n=" << n << " bin " << j;
        }
      }
      if (n == 1) {
        EXPECT_EQ(std::count(sig.begin(), sig.end(), sig[0]), k);
      }
    }
  }
}

// The pull and the push compute the same assignment, bit for bit, for every density; so does
// Auto with every kernel of the CPU (the vectorised pull of up to 128 bins with AVX512-VBMI,
// which hands the bins without a native pre-image in its first 256 rounds to the scalar pull:
// with 2 native bins of 128, about 2 bins a document).
TEST(Oph, PullAndPushDensifyIdentically) {
  std::mt19937_64 rng(5);
  for (const int k : {2, 3, 7, 64, 100, 128, 256, 1000}) {
    OphHasher h(k, rng());
    std::vector<SigValue> pull(static_cast<size_t>(k)), push(pull.size()), any(pull.size());
    for (int trial = 0; trial < 100; ++trial) {
      // From one shingle to 4K: all-but-one bin empty through to dense.
      const size_t n = 1 + rng() % (4 * static_cast<size_t>(k));
      const auto s = random_set(rng, trial < 40 ? 2 + static_cast<size_t>(trial % 10) : n);
      oph_sketch_densified(h, s, pull, Densify::Pull);
      oph_sketch_densified(h, s, push, Densify::Push);
      ASSERT_EQ(pull, push) << "k=" << k << " n=" << s.size();
      for (const Isa isa : test::available_isas()) {
        force_isa(isa);
        oph_sketch_densified(h, s, any, Densify::Auto);
        reset_isa();
        ASSERT_EQ(pull, any) << "k=" << k << " n=" << s.size() << " " << isa_name(isa);
      }
    }
  }
}

// Collisions estimate Jaccard without bias, for dense documents and for documents with fewer
// shingles than bins: over independent sets, the mean estimate is within 4.5 standard errors
// (from the observed spread) of the true similarity. For dense documents the variance is at
// most that of k-permutation MinHash, J(1 - J) / K, up to sampling error.
TEST(Oph, EstimatesJaccardWithoutBiasAtEverySize) {
  std::mt19937_64 rng(11);
  const int k = 128, trials = 400;
  OphHasher h(k, 99);
  for (const int n : {1, 3, 10, 40, 150, 1000}) {
    for (const double target : {0.2, 0.5, 0.8}) {
      // |A| = |B| = n, |A ∩ B| = m: J = m / (2n - m).
      const int m = static_cast<int>(std::lround(2 * n * target / (1 + target)));
      const double j = static_cast<double>(m) / (2 * n - m);
      double sum = 0, sum2 = 0;
      for (int t = 0; t < trials; ++t) {
        auto a = random_set(rng, static_cast<size_t>(m)), b = a;
        for (int i = m; i < n; ++i) a.push_back(rng()), b.push_back(rng());
        const double e = estimate_jaccard(h.sketch(a), h.sketch(b));
        sum += e;
        sum2 += e * e;
      }
      const double mean = sum / trials;
      const double var = std::max(0.0, sum2 / trials - mean * mean);
      const double se = std::sqrt(var / trials);
      EXPECT_NEAR(mean, j, 4.5 * se + 1e-9) << "n=" << n << " J=" << j;
      if (n >= 1000) {
        EXPECT_LE(var, 1.5 * j * (1 - j) / k) << "n=" << n << " J=" << j;
      }
    }
  }
}

TEST(Oph, RejectsBadSizes) {
  EXPECT_THROW(OphHasher(0, 1), UsageError);
  EXPECT_THROW(OphHasher(4097, 1), UsageError);
}
