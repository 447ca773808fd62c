#include "internal/testing.h"
#include "neardup/simhash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <functional>
#include <cstdio>
#include <set>

#include "kernels/dispatch.h"
#include "kernels/simhash_kernels.h"
#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/shingle.h"
#include "test_util.h"

using namespace neardup;

namespace {

// Random fingerprints, and families of near copies: a base and members with a few bits
// flipped (0 to 10), some exact copies.
std::vector<uint64_t> clustered_fingerprints(uint64_t seed, size_t families) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> out;
  for (size_t f = 0; f < families; ++f) {
    const uint64_t base = rng();
    const size_t members = 1 + rng() % 6;
    for (size_t m = 0; m < members; ++m) {
      uint64_t x = base;
      const int flips = static_cast<int>(rng() % 11);
      for (int i = 0; i < flips; ++i) x ^= uint64_t{1} << (rng() % 64);
      out.push_back(x);
    }
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::vector<ShingleHash> doc_shingles(std::string_view text) {
  Shingler sh({ShingleKind::Words, 3, kDefaultSeed});
  std::vector<ShingleHash> s;
  sh.shingles(text, s);
  return s;
}

}  // namespace

TEST(SimHashKernels, EqualScalarBitForBit) {
  std::mt19937_64 rng(5);
  for (size_t n : {0, 1, 2, 254, 255, 256, 509, 510, 511, 4095, 4096, 4097, 20000}) {
    std::vector<uint64_t> h(n);
    std::vector<uint32_t> w(n);
    for (size_t i = 0; i < n; ++i) {
      h[i] = rng();
      w[i] = static_cast<uint32_t>(rng() % (internal::kMaxSimHashWeight + 1));
    }
    uint64_t want[64] = {}, want_w[64] = {};
    // The definition, bit by bit.
    for (size_t i = 0; i < n; ++i)
      for (int b = 0; b < 64; ++b)
        if (h[i] >> b & 1) {
          ++want[b];
          want_w[b] += w[i];
        }
    for (Isa isa : test::available_isas()) {
      uint64_t got[64] = {}, got_w[64] = {};
      internal::kernels(isa).simhash_count(h.data(), n, got);
      internal::kernels(isa).simhash_weigh(h.data(), w.data(), n, got_w);
      for (int b = 0; b < 64; ++b) {
        ASSERT_EQ(got[b], want[b]) << isa_name(isa) << " n " << n << " bit " << b;
        ASSERT_EQ(got_w[b], want_w[b]) << isa_name(isa) << " n " << n << " bit " << b;
      }
    }
  }
}

TEST(SimHash, EqualsTheReferenceForEveryWeightAndKernel) {
  std::mt19937_64 rng(8);
  for (int round = 0; round < 60; ++round) {
    // Shingles with repeats: a vocabulary, some values drawn many times.
    std::vector<ShingleHash> vocab(1 + rng() % 400);
    for (auto& v : vocab) v = rng();
    std::vector<ShingleHash> s(rng() % 3000);
    for (auto& x : s) x = vocab[std::min<size_t>(vocab.size() - 1, static_cast<size_t>(rng() % vocab.size() * (rng() % 2 ? 1 : 0.1)))];
    for (SimHashWeights w : {SimHashWeights::Tf, SimHashWeights::Set, SimHashWeights::LogTf}) {
      const uint64_t want = simhash_reference(s, w);
      for (Isa isa : test::available_isas()) {
        SimHasher hasher(w);
        EXPECT_EQ(hasher.hash(s, isa), want) << simhash_weights_name(w) << " " << isa_name(isa) << " n " << s.size();
      }
    }
  }
  // Documents longer than the hash tables take (2^18 shingles) find their distinct shingles by
  // sorting: the same values, with repeats counted for logtf.
  {
    std::vector<ShingleHash> vocab(200'000);
    for (auto& v : vocab) v = rng();
    std::vector<ShingleHash> s(700'000);
    for (size_t i = 0; i < s.size(); ++i) s[i] = vocab[i % 7 == 0 ? i % 50 : rng() % vocab.size()];
    for (SimHashWeights w : {SimHashWeights::Tf, SimHashWeights::Set, SimHashWeights::LogTf}) {
      const uint64_t want = simhash_reference(s, w);
      for (Isa isa : test::available_isas()) {
        SimHasher hasher(w);
        EXPECT_EQ(hasher.hash(std::span(s).first(1000), isa), simhash_reference(std::span(s).first(1000), w));
        EXPECT_EQ(hasher.hash(s, isa), want) << simhash_weights_name(w) << " " << isa_name(isa) << " long";
        EXPECT_EQ(hasher.hash(std::span(s).first(2000), isa), simhash_reference(std::span(s).first(2000), w)) << "after a long one";
      }
    }
  }
  // The weights differ: a document of one repeated shingle and a few distinct ones.
  std::vector<ShingleHash> skew(50, 0xFFFFFFFF00000000ull);
  for (int i = 0; i < 10; ++i) skew.push_back(0x00000000FFFFFFFFull);
  EXPECT_EQ(simhash_reference(skew, SimHashWeights::Tf), 0xFFFFFFFF00000000ull);
  EXPECT_EQ(simhash_reference(skew, SimHashWeights::Set), 0u);  // a tie: 1 vote against 1
  EXPECT_EQ(simhash_reference(std::vector<ShingleHash>{}, SimHashWeights::Tf), 0u);
}

TEST(SimHashKernels, DistinctValuesInFirstOccurrenceOrder) {
  if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  // Tables from one bucket (every value overflows along the chain, wrapping round) to roomy ones;
  // the value 0 (the empty marker) among them; each table used twice without clearing would be a
  // bug, so it is zeroed before each call as SimHasher does.
  std::mt19937_64 rng(9);
  for (size_t buckets : {1, 2, 4, 64, 1024})
    for (int round = 0; round < 20; ++round) {
      const size_t nv = 1 + rng() % (buckets == 1 ? 8 : 4 * buckets);  // at most the table's room
      std::vector<uint64_t> vocab(nv);
      for (auto& v : vocab) v = (rng() % 10 == 0) ? 0 : (rng() % 4 == 0 ? (rng() % 64) << 8 : rng());  // shared low bits
      std::vector<uint64_t> xs(rng() % 600);
      for (auto& x : xs) x = vocab[rng() % nv];
      std::vector<uint64_t> want;
      for (uint64_t x : xs)
        if (std::find(want.begin(), want.end(), x) == want.end()) want.push_back(x);
      if (std::count_if(want.begin(), want.end(), [](uint64_t v) { return v != 0; }) > static_cast<long>(8 * buckets)) continue;
      std::vector<uint64_t> mem(8 * buckets + 8, 0), out(xs.size() + 1, 0);
      auto* table = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(mem.data()) + 63) & ~uintptr_t{63});
      const size_t nd = internal::simhash_distinct_avx512(xs.data(), xs.size(), table, buckets - 1, out.data());
      out.resize(nd);
      EXPECT_EQ(out, want) << "buckets " << buckets << " n " << xs.size();
    }
}

TEST(SimHash, EditedCopiesAreCloseAndUnrelatedDocumentsNear32Apart) {
  io::InputSet in({NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst"}, io::InputFormat::Auto);
  io::RecordReader r(in, {});
  io::Record rec;
  std::vector<std::string> texts;
  while (texts.size() < 200 && r.next(rec))
    if (rec.text.size() > 1200) texts.emplace_back(rec.text);
  ASSERT_GE(texts.size(), 100u);
  SimHasher hasher;
  std::vector<uint64_t> fp;
  for (const auto& t : texts) fp.push_back(hasher(doc_shingles(t)));
  // Unrelated: the mean distance over pairs of different articles is near 32.
  double sum = 0;
  int pairs = 0;
  for (size_t a = 0; a < 100; ++a)
    for (size_t b = a + 1; b < 100; ++b) {
      sum += hamming_distance(fp[a], fp[b]);
      ++pairs;
    }
  const double mean = sum / pairs;
  EXPECT_GT(mean, 28.0);
  EXPECT_LT(mean, 36.0);
  // Lightly edited: one word of about 250 replaced (3 of about 250 shingles change).
  double edited = 0;
  for (size_t d = 0; d < 100; ++d) {
    std::string t = texts[d];
    const size_t pos = t.find(' ', t.size() / 2);
    ASSERT_NE(pos, std::string::npos);
    t.insert(pos + 1, "zqxw ");
    const int dist = hamming_distance(fp[d], hasher(doc_shingles(t)));
    EXPECT_LE(dist, 14) << d;
    edited += dist;
  }
  EXPECT_LT(edited / 100, 6.0);
  std::printf("mean distance: unrelated %.1f, edited %.2f\n", mean, edited / 100);
}

TEST(SimHashPlan, EveryDifferenceOfAtMostKBitsAvoidsSomeTable) {
  std::mt19937_64 rng(2);
  for (int k = 0; k <= 7; ++k) {
    for (const SimHashPlan& plan : {plan_simhash_tables(k, 1'000'000), plan_simhash_tables(k, 1'000'000, SimHashWorkload::Batch),
                                   simhash_blocks_plan(k, k + 1, 1000), simhash_blocks_plan(k, k + 3, 1000)}) {
      auto covered = [&](uint64_t diff) {
        for (uint64_t m : plan.masks)
          if ((diff & m) == 0) return true;
        return false;
      };
      if (k <= 3) {  // every difference of exactly k bits (fewer bits are subsets of these)
        std::vector<int> idx(static_cast<size_t>(k));
        std::function<void(int, int, uint64_t)> walk = [&](int depth, int from, uint64_t diff) {
          if (depth == k) {
            ASSERT_TRUE(covered(diff)) << plan.layout << " diff " << diff;
            return;
          }
          for (int b = from; b < 64; ++b) walk(depth + 1, b + 1, diff | uint64_t{1} << b);
        };
        walk(0, 0, 0);
      } else {
        for (int i = 0; i < 20000; ++i) {
          uint64_t diff = 0;
          while (std::popcount(diff) < k) diff |= uint64_t{1} << (rng() % 64);
          ASSERT_TRUE(covered(diff)) << plan.layout;
        }
      }
    }
  }
  // The configurations of the usual worked example (4 and 16 tables for 64-bit fingerprints).
  EXPECT_EQ(simhash_blocks_plan(3, 6, 1).tables(), 20u);
  EXPECT_EQ(simhash_blocks_plan(3, 4, 1).tables(), 4u);
  EXPECT_THROW(plan_simhash_tables(17, 10), UsageError);
  EXPECT_THROW(plan_simhash_tables(6, 1'000'000, SimHashWorkload::Online, 1000), UsageError);
}

TEST(SimHashPlan, ExpectedCandidatesMatchThoseMeasuredOnRandomFingerprints) {
  if (test::kUnderSanitizer) GTEST_SKIP() << "a statistical check of the plans' arithmetic: the optimized build runs it";
  std::mt19937_64 rng(11);
  const size_t n = 200'000;
  std::vector<uint64_t> fps(n);
  for (auto& x : fps) x = rng();
  for (const SimHashPlan& plan : {simhash_blocks_plan(3, 4, n), simhash_blocks_plan(3, 5, n), plan_simhash_tables(3, n),
                                  plan_simhash_tables(6, n), plan_simhash_tables(4, n, SimHashWorkload::Batch)}) {
    SimHashIndex index(plan);
    for (size_t i = 0; i < n; ++i) index.insert(fps[i], static_cast<DocId>(i));
    index.merge();
    const int queries = 3000;
    uint64_t compared = 0;
    for (int q = 0; q < queries; ++q) index.query(rng(), &compared);
    const double measured = static_cast<double>(compared) / queries;
    EXPECT_NEAR(measured, plan.expected_candidates, 0.2 * plan.expected_candidates + 0.05)
        << plan.layout << " tables " << plan.tables();
  }
}

TEST(SimHashFindAll, EqualsBruteForceForEveryDistanceUpTo7) {
  for (uint64_t seed : {1, 2}) {
    std::vector<uint64_t> random(3000);
    std::mt19937_64 rng(seed);
    for (auto& x : random) x = rng();
    std::vector<uint64_t> clustered = clustered_fingerprints(seed, 700);
    for (const std::vector<uint64_t>* fps : {&random, &clustered})
      for (int k = 0; k <= 7; ++k)
        for (const SimHashPlan& plan : {plan_simhash_tables(k, fps->size(), SimHashWorkload::Batch),
                                       plan_simhash_tables(k, fps->size()), simhash_blocks_plan(k, k + 2, fps->size())}) {
          const auto want = simhash_find_all_brute_force(*fps, k);
          FindAllStats st;
          const auto got = simhash_find_all(*fps, plan, 2, {}, &st);
          ASSERT_EQ(got, want) << "k " << k << " " << plan.layout;
          EXPECT_EQ(st.found, got.size());
          if (fps == &clustered && k >= 2) {
            EXPECT_FALSE(want.empty());
          }
        }
  }
}

TEST(SimHashFindAll, SkipsDocumentsAndGroupsCopies) {
  std::vector<uint64_t> fps = {5, 5, 5, 7, 5, 1ull << 63, 0};
  std::vector<uint8_t> skip = {0, 0, 1, 0, 0, 0, 1};
  const auto got = simhash_find_all(fps, plan_simhash_tables(1, fps.size()), 1, skip);
  EXPECT_EQ(got, simhash_find_all_brute_force(fps, 1, skip));
  // (0,1), (0,4), (1,4) at 0; 7 = 5 ^ 2 is one bit from each 5
  EXPECT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0], (HammingPair{0, 1, 0}));
}

TEST(SimHashIndex, QueriesEqualBruteForceBeforeAndAfterMerges) {
  const auto fps = clustered_fingerprints(4, 3000);
  for (int k : {0, 3, 6}) {
    SimHashIndex index(plan_simhash_tables(k, fps.size()));
    std::mt19937_64 rng(k);
    for (size_t i = 0; i < fps.size(); ++i) {
      // Query then insert (the online walk), checking a sample of the queries.
      if (i % 7 == 0) {
        std::vector<std::pair<DocId, int>> want;
        for (size_t j = 0; j < i; ++j)
          if (hamming_distance(fps[i], fps[j]) <= k) want.push_back({static_cast<DocId>(j), hamming_distance(fps[i], fps[j])});
        ASSERT_EQ(index.query(fps[i]), want) << "k " << k << " at " << i;
      }
      index.insert(fps[i], static_cast<DocId>(i));
    }
    EXPECT_EQ(index.size(), fps.size());
  }
}
