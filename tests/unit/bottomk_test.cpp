#include "internal/testing.h"
#include "neardup/bottomk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kernels/dispatch.h"
#include "kernels/jaccard_kernels.h"
#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/shingle.h"
#include "test_util.h"

using namespace neardup;

namespace {

// The definition: sort + unique + first N of the values.
std::vector<SigValue> reference_fingerprint(std::span<const ShingleHash> s, int n) {
  std::vector<SigValue> v;
  for (ShingleHash h : s) v.push_back(bottomk_value(h));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.size() > static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v;
}

std::vector<SigValue> with_heap_table(std::span<const ShingleHash> s, int n) {
  BottomKHeapTable h(n);
  h.add(s);
  std::vector<SigValue> out;
  h.finish(out);
  return out;
}

// Shingle streams with repeats, tiny values and the extreme values 0 and 0xFFFFFFFF.
std::vector<ShingleHash> random_stream(std::mt19937_64& rng, size_t len, size_t distinct) {
  std::vector<ShingleHash> pool(std::max<size_t>(distinct, 1));
  for (auto& x : pool) x = rng();
  if (rng() % 3 == 0) pool[0] = 0xFFFFFFFF00000000ull | (rng() & 0xFFFFFFFF);
  if (rng() % 3 == 0) pool.back() = rng() & 0xFFFFFFFF;  // value 0
  std::vector<ShingleHash> s(len);
  for (auto& x : s) x = pool[rng() % pool.size()];
  return s;
}

// Two fingerprints that share about `overlap` of their values.
std::pair<std::vector<SigValue>, std::vector<SigValue>> random_pair(std::mt19937_64& rng, size_t la, size_t lb,
                                                                    double overlap) {
  std::vector<ShingleHash> a, b;
  for (size_t i = 0; i < std::max(la, lb); ++i) {
    const ShingleHash x = rng();
    const bool shared = std::uniform_real_distribution<double>(0, 1)(rng) < overlap;
    if (i < la) a.push_back(x);
    if (i < lb) b.push_back(shared ? x : rng());
  }
  return {reference_fingerprint(a, 1 << 20), reference_fingerprint(b, 1 << 20)};
}

}  // namespace

TEST(BottomK, SelectorAndHeapTableEqualSortUniqueFirstN) {
  std::mt19937_64 rng(7);
  for (int n : {1, 2, 3, 16, 64, 128, 300}) {
    for (int trial = 0; trial < 40; ++trial) {
      const size_t len = rng() % 5000;
      const size_t distinct = 1 + rng() % (trial % 2 ? 50 : 6000);
      const auto s = random_stream(rng, len, distinct);
      const auto want = reference_fingerprint(s, n);
      EXPECT_EQ(bottomk_fingerprint(s, n), want) << "n=" << n << " len=" << len;
      EXPECT_EQ(with_heap_table(s, n), want) << "n=" << n << " len=" << len;
    }
  }
}

TEST(BottomK, ExtremeValues) {
  const std::vector<ShingleHash> s = {0xFFFFFFFF00000000ull, 5ull << 32, 0xFFFFFFFF12345678ull, 0, 5ull << 32};
  for (int n : {1, 2, 3, 4}) {
    EXPECT_EQ(bottomk_fingerprint(s, n), reference_fingerprint(s, n)) << n;
    EXPECT_EQ(with_heap_table(s, n), reference_fingerprint(s, n)) << n;
  }
  EXPECT_EQ(bottomk_fingerprint(s, 5), (std::vector<SigValue>{0, 5, 0xFFFFFFFFu}));
  EXPECT_TRUE(bottomk_fingerprint({}, 8).empty());
  EXPECT_THROW(BottomKSelector(0), UsageError);
}

TEST(BottomK, SelectorIsReusableAfterFinish) {
  std::mt19937_64 rng(3);
  BottomKSelector sel(32);
  BottomKHeapTable heap(32);
  std::vector<SigValue> a, b;
  for (int i = 0; i < 20; ++i) {
    const auto s = random_stream(rng, rng() % 3000, 1 + rng() % 2000);
    sel.add(s);
    sel.finish(a);
    heap.add(s);
    heap.finish(b);
    EXPECT_EQ(a, reference_fingerprint(s, 32));
    EXPECT_EQ(b, a);
  }
}

TEST(BottomK, RealDocumentsMatchDefinition) {
  io::InputSet in({NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst"}, io::InputFormat::Auto);
  io::RecordReader r(in, {});
  io::Record rec;
  Shingler sh({ShingleKind::Words, 3, kDefaultSeed});
  std::vector<ShingleHash> s;
  int docs = 0;
  while (r.next(rec) && docs < 300) {
    sh.shingles(rec.text, s);
    for (int n : {64, 128}) {
      EXPECT_EQ(bottomk_fingerprint(s, n), reference_fingerprint(s, n));
      EXPECT_EQ(with_heap_table(s, n), reference_fingerprint(s, n));
    }
    ++docs;
  }
  EXPECT_EQ(docs, 300);
}

// Every early-abort variant equals the classical merge when it does not abort, and aborts only
// when the classical value is below alpha; every ISA gives the same answer.
TEST(BottomK, JaccardVariantsAgreeWithClassical) {
  std::mt19937_64 rng(11);
  int aborted = 0, kept = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t la = rng() % 200, lb = trial % 5 == 0 ? rng() % 200 : la + rng() % 9;
    const auto [a, b] = random_pair(rng, la, lb, std::uniform_real_distribution<double>(0, 1)(rng));
    const double classical = fingerprint_jaccard(a, b);
    for (double alpha : {0.05, 0.2, 0.5, 0.8, 0.95, 1.0}) {
      const double fast = fingerprint_jaccard_abort(a, b, alpha);
      if (fast == kAborted) {
        EXPECT_LT(classical, alpha);
        ++aborted;
      } else {
        EXPECT_EQ(fast, classical);
        ++kept;
      }
      EXPECT_EQ(fast == kAborted, classical < alpha);
      for (Isa isa : test::available_isas()) {
        EXPECT_EQ(fingerprint_jaccard_fast(a, b, alpha, isa), fast) << isa_name(isa);
      }
    }
  }
  EXPECT_GT(aborted, 1000);
  EXPECT_GT(kept, 1000);
}

// The SIMD block walks return exactly what their scalar twins return, aborts included.
TEST(BottomK, SimdKernelsEqualScalarTwinsBitForBit) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    const auto pair = random_pair(rng, rng() % 260, rng() % 260, std::uniform_real_distribution<double>(0, 1)(rng));
    const auto& a = pair.first;  // named, not a structured binding: lambdas below capture them
    const auto& b = pair.second;
    const long smax = static_cast<long>(rng() % 300);
    const long s8 = internal::jaccard_block_scalar(a.data(), a.size(), b.data(), b.size(), smax);
    const long s16 = internal::jaccard_block_scalar16(a.data(), a.size(), b.data(), b.size(), smax);
    const long big = 1 << 20;  // never aborts: the count of common values
    const auto all = [&](auto* fn) { return fn(a.data(), a.size(), b.data(), b.size(), big); };
    EXPECT_EQ(all(internal::jaccard_block_scalar), all(internal::jaccard_block_scalar16));
    if (detected_isa() >= Isa::Avx2) {
      EXPECT_EQ(internal::jaccard_block_avx2(a.data(), a.size(), b.data(), b.size(), smax), s8);
    }
    if (detected_isa() >= Isa::Avx512) {
      EXPECT_EQ(internal::jaccard_block_avx512(a.data(), a.size(), b.data(), b.size(), smax), s16);
    }
    std::vector<SigValue> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    EXPECT_EQ(all(internal::jaccard_block_scalar), static_cast<long>(both.size()));
  }
}

TEST(BottomK, StandardEstimatorMatchesDefinition) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 64);
    const auto [fa, fb] = random_pair(rng, rng() % 100, rng() % 100, std::uniform_real_distribution<double>(0, 1)(rng));
    const std::vector<SigValue> a(fa.begin(), fa.begin() + std::min<size_t>(fa.size(), n));
    const std::vector<SigValue> b(fb.begin(), fb.begin() + std::min<size_t>(fb.size(), n));
    std::vector<SigValue> uni;
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(uni));
    if (uni.size() > static_cast<size_t>(n)) uni.resize(static_cast<size_t>(n));
    size_t both = 0;
    for (SigValue v : uni) both += std::binary_search(a.begin(), a.end(), v) && std::binary_search(b.begin(), b.end(), v);
    const double want = uni.empty() ? 0.0 : static_cast<double>(both) / static_cast<double>(uni.size());
    EXPECT_EQ(bottomk_estimate(a, b, n), want);
    // The join's screen: estimate >= s implies fingerprint Jaccard >= s / (2 - s).
    if (want > 0) {
      EXPECT_GE(fingerprint_jaccard(a, b) + 1e-12, fingerprint_threshold_for_estimate(want));
    }
  }
}

// The standard estimator is unbiased: its mean over many seeds is the true Jaccard similarity
// (within 4 standard errors of the mean), for sets much larger than N.
TEST(BottomK, StandardEstimatorIsUnbiased) {
  std::mt19937_64 rng(23);
  for (double j : {0.2, 0.5, 0.8, 0.95}) {
    // |A u B| = 2000 shingles, |A n B| = j * 2000.
    const size_t uni = 2000, common = static_cast<size_t>(j * uni), rest = uni - common;
    double sum = 0, sumsq = 0;
    const int runs = 400;
    for (int r = 0; r < runs; ++r) {
      std::vector<ShingleHash> a, b;
      for (size_t i = 0; i < common; ++i) {
        const ShingleHash x = rng();
        a.push_back(x);
        b.push_back(x);
      }
      for (size_t i = 0; i < rest; ++i) (i % 2 ? a : b).push_back(rng());
      const double e = bottomk_estimate(bottomk_fingerprint(a, 128), bottomk_fingerprint(b, 128), 128);
      sum += e;
      sumsq += e * e;
    }
    const double mean = sum / runs, sd = std::sqrt(sumsq / runs - mean * mean);
    EXPECT_NEAR(mean, j, 4 * sd / std::sqrt(static_cast<double>(runs)) + 1e-3) << j;
  }
}

TEST(BottomK, CandidateThreshold) {
  EXPECT_LT(bottomk_candidate_threshold(0.8, 128), 0.8);
  EXPECT_GT(bottomk_candidate_threshold(0.8, 128), 0.7);
  EXPECT_LT(bottomk_candidate_threshold(0.8, 32), bottomk_candidate_threshold(0.8, 128));
  // At t = 0.99, J' = 1 has no error: the threshold is t itself.
  EXPECT_EQ(bottomk_candidate_threshold(0.99, 128), 0.99);
  EXPECT_GE(bottomk_candidate_threshold(0.05, 4), 0.01);
}
