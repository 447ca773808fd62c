#include "neardup/shingle.h"

#include <gtest/gtest.h>

#include "internal/hash.h"
#include "neardup/error.h"
#include "neardup/text.h"

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
  std::vector<uint64_t> h;
  hash_words("Hello, HELLO hello", kDefaultSeed, h);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], internal::hash_bytes("hello", 5, kDefaultSeed));  // words are lowercased first
  EXPECT_EQ(h[0], h[1]);
  EXPECT_EQ(h[1], h[2]);
}

TEST(Hash, ShingleCombinationIsPinnedAndOrderSensitive) {
  const uint64_t a[] = {1, 2, 3};
  const uint64_t b[] = {3, 2, 1};
  EXPECT_EQ(combine_tokens(a, 42), 0x75C4967427CEAA19ULL);
  EXPECT_NE(combine_tokens(a, 42), combine_tokens(b, 42));
  EXPECT_NE(combine_tokens(a, 42), combine_tokens(a, 43));
  EXPECT_NE(combine_tokens(std::span<const uint64_t>(a, 2), 42), combine_tokens(a, 42));
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

TEST(Shingle, RejectsBadK) {
  EXPECT_THROW(Shingler({ShingleKind::Words, 0, 1}), UsageError);
  EXPECT_THROW(Shingler({ShingleKind::Words, 65, 1}), UsageError);
}
