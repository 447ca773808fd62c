#include "neardup/shingle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>

#include "internal/hash.h"
#include "internal/hash_partition.h"
#include "kernels/jaccard_kernels.h"
#include "kernels/shingle_kernels.h"
#include "neardup/cpu.h"
#include "neardup/error.h"
#include "neardup/text.h"
#include "neardup/verify.h"

using namespace neardup;

TEST(Hash, Xxh3KnownAnswers) {
  // Published XXH3-64 test vector: the empty input with seed 0.
  EXPECT_EQ(internal::hash_bytes("", 0, 0), 0x2D06800538D394C2ULL);
  // Pinned values: these are part of the sketch format; a change here is a format change.
  EXPECT_EQ(internal::hash_bytes("hello", 5, kDefaultSeed), 0x5243677D2C5A9A36ULL);
  EXPECT_EQ(internal::fmix64(1), 0xB456BCFC34C2CB2CULL);
  uint64_t state = 0;
  EXPECT_EQ(internal::splitmix64(state), 0xE220A8397B1DCDAFULL);
}

TEST(Hash, WordHashesArePinned) {
  // Pinned values of the word hash (docs/format.md), also computed from the written definition
  // by tools/known_answers/known_answers.py (a ctest of its own).
  EXPECT_EQ(internal::word_hash("hello", 5, kDefaultSeed), 0x1CD9CB8046CDCF04ULL);
  EXPECT_EQ(internal::word_hash("internationalization", 20, kDefaultSeed), 0x5DC695710AAAB585ULL);
  EXPECT_EQ(internal::word_hash("a", 1, 0), 0x3904F4D1F4B004E2ULL);
  std::vector<uint64_t> h;
  hash_words("Hello, HELLO hello", kDefaultSeed, h);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], internal::word_hash("hello", 5, kDefaultSeed));  // words are lowercased first
  EXPECT_EQ(h[0], h[1]);
  EXPECT_EQ(h[1], h[2]);
}

TEST(Hash, PaddedWordHashEqualsTheDefinition) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 2000; ++round) {
    unsigned char buf[48];
    for (auto& c : buf) c = static_cast<unsigned char>(rng());
    const size_t len = 1 + round % 16;
    const uint64_t seed = rng();
    EXPECT_EQ(internal::word_hash_padded16(buf + 16, len, seed), internal::word_hash(buf + 16, len, seed)) << len;
  }
  // word_hash against the definition read literally (a zero-padded copy of each chunk), for
  // every length to 100, with the word at the very end of its buffer (ASan catches a read past).
  for (size_t len = 0; len <= 100; ++len)
    for (int round = 0; round < 20; ++round) {
      std::vector<unsigned char> word(len);
      for (auto& c : word) c = static_cast<unsigned char>(rng());
      const uint64_t seed = rng();
      uint64_t acc = seed;
      for (size_t i = 0; i < len; i += 16) {
        unsigned char chunk[16] = {};
        std::memcpy(chunk, word.data() + i, std::min<size_t>(16, len - i));
        acc = internal::mum(internal::load_le64(chunk) ^ internal::kWordK0 ^ acc, internal::load_le64(chunk + 8) ^ internal::kWordK1);
      }
      const uint64_t want = internal::mum(acc ^ internal::kWordK2, len ^ internal::kWordK3);
      ASSERT_EQ(internal::word_hash(word.data(), len, seed), want) << len;
    }
  // Lengths and contents matter: trailing zero bytes are not padding.
  EXPECT_NE(internal::word_hash("ab", 2, 1), internal::word_hash("ab\0", 3, 1));
  EXPECT_NE(internal::word_hash("ab", 2, 1), internal::word_hash("ba", 2, 1));
  EXPECT_NE(internal::word_hash("ab", 2, 1), internal::word_hash("ab", 2, 2));
}

TEST(Hash, ShingleCombinationIsPinnedAndOrderSensitive) {
  const uint64_t a[] = {1, 2, 3};
  const uint64_t b[] = {3, 2, 1};
  EXPECT_EQ(combine_tokens(a, 42), 0x56A086EF56CE0ABAULL);
  EXPECT_NE(combine_tokens(a, 42), combine_tokens(b, 42));
  EXPECT_NE(combine_tokens(a, 42), combine_tokens(a, 43));
  EXPECT_NE(combine_tokens(std::span<const uint64_t>(a, 2), 42), combine_tokens(a, 42));
}

TEST(Shingle, CombinationKernelsEqualTheDefinition) {
  // Every window of every kernel equals combine_tokens of that window, for k = 1..64 and token
  // counts around the 4- and 8-lane blocks (full blocks, a tail, a single window).
  std::mt19937_64 rng(7);
  std::vector<uint64_t> t(200);
  for (auto& x : t) x = rng();
  using Kernel = void (*)(const uint64_t*, size_t, size_t, uint64_t, uint64_t*) noexcept;
  std::vector<std::pair<const char*, Kernel>> simd_kernels;
  if (detected_isa() >= Isa::Avx2) simd_kernels.emplace_back("avx2", internal::combine_shingles_avx2);
  if (detected_isa() >= Isa::Avx512) simd_kernels.emplace_back("avx512", internal::combine_shingles_avx512);
  for (size_t k = 1; k <= 64; ++k)
    for (size_t n : {k, k + 1, k + 3, k + 4, k + 5, k + 7, k + 8, k + 9, k + 70, size_t{200}}) {
      if (n > t.size()) continue;
      const size_t m = n - k + 1;
      const uint64_t c = 42 ^ (k * internal::kGolden);
      std::vector<uint64_t> scalar(m + 1, 0);
      internal::combine_shingles_scalar(t.data(), n, k, c, scalar.data());
      for (size_t i = 0; i < m; ++i)
        ASSERT_EQ(scalar[i], combine_tokens(std::span<const uint64_t>(t.data() + i, k), 42)) << k << " " << n << " " << i;
      EXPECT_EQ(scalar[m], 0u);  // nothing written past the last window
      for (const auto& [name, kernel] : simd_kernels) {
        std::vector<uint64_t> simd(m + 1, 0);
        kernel(t.data(), n, k, c, simd.data());
        for (size_t i = 0; i < m; ++i) ASSERT_EQ(simd[i], scalar[i]) << name << " " << k << " " << n << " " << i;
        EXPECT_EQ(simd[m], 0u) << name << " " << k << " " << n;
      }
    }
}

// The set intersection kernels count exactly the common values of two sets (a brute-force count
// over a hash set), or -1 exactly when that count is below `need`: sizes around the 4- and
// 8-value blocks and their tails, overlaps from none to all, runs of equal values and interleaved ones.
TEST(Shingle, SetIntersectionKernelsCountExactly) {
  std::mt19937_64 rng(23);
  using Kernel = long (*)(const uint64_t*, size_t, const uint64_t*, size_t, long) noexcept;
  std::vector<std::pair<const char*, Kernel>> kernels{{"scalar", internal::set_common_at_least_scalar}};
  if (detected_isa() >= Isa::Avx2) kernels.emplace_back("avx2", internal::set_common_at_least_avx2);
  if (detected_isa() >= Isa::Avx512) kernels.emplace_back("avx512", internal::set_common_at_least_avx512);
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t na = rng() % 70, nb = trial % 5 == 0 ? rng() % 700 : rng() % 70;
    const double shared = static_cast<double>(rng() % 101) / 100;
    std::vector<uint64_t> a, b;
    // Small values so that the two sides interleave closely.
    const uint64_t range = 4 * (na + nb) + 8;
    std::set<uint64_t> sa, sb;
    while (sa.size() < na) sa.insert(rng() % range);
    a.assign(sa.begin(), sa.end());
    for (const uint64_t x : a)  // a share of a's values, then values anywhere
      if (sb.size() < nb && static_cast<double>(rng() % 1000) / 1000 < shared) sb.insert(x);
    while (sb.size() < nb) sb.insert(rng() % range);
    b.assign(sb.begin(), sb.end());
    long truth = 0;
    for (const uint64_t x : a) truth += sb.count(x) ? 1 : 0;
    for (const long need : {0L, truth - 1, truth, truth + 1, static_cast<long>(rng() % (std::min(na, nb) + 2))}) {
      if (need < 0) continue;
      for (const auto& [name, kernel] : kernels) {
        const long want = truth >= need ? truth : -1;
        ASSERT_EQ(kernel(a.data(), a.size(), b.data(), b.size(), need), want) << name << " trial " << trial << " need " << need;
        ASSERT_EQ(kernel(b.data(), b.size(), a.data(), a.size(), need), want) << name << " trial " << trial << " need " << need;
      }
    }
  }
}

TEST(Shingle, CountsAndEdgeCases) {
  Shingler s({ShingleKind::Words, 3, kDefaultSeed});
  std::vector<ShingleHash> out;
  s.shingles("a b c d e", out);
  EXPECT_EQ(out.size(), 3u);  // n - k + 1
  s.shingles("a b c", out);
  EXPECT_EQ(out.size(), 1u);
  s.shingles("a b", out);  // fewer words than K: one shingle of all of them
  EXPECT_EQ(out.size(), 1u);
  s.shingles("a", out);
  EXPECT_EQ(out.size(), 1u);
  s.shingles("... !!! ", out);  // no words: no shingle
  EXPECT_TRUE(out.empty());
  s.shingles("", out);
  EXPECT_TRUE(out.empty());
}

TEST(Shingle, ShortDocumentsDiffer) {
  Shingler s({ShingleKind::Words, 5, kDefaultSeed});
  EXPECT_NE(s.shingle_set("a b"), s.shingle_set("a"));
  EXPECT_NE(s.shingle_set("a b"), s.shingle_set("b a"));
  EXPECT_EQ(s.shingle_set("A, b!"), s.shingle_set("a b"));
}

TEST(Shingle, SetIsSortedAndDistinct) {
  Shingler s({ShingleKind::Words, 2, kDefaultSeed});
  const auto set = s.shingle_set("x y x y x y z");  // shingles: xy yx xy yx xy yz -> {xy, yx, yz}
  EXPECT_EQ(set.size(), 3u);
  EXPECT_TRUE(std::is_sorted(set.begin(), set.end()));
}

TEST(Shingle, ShingleMatchesCombinationOfWordHashes) {
  Shingler s({ShingleKind::Words, 2, 7});
  std::vector<ShingleHash> out;
  s.shingles("one two three", out);
  std::vector<uint64_t> w;
  hash_words("one two three", 7, w);
  const uint64_t combine_seed = internal::fmix64(7 + 0x5348494E474C45ULL);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], combine_tokens(std::span<const uint64_t>(w.data(), 2), combine_seed));
  EXPECT_EQ(out[1], combine_tokens(std::span<const uint64_t>(w.data() + 1, 2), combine_seed));
}

TEST(Shingle, RollingCombinationEqualsTheDefinition) {
  std::mt19937_64 rng(6);
  std::string text;
  for (int i = 0; i < 300; ++i) text += "w" + std::to_string(rng() % 50) + " ";
  std::vector<uint64_t> w;
  hash_words(text, 7, w);
  const uint64_t combine_seed = internal::fmix64(7 + 0x5348494E474C45ULL);
  for (int k : {1, 2, 3, 5, 8, 9, 20, 63, 64}) {
    Shingler s({ShingleKind::Words, k, 7});
    std::vector<ShingleHash> out;
    s.shingles(text, out);
    ASSERT_EQ(out.size(), w.size() - static_cast<size_t>(k) + 1);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], combine_tokens(std::span<const uint64_t>(w.data() + i, static_cast<size_t>(k)), combine_seed))
          << "k=" << k << " i=" << i;
  }
}

TEST(Shingle, CharacterNgramsIgnoreCaseAndPunctuation) {
  Shingler s({ShingleKind::Chars, 3, kDefaultSeed});
  EXPECT_EQ(s.shingle_set("Hello,   World!"), s.shingle_set("hello world"));
  std::vector<ShingleHash> out;
  s.shingles("hello world", out);  // 11 code points -> 9 trigrams
  EXPECT_EQ(out.size(), 9u);
  s.shingles("hi", out);  // shorter than N: one shingle
  EXPECT_EQ(out.size(), 1u);
  s.shingles("日本語", out);  // code points, not bytes
  EXPECT_EQ(out.size(), 1u);
  EXPECT_NE(s.shingle_set("abcd"), s.shingle_set("abdc"));
}

TEST(Shingle, JaccardOfSets) {
  const std::vector<ShingleHash> a{1, 2, 3, 4}, b{3, 4, 5, 6}, e{};
  EXPECT_DOUBLE_EQ(jaccard(a, b), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(jaccard(a, a), 1.0);
  EXPECT_DOUBLE_EQ(jaccard(a, e), 0.0);
  EXPECT_DOUBLE_EQ(jaccard(e, e), 0.0);
}

// sorted_set against std::sort + std::unique, at the sizes where it changes method (insertion
// sort, one bucket pass with 16-bit counts, with 32-bit counts, two passes) and with many repeats
// (generated text repeats lines).
TEST(Shingle, MakeSetEqualsSortUnique) {
  std::mt19937_64 rng(11);
  for (size_t n : {0, 1, 2, 5, 16, 17, 41, 63, 64, 65, 200, 1000, 4097, 65535, 65536, 70000, (1 << 18) + 1, 600000}) {
    for (int repeats : {0, 1}) {
      std::vector<ShingleHash> v(n);
      for (auto& x : v) x = repeats && !v.empty() && rng() % 3 == 0 ? v[rng() % v.size()] : rng();
      if (repeats && n > 10) v[n / 2] = v[n / 3] = 0, v[n - 1] = ~uint64_t{0};  // the extreme values
      auto want = v;
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      ASSERT_EQ(sorted_set(v), want) << "n=" << n << " repeats=" << repeats;
    }
  }
  // One hash repeated around what 16-bit counts can count, every one in the same bucket: a count
  // that wrapped would scatter them over each other.
  for (size_t n : {65535, 65536, 65537}) {
    const std::vector<ShingleHash> same(n, 0x8000000000000001ULL);
    EXPECT_EQ(sorted_set(same), std::vector<ShingleHash>{0x8000000000000001ULL}) << "n=" << n;
  }
  // Hashes that are not uniform: all in one top bucket.
  std::vector<ShingleHash> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (v.size() - i) * 7 % 1000;
  auto want = v;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  EXPECT_EQ(sorted_set(v), want);
}

// A set made from parts split by their top bits (the pieces of a long text) equals sorted_set of
// all the parts' hashes together: values repeated within and across parts, parts left empty or
// never added, the extreme values, every number of buckets (from the expected count) and 1 or 2
// threads; and so do its buckets' distinct hashes, handed out one bucket at a time.
TEST(Shingle, HashPartitionEqualsSortedSet) {
  std::mt19937_64 rng(12);
  for (const size_t expected : {size_t{0}, size_t{5000}, size_t{100000}, size_t{1} << 24}) {
    for (const int threads : {1, 2}) {
      const size_t parts = 1 + rng() % 9;
      std::vector<std::vector<ShingleHash>> v(parts);
      std::vector<ShingleHash> all;
      for (size_t p = 0; p + 1 < parts; ++p) {  // the last part is never added
        v[p].resize(p == 1 ? 0 : rng() % 40000);
        for (auto& x : v[p]) x = !all.empty() && rng() % 4 == 0 ? all[rng() % all.size()] : rng();
        if (v[p].size() > 2) v[p][0] = 0, v[p][1] = ~uint64_t{0};
        all.insert(all.end(), v[p].begin(), v[p].end());
      }
      internal::HashPartition partition(parts, expected);
      for (size_t p = 0; p + 1 < parts; ++p) partition.add(p, v[p]);
      EXPECT_EQ(partition.sorted_set(threads), sorted_set(all)) << "expected " << expected << ", " << parts << " parts";
      // The same parts bucket by bucket: each bucket sorted without repeats, on a slot below
      // `threads`, and together the same set.
      internal::HashPartition again(parts, expected);
      for (size_t p = 0; p + 1 < parts; ++p) again.add(p, v[p]);
      std::mutex mu;
      std::vector<ShingleHash> joined;
      again.for_each_distinct(threads, [&](size_t slot, std::span<const ShingleHash> bucket) {
        EXPECT_LT(slot, static_cast<size_t>(threads));
        EXPECT_TRUE(std::adjacent_find(bucket.begin(), bucket.end(), std::greater_equal<>()) == bucket.end());
        std::lock_guard<std::mutex> lock(mu);
        joined.insert(joined.end(), bucket.begin(), bucket.end());
      });
      std::sort(joined.begin(), joined.end());
      EXPECT_EQ(joined, sorted_set(all)) << "expected " << expected << ", " << parts << " parts, bucket by bucket";
    }
  }
  EXPECT_GE(internal::HashPartition::top_bits(size_t{1} << 24), 12);
  EXPECT_EQ(internal::HashPartition::top_bits(0), 1);
}

// jaccard_at_least is jaccard at or above its floor and below the floor elsewhere, for sets of
// every overlap and size ratio around the floor.
TEST(Shingle, JaccardAtLeastAgreesWithJaccard) {
  std::mt19937_64 rng(12);
  int above = 0, below = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t common = rng() % 400, only_a = rng() % 200, only_b = rng() % 200;
    std::vector<ShingleHash> a, b;
    for (size_t i = 0; i < common; ++i) a.push_back(rng()), b.push_back(a.back());
    for (size_t i = 0; i < only_a; ++i) a.push_back(rng());
    for (size_t i = 0; i < only_b; ++i) b.push_back(rng());
    a = sorted_set(a);
    b = sorted_set(b);
    const double j = jaccard(a, b);
    for (double floor : {0.5, 0.8, j, std::nextafter(j, 2.0), 0.95}) {
      const double got = jaccard_at_least(a, b, floor);
      if (j >= floor) {
        ASSERT_EQ(got, j) << common << " " << only_a << " " << only_b << " floor " << floor;
        ++above;
      } else {
        ASSERT_LT(got, floor) << common << " " << only_a << " " << only_b << " floor " << floor;
        ++below;
      }
    }
  }
  EXPECT_GT(above, 3000);  // both sides were exercised
  EXPECT_GT(below, 3000);
  const std::vector<ShingleHash> e{}, x{1, 2};
  EXPECT_EQ(jaccard_at_least(e, x, 0.5), 0.0);
  EXPECT_EQ(jaccard_at_least(x, x, 0.0), 1.0);
}

// Identical sets share one stored copy, found by content; a copy lives while a document uses it.
TEST(ShingleSets, SharesIdenticalSetsByContent) {
  std::mt19937_64 rng(31);
  auto random_set = [&](size_t n) {
    std::vector<ShingleHash> v(n);
    for (auto& x : v) x = rng();
    return sorted_set(v);
  };
  const std::vector<ShingleHash> a = random_set(ShingleSets::kShareMin + 40), small = random_set(ShingleSets::kShareMin - 1);
  std::vector<ShingleHash> near = a;
  near[a.size() / 2] ^= 1;  // same size, one hash apart
  near = sorted_set(near);
  ShingleSets s(3);
  s.set(0, a);
  s.set(5, a);  // past the count given: the sets grow
  s.set(2, near);
  s.set(3, small);
  s.set(4, small);
  EXPECT_EQ(s.get(0).data(), s.get(5).data());
  EXPECT_NE(s.get(0).data(), s.get(2).data());
  EXPECT_NE(s.get(3).data(), s.get(4).data());  // too short to share
  EXPECT_TRUE(std::ranges::equal(s.get(2), near));
  EXPECT_TRUE(std::ranges::equal(s.get(4), small));
  EXPECT_FALSE(s.has(1));
  EXPECT_EQ(s.shared_docs(), 1u);
  EXPECT_EQ(s.total_hashes(), 2 * a.size() + 2 * small.size());
  // A shared copy scores as two equal copies do, without a merge.
  EXPECT_EQ(jaccard(s.get(0), s.get(5)), 1.0);
  EXPECT_EQ(jaccard_at_least(s.get(0), s.get(5), 0.9), 1.0);
  EXPECT_EQ(jaccard(s.get(0), s.get(2)), jaccard(a, near));

  // Replacing one user's set leaves the other's; the copy still serves a third identical set.
  s.set(0, near);
  EXPECT_TRUE(std::ranges::equal(s.get(5), a));
  EXPECT_EQ(s.get(0).data(), s.get(2).data());
  s.set(6, a);
  EXPECT_EQ(s.get(6).data(), s.get(5).data());
  EXPECT_EQ(s.shared_docs(), 2u);
  EXPECT_EQ(s.total_hashes(), 2 * a.size() + 2 * small.size());

  // Documents not needed are let go, and a copy with them once none uses it.
  std::vector<uint8_t> needed(7, 0);
  needed[6] = needed[4] = 1;
  s.keep_only(needed);
  for (DocId d : {0u, 1u, 2u, 3u, 5u}) EXPECT_FALSE(s.has(d)) << d;
  EXPECT_TRUE(std::ranges::equal(s.get(6), a));
  EXPECT_TRUE(std::ranges::equal(s.get(4), small));
  EXPECT_EQ(s.shared_docs(), 0u);
  EXPECT_EQ(s.total_hashes(), a.size() + small.size());
  s.set(7, near);  // its copy went with documents 0 and 2: stored anew
  EXPECT_TRUE(std::ranges::equal(s.get(7), near));
  EXPECT_EQ(s.total_hashes(), 2 * a.size() + small.size());
  s.keep_only(std::vector<uint8_t>(2, 1));
  EXPECT_FALSE(s.has(6));
  EXPECT_EQ(s.total_hashes(), 0u);
}

// A copy of a text takes its original's set without a set of its own; it lives as long as a
// document uses it, whichever goes first.
TEST(ShingleSets, ShareGivesAnotherDocumentsSet) {
  std::vector<ShingleHash> a(10);
  std::iota(a.begin(), a.end(), ShingleHash{100});  // short: never found by content
  ShingleSets s;
  s.set(1, a);
  s.share(4, 1);
  EXPECT_EQ(s.get(4).data(), s.get(1).data());
  EXPECT_EQ(s.shared_docs(), 1u);
  EXPECT_EQ(s.total_hashes(), a.size());
  s.set(2, {});
  s.share(3, 2);  // an empty set is a set
  EXPECT_TRUE(s.has(3));
  EXPECT_TRUE(s.get(3).empty());
  s.release(std::vector<DocId>{1});
  EXPECT_TRUE(std::ranges::equal(s.get(4), a));
  EXPECT_EQ(s.total_hashes(), a.size());
  s.share(4, 3);  // replaces 4's share: the copy of `a` goes with its last user
  EXPECT_EQ(s.total_hashes(), 0u);
  EXPECT_EQ(s.shared_docs(), 2u);
  EXPECT_THROW(s.share(5, 1), UsageError);  // 1 has no set any more
  EXPECT_THROW(s.share(3, 3), UsageError);
}

TEST(Shingle, RejectsBadK) {
  EXPECT_THROW(Shingler({ShingleKind::Words, 0, 1}), UsageError);
  EXPECT_THROW(Shingler({ShingleKind::Words, 65, 1}), UsageError);
}

// A store that finds its sets through a table of the documents holding one behaves as the
// dense one, through sets stored, shared, replaced and let go in every order, including the
// erasures that move a probe run's later entries back, and after every set went (the slots
// start again from the first).
TEST(ShingleSets, SparseSlotsBehaveAsDenseOnes) {
  std::mt19937_64 rng(97);
  ShingleSets dense, sparse;
  ASSERT_TRUE(sparse.use_sparse_slots());
  std::vector<std::vector<ShingleHash>> pool;
  for (size_t k = 0; k < 6; ++k) {
    std::vector<ShingleHash> v(k % 2 ? ShingleSets::kShareMin + k : k + 1);
    for (auto& x : v) x = rng();
    pool.push_back(sorted_set(v));
  }
  // Few distinct documents (so that one is often replaced or shared again), spread over a
  // range far larger than the table, so that probe runs form and break.
  std::vector<DocId> ids(300);
  for (auto& d : ids) d = static_cast<DocId>(rng() % 5'000'000);
  size_t emptied = 0;
  for (int step = 0; step < 40'000; ++step) {
    const DocId d = ids[rng() % ids.size()];
    switch (rng() % 5) {
      case 0:
      case 1: {
        const auto& set = pool[rng() % pool.size()];
        dense.set(d, set);
        sparse.set(d, set);
        break;
      }
      case 2: {
        const DocId from = ids[rng() % ids.size()];
        if (from == d || !dense.has(from)) break;
        dense.share(d, from);
        sparse.share(d, from);
        break;
      }
      default:
        dense.release(std::vector<DocId>{d});
        sparse.release(std::vector<DocId>{d});
    }
    if (step % 4000 == 3999) {  // every set let go
      dense.release(ids);
      sparse.release(ids);
      ++emptied;
    }
    ASSERT_EQ(sparse.total_hashes(), dense.total_hashes()) << step;
    ASSERT_EQ(sparse.shared_docs(), dense.shared_docs()) << step;
    if (step % 97 == 0) {
      for (const DocId x : ids) {
        ASSERT_EQ(sparse.has(x), dense.has(x)) << step << " " << x;
        ASSERT_TRUE(std::ranges::equal(sparse.get(x), dense.get(x))) << step << " " << x;
      }
      // get_pairs gives what get gives, for either lookup, documents without a set among them.
      std::vector<DocPair> pairs(40);
      for (auto& p : pairs) p = {ids[rng() % ids.size()], ids[rng() % ids.size()]};
      std::vector<ShingleSets::SetPair> got(pairs.size());
      for (const ShingleSets* s : {&dense, &sparse}) {
        s->get_pairs(pairs, got.data());
        for (size_t i = 0; i < pairs.size(); ++i) {
          ASSERT_EQ(got[i].first.data(), s->get(pairs[i].a).data()) << step << " " << i;
          ASSERT_EQ(got[i].first.size(), s->get(pairs[i].a).size()) << step << " " << i;
          ASSERT_EQ(got[i].second.data(), s->get(pairs[i].b).data()) << step << " " << i;
          ASSERT_EQ(got[i].second.size(), s->get(pairs[i].b).size()) << step << " " << i;
        }
      }
    }
  }
  EXPECT_EQ(emptied, 10u);
  // keep_only over the table, and a store holding sets refuses to change its lookup.
  std::vector<uint8_t> needed(5'000'000, 0);
  for (size_t k = 0; k < ids.size(); k += 2) needed[ids[k]] = 1;
  dense.keep_only(needed);
  sparse.keep_only(needed);
  for (const DocId x : ids) EXPECT_EQ(sparse.has(x), dense.has(x)) << x;
  EXPECT_EQ(sparse.total_hashes(), dense.total_hashes());
  dense.set(ids[0], pool[0]);
  EXPECT_FALSE(dense.use_sparse_slots());
  EXPECT_TRUE(dense.has(ids[0]));
}
