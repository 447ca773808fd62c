#include "neardup/setjoin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "kernels/jaccard_kernels.h"
#include "neardup/cpu.h"
#include "neardup/union_find.h"
#include "neardup/error.h"
#include "neardup/shingle.h"

using namespace neardup;

namespace {

using Sets = std::vector<std::vector<ShingleHash>>;

// Planted families of messy clusters: each family has a base set; members replace a random
// fraction of it (0 to 55%), so a family holds pairs on both sides of any threshold; some
// families start with an outlier that shares only boilerplate; a pool of boilerplate values is
// frequent across families; some sets are tiny, empty, or exact copies.
Sets messy(uint64_t seed, size_t families) {
  std::mt19937_64 rng(seed);
  std::vector<ShingleHash> boilerplate(60);
  for (auto& x : boilerplate) x = rng();
  Sets sets;
  for (size_t fam = 0; fam < families; ++fam) {
    const size_t size = rng() % 5 == 0 ? rng() % 12 : 20 + rng() % 400;
    std::vector<ShingleHash> base(size);
    // Values one apart too: equal in all but the lowest bits, which the ranking's sort must split.
    for (auto& x : base)
      x = rng() % 6 == 0 ? boilerplate[rng() % boilerplate.size()] : rng() % 9 == 0 ? boilerplate[rng() % 8] + 1 + rng() % 3 : rng();
    if (rng() % 3 == 0) {  // an outlier first: the family's boilerplate and little else
      std::vector<ShingleHash> outlier(base.begin(), base.begin() + static_cast<ptrdiff_t>(base.size() / 3));
      for (size_t i = 0; i < 20; ++i) outlier.push_back(rng());
      sets.push_back(sorted_set(outlier));
    }
    const size_t members = 1 + rng() % 9;
    for (size_t m = 0; m < members; ++m) {
      auto doc = base;
      const double change = m == 0 ? 0.0 : 0.05 * static_cast<double>(rng() % 12);
      for (auto& x : doc)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < change) x = rng();
      if (rng() % 4 == 0) doc.resize(doc.size() - doc.size() / 8);  // a shorter copy
      sets.push_back(sorted_set(doc));
    }
  }
  return sets;
}

std::vector<DocId> all_docs(const Sets& sets) {
  std::vector<DocId> d(sets.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<DocId>(i);
  return d;
}

// The oracle: every pair, its overlap counted by a merge, the threshold tested in integers.
std::vector<ScoredPair> brute_force(const Sets& sets, double t) {
  const ExactThreshold thr = ExactThreshold::from(t);
  std::vector<ScoredPair> out;
  for (size_t a = 0; a < sets.size(); ++a)
    for (size_t b = a + 1; b < sets.size(); ++b) {
      size_t common = 0;
      for (size_t i = 0, j = 0; i < sets[a].size() && j < sets[b].size();) {
        if (sets[a][i] == sets[b][j]) ++common, ++i, ++j;
        else if (sets[a][i] < sets[b][j]) ++i;
        else ++j;
      }
      if (thr.reached(common, sets[a].size(), sets[b].size()))
        out.push_back({static_cast<DocId>(a), static_cast<DocId>(b), jaccard(sets[a], sets[b])});
    }
  return out;
}

// The partition of the documents as each one's smallest connected document.
std::vector<uint32_t> components(size_t n, std::span<const ScoredPair> a, std::span<const ScoredPair> b = {}) {
  UnionFind uf(n);
  for (const auto& e : a) uf.unite(e.a, e.b);
  for (const auto& e : b) uf.unite(e.a, e.b);
  std::vector<uint32_t> root(n);
  for (size_t i = 0; i < n; ++i) root[i] = uf.find(static_cast<uint32_t>(i));
  return root;
}

}  // namespace

TEST(ExactThreshold, DecidesInIntegers) {
  const auto t = ExactThreshold::from(0.8);
  EXPECT_TRUE(t.reached(4, 5, 4));    // 4 / 5 = 0.8 exactly
  EXPECT_FALSE(t.reached(3, 4, 4));   // 3 / 5
  EXPECT_TRUE(t.reached(8, 10, 8));   // 8 / 10
  EXPECT_FALSE(t.reached(0, 0, 0));   // empty sets never
  EXPECT_EQ(t.min_overlap(5), 4u);    // ceil(4.0)
  EXPECT_EQ(t.min_overlap(6), 5u);    // ceil(4.8)
  EXPECT_EQ(t.pair_overlap(5, 4), 4u);  // ceil(0.8 / 1.8 * 9) = 4
  // The probes' test without the division says what pair_overlap says, and the longest partner
  // it allows what it decides, at thresholds on and off nine decimals.
  for (const double x : {0.8, 0.5, 1.0 / 3.0, 0.123456789, 1.0, 1e-9})
    for (uint64_t la = 1; la < 40; la += 3)
      for (uint64_t lb = 1; lb < 40; lb += 5)
        for (uint64_t bound = 0; bound <= la + lb; ++bound) {
          const auto e = ExactThreshold::from(x);
          ASSERT_EQ(e.overlap_reachable(bound, la, lb), bound >= e.pair_overlap(la, lb)) << x << " " << la << " " << lb << " " << bound;
          ASSERT_EQ(e.overlap_reachable(bound, la, lb), lb <= e.longest_partner(bound, la)) << x << " " << la << " " << lb << " " << bound;
        }
  const auto third = ExactThreshold::from(1.0 / 3.0);
  EXPECT_TRUE(third.reached(1, 2, 2));  // 1 / 3 >= 0.333333333
  EXPECT_EQ(ExactThreshold::from(0.0).num, 1u);
  EXPECT_TRUE(ExactThreshold::from(1.0).reached(7, 7, 7));
  EXPECT_FALSE(ExactThreshold::from(1.0).reached(6, 7, 7));
}

TEST(SetJoin, EqualsBruteForceOnMessyClusters) {
  for (const uint64_t seed : {1u, 2u, 3u}) {
    const Sets sets = messy(seed, 120);
    const auto docs = all_docs(sets);
    uint64_t by_delta = 0, by_words = 0, merged = 0;
    for (const double t : {0.3, 0.5, 0.7, 0.8, 0.9, 1.0}) {
      const auto expected = brute_force(sets, t);
      for (const int threads : {1, 3}) {
        SetJoin join(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, t, threads);
        const auto got = join.all_pairs();
        ASSERT_EQ(got, expected) << "seed " << seed << " t " << t << " threads " << threads;
        // The join compared far fewer pairs than all of them.
        EXPECT_LT(join.stats().verified, sets.size() * (sets.size() - 1) / 2) << t;
        by_delta += join.stats().by_delta;
        by_words += join.stats().by_words;
        merged += join.stats().verified - join.stats().by_delta - join.stats().by_words;
      }
      ASSERT_FALSE(expected.empty()) << "the corpus must hold pairs at " << t;
    }
    // Each of the three counts served.
    EXPECT_GT(by_delta, 0u) << "no pair was counted on its differences from a pivot";
    EXPECT_GT(by_words, 0u) << "no pair was counted as words of ranks";
    EXPECT_GT(merged, 0u) << "no pair was merged";
  }
}

// Families of near-copies, their members interleaved (a licence in thousands of files): most
// pairs are counted on their differences from a shared pivot or as words of ranks against a
// bitmap, with the counts of a merge, so the pairs, their similarities and connect's components
// are brute force's.
TEST(SetJoin, NearCopiesAreCountedOnTheirDifferencesFromAPivot) {
  std::mt19937_64 rng(11);
  std::vector<std::vector<ShingleHash>> bases(12);
  for (auto& b : bases) {
    b.resize(300 + rng() % 900);
    for (auto& x : b) x = rng() % 4 == 0 ? rng() % 5000 : rng();  // values shared across families too
  }
  Sets sets;
  for (size_t i = 0; i < 400; ++i) {
    auto doc = bases[rng() % bases.size()];
    const double change = 0.02 * static_cast<double>(rng() % 8);
    for (auto& x : doc)
      if (std::uniform_real_distribution<double>(0, 1)(rng) < change) x = rng();
    for (size_t k = rng() % 30; k > 0; --k) doc.push_back(rng());
    if (rng() % 5 == 0) doc.resize(doc.size() * 9 / 10);
    sets.push_back(sorted_set(doc));
  }
  const auto docs = all_docs(sets);
  for (const double t : {0.7, 0.8, 0.9}) {
    const auto expected = brute_force(sets, t);
    ASSERT_GT(expected.size(), 200u) << t;
    SetJoin join(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, t, 2);
    ASSERT_EQ(join.all_pairs(), expected) << t;
    EXPECT_GT((join.stats().by_delta + join.stats().by_words) * 2, join.stats().verified) << "most pairs without a merge at " << t;
    if (t < 0.9) {
      EXPECT_GT(join.stats().by_words, 0u) << t;
    }
    SetJoin again(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, t, 2);
    EXPECT_EQ(components(sets.size(), again.connect(sets.size(), {}, {})), components(sets.size(), expected)) << t;
  }
}

// Families of hundreds of near-copies (`docs` documents of three bases), interleaved, with
// outliers that share their boilerplate and values that a few documents of any family share.
Sets dense_families(uint64_t seed, size_t docs) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<ShingleHash>> bases(3);
  for (auto& b : bases) {
    b.resize(60 + rng() % 90);
    for (auto& x : b) x = rng() % 5 == 0 ? rng() % 400 : rng();
  }
  Sets sets;
  for (size_t i = 0; i < docs; ++i) {
    const auto& base = bases[rng() % bases.size()];
    std::vector<ShingleHash> doc;
    if (rng() % 9 == 0) {  // an outlier: part of a family's text and its own
      doc.assign(base.begin(), base.begin() + static_cast<ptrdiff_t>(base.size() / 2));
      for (size_t k = 0; k < 40; ++k) doc.push_back(rng());
    } else {
      doc = base;
      const double change = 0.03 * static_cast<double>(rng() % 9);
      for (auto& x : doc)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < change) x = rng();
      for (size_t k = rng() % 8; k > 0; --k) doc.push_back(rng());
    }
    // Values a few documents share: short lists, probed before the family's long ones.
    for (size_t k = 0; k < 6; ++k) doc.push_back(1000000 + rng() % 1500);
    sets.push_back(sorted_set(doc));
  }
  return sets;
}

// Dense families (dense_families): the prefixes' lists held by more than 1/64 of the members
// are walked as bitmaps of members (a probe's candidates, and their first common shingles for
// the positional filter, as the postings give them), and the pairs and connect's components are
// brute force's.
TEST(SetJoin, DenseFamiliesWalkTheirListsAsBitmaps) {
  const Sets sets = dense_families(23, 700);
  const auto docs = all_docs(sets);
  for (const double t : {0.5, 0.7, 0.85}) {
    const auto expected = brute_force(sets, t);
    ASSERT_GT(expected.size(), 250u) << t;
    for (const int threads : {1, 2}) {
      SetJoin join(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, t, threads);
      ASSERT_EQ(join.all_pairs(), expected) << t << " threads " << threads;
      EXPECT_GT(join.stats().dense_walks, 0u) << t;
      SetJoin again(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, t, threads);
      EXPECT_EQ(components(sets.size(), again.connect(sets.size(), {}, {})), components(sets.size(), expected)) << t;
      EXPECT_GT(again.stats().dense_walks, 0u) << t;
    }
  }
}

// The word kernels count the values common to a set given as words of 64 values and a bitmap of
// another, as a brute-force count does: sets from empty to dense, over ranges of one word to
// thousands.
TEST(SetJoin, WordKernelsCountTheCommonValues) {
  std::mt19937_64 rng(41);
  using Kernel = long (*)(const uint32_t*, const uint64_t*, size_t, const uint64_t*) noexcept;
  std::vector<std::pair<const char*, Kernel>> kernels{{"scalar", internal::common_bits_scalar}};
  if (detected_isa() >= Isa::Avx2) kernels.emplace_back("popcnt", internal::common_bits_popcnt);
  for (int trial = 0; trial < 2000; ++trial) {
    const uint32_t range = 1 + static_cast<uint32_t>(rng() % (trial % 3 == 0 ? 64 : 20000));
    std::set<uint32_t> a, b;
    const size_t na = rng() % (range + 1), nb = rng() % (range + 1);
    while (a.size() < std::min<size_t>(na, 3000)) a.insert(static_cast<uint32_t>(rng() % range));
    while (b.size() < std::min<size_t>(nb, 3000)) b.insert(static_cast<uint32_t>(rng() % range));
    std::vector<uint64_t> map((range + 63) / 64, 0);
    for (const uint32_t v : a) map[v >> 6] |= uint64_t{1} << (v & 63);
    std::vector<uint32_t> index;
    std::vector<uint64_t> bits;
    for (const uint32_t v : b) {
      if (index.empty() || index.back() != v >> 6) index.push_back(v >> 6), bits.push_back(0);
      bits.back() |= uint64_t{1} << (v & 63);
    }
    long expected = 0;
    for (const uint32_t v : b) expected += a.count(v) > 0;
    for (const auto& [name, kernel] : kernels)
      ASSERT_EQ(kernel(index.data(), bits.data(), index.size(), map.data()), expected) << name << " trial " << trial;
  }
}

// The probe's test of a posting list finds the members not yet marked for the probing member,
// in list order, and marks them, as the scalar loop does: lists of every length around the
// 16-lane blocks, members marked for it (some), for another member, or not at all, and the
// probing member itself in the list.
TEST(SetJoin, UnmarkedMembersKernelsAgree) {
  std::mt19937_64 rng(43);
  using Kernel = size_t (*)(const uint32_t*, size_t, uint32_t, uint32_t*, uint32_t*) noexcept;
  std::vector<std::pair<const char*, Kernel>> kernels{{"scalar", internal::unmarked_members_scalar}};
  if (detected_isa() >= Isa::Avx512) kernels.emplace_back("avx512", internal::unmarked_members_avx512);
  for (int trial = 0; trial < 3000; ++trial) {
    const uint32_t members = 1 + static_cast<uint32_t>(rng() % 3000), x = static_cast<uint32_t>(rng() % members);
    std::set<uint32_t> in_list;
    const size_t n = std::min<size_t>(members, rng() % 70);
    while (in_list.size() < n) in_list.insert(static_cast<uint32_t>(rng() % members));
    const std::vector<uint32_t> list(in_list.begin(), in_list.end());
    std::vector<uint32_t> start(members);
    for (auto& m : start) m = rng() % 3 == 0 ? x : rng() % 2 == 0 ? UINT32_MAX : static_cast<uint32_t>(rng() % members);
    // The oracle: the members neither x nor marked x, by their places.
    std::vector<uint32_t> want;
    for (size_t k = 0; k < n; ++k)
      if (list[k] != x && start[list[k]] != x) want.push_back(static_cast<uint32_t>(k));
    for (const auto& [name, kernel] : kernels) {
      std::vector<uint32_t> mark = start, found(n + 1, 0);
      const size_t got = kernel(list.data(), n, x, mark.data(), found.data());
      found.resize(got);
      ASSERT_EQ(found, want) << name << " trial " << trial;
      for (const uint32_t k : want) ASSERT_EQ(mark[list[k]], x) << name;
      for (uint32_t m = 0; m < members; ++m)
        if (!in_list.count(m) || m == x) {
          ASSERT_EQ(mark[m], start[m]) << name << " changed a mark outside the list";
        }
    }
  }
}

TEST(SetJoin, ThresholdExactlyReachedIsIncluded) {
  // Five shingles, four shared: J = 4 / 6; four of five, J = 4 / 5 = 0.8 exactly.
  const Sets sets = {{1, 2, 3, 4, 5}, {1, 2, 3, 4}, {1, 2, 3, 4, 6}};
  SetJoin join(all_docs(sets), [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, 0.8, 1);
  const auto got = join.all_pairs();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].a, 0u);
  EXPECT_EQ(got[0].b, 1u);
  EXPECT_DOUBLE_EQ(got[0].similarity, 0.8);
  EXPECT_EQ(got[1].a, 1u);
  EXPECT_EQ(got[1].b, 2u);
  EXPECT_DOUBLE_EQ(join.similarity(0, 2), 4.0 / 6.0);
}

TEST(SetJoin, FilterAndSubsetOfDocuments) {
  const Sets sets = messy(7, 80);
  // Every other document, and only pairs whose ids sum to an even number.
  std::vector<DocId> docs;
  for (DocId d = 0; d < sets.size(); d += 2) docs.push_back(d);
  const PairFilter keep = [](DocId a, DocId b) { return (a + b) % 4 == 0; };
  SetJoin join(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, 0.6, 2);
  std::vector<ScoredPair> expected;
  for (const auto& p : brute_force(sets, 0.6))
    if (p.a % 2 == 0 && p.b % 2 == 0 && keep(p.a, p.b)) expected.push_back(p);
  EXPECT_EQ(join.all_pairs(keep), expected);
  EXPECT_FALSE(expected.empty());
  EXPECT_THROW(join.similarity(1, 2), UsageError);
}

// Each base's two near-copies lie 600 and 1,200 documents after it: a probe finds a few
// candidates over a wide range of members, in whatever order its lists give them, and the pairs
// must still come out in (a, b) order.
TEST(SetJoin, FewCandidatesFarApartAreListedInOrder) {
  std::mt19937_64 rng(41);
  const size_t bases = 600;
  Sets sets(3 * bases);
  for (size_t i = 0; i < bases; ++i) {
    std::vector<ShingleHash> base(60);
    for (auto& x : base) x = rng();
    sets[i] = sorted_set(base);
    for (const size_t copy : {i + bases, i + 2 * bases}) {
      auto doc = base;
      for (int k = 0; k < 4; ++k) doc[rng() % doc.size()] = rng();
      sets[copy] = sorted_set(doc);
    }
  }
  const auto expected = brute_force(sets, 0.7);
  ASSERT_GT(expected.size(), 2 * bases);
  for (const int threads : {1, 2}) {
    const SetJoin join(all_docs(sets), [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, 0.7, threads);
    EXPECT_EQ(join.all_pairs(), expected) << "threads " << threads;
  }
}

// Several joins over disjoint documents (a run's groups), listed together: the brute-force pairs
// within each join's documents, in (a, b) order over all of them, whatever the threads.
TEST(SetJoin, PairsOfSeveralJoinsAreListedInOrder) {
  const Sets sets = messy(21, 150);
  const double t = 0.6;
  // Three groups, their documents interleaved in the run's order; one group alone.
  std::vector<std::vector<DocId>> groups(3);
  for (DocId d = 0; d < sets.size(); ++d) groups[d % 7 == 0 ? 0 : d % 2 == 0 ? 1 : 2].push_back(d);
  const auto group_of = [](DocId d) { return d % 7 == 0 ? 0 : d % 2 == 0 ? 1 : 2; };
  std::vector<ScoredPair> expected;
  for (const auto& p : brute_force(sets, t))
    if (group_of(p.a) == group_of(p.b)) expected.push_back(p);
  ASSERT_GT(expected.size(), 20u);
  const auto set_of = [&](DocId d) { return std::span<const ShingleHash>(sets[d]); };
  for (const int threads : {1, 3}) {
    std::vector<std::unique_ptr<SetJoin>> joins;
    for (const auto& g : groups) joins.push_back(std::make_unique<SetJoin>(g, set_of, t, threads));
    const std::vector<const SetJoin*> all = {joins[2].get(), joins[0].get(), joins[1].get()};
    std::vector<ScoredPair> got;
    size_t chunks = 0;
    SetJoin::pairs_of(all, {}, [&](std::span<const ScoredPair> c) {
      got.insert(got.end(), c.begin(), c.end());
      ++chunks;
    });
    EXPECT_EQ(got, expected) << "threads " << threads;
    EXPECT_GT(chunks, 1u);
    // Each join counts its own verifications.
    for (const auto& j : joins) EXPECT_GT(j->stats().results, 0u);
    // One join alone is what pairs() lists.
    std::vector<ScoredPair> one;
    const SetJoin* first = joins[0].get();
    SetJoin::pairs_of({&first, 1}, {}, [&](std::span<const ScoredPair> c) { one.insert(one.end(), c.begin(), c.end()); });
    EXPECT_EQ(one, joins[0]->all_pairs());
  }
  // Pairs the caller knows (every third, across the joins) are neither listed nor verified again.
  std::vector<std::unique_ptr<SetJoin>> joins;
  for (const auto& g : groups) joins.push_back(std::make_unique<SetJoin>(g, set_of, t, 2));
  const std::vector<const SetJoin*> all = {joins[0].get(), joins[1].get(), joins[2].get()};
  std::vector<ScoredPair> known, rest;
  for (size_t i = 0; i < expected.size(); ++i) (i % 3 == 0 ? known : rest).push_back(expected[i]);
  std::vector<ScoredPair> got;
  SetJoin::pairs_of(all, {}, [&](std::span<const ScoredPair> c) { got.insert(got.end(), c.begin(), c.end()); }, known);
  EXPECT_EQ(got, rest);
  uint64_t filtered = 0;
  for (const auto& j : joins) filtered += j->stats().filtered;
  EXPECT_EQ(filtered, known.size());
  // A document in two joins is refused.
  SetJoin a(std::vector<DocId>{0, 1, 2}, set_of, t, 1), b(std::vector<DocId>{2, 3}, set_of, t, 1);
  const std::vector<const SetJoin*> overlapping = {&a, &b};
  EXPECT_THROW(SetJoin::pairs_of(overlapping, {}, [](std::span<const ScoredPair>) {}), UsageError);
}

// A filter given as rows of keys (the LSH band keys) keeps what its test keeps: two joins listed
// together, one of dense families, whose members' rows are gathered and each candidate compared
// with the probing member's row, and one of small families, which asks the test. Five keys a
// row (not a multiple of the four compared a step); key c of document d is d's residue mod c + 3
// in that column, so two documents share a key when they agree mod 3, 4, 5, 6 or 7 (about 6
// pairs in 10).
TEST(SetJoin, SharedKeyRowsKeepWhatTheirTestKeeps) {
  const double t = 0.6;
  Sets sets = dense_families(29, 700);
  const size_t dense_docs = sets.size();
  for (auto& s : messy(23, 60)) sets.push_back(std::move(s));
  constexpr size_t kWidth = 5;
  const auto key = [](DocId d, size_t c) { return uint64_t{d % static_cast<DocId>(c + 3)} * 1000003 + c; };
  const auto share = [&](DocId a, DocId b) {
    for (size_t c = 0; c < kWidth; ++c)
      if (key(a, c) == key(b, c)) return true;
    return false;
  };
  size_t rows_filled = 0;
  const PairFilter keep = PairFilter::shared_key(share, kWidth, [&](std::span<const DocId> docs, std::span<uint64_t> rows) {
    ASSERT_EQ(rows.size(), docs.size() * kWidth);
    for (size_t i = 0; i < docs.size(); ++i)
      for (size_t c = 0; c < kWidth; ++c) rows[i * kWidth + c] = key(docs[i], c);
    rows_filled += docs.size();
  });
  ASSERT_TRUE(keep);
  EXPECT_EQ(keep.width(), kWidth);
  const auto group_of = [&](DocId d) { return d < dense_docs ? 0 : 1; };
  std::vector<std::vector<DocId>> groups(2);
  for (DocId d = 0; d < sets.size(); ++d) groups[group_of(d)].push_back(d);
  std::vector<ScoredPair> expected, dense_pairs;
  size_t dropped[2] = {0, 0}, kept[2] = {0, 0};
  for (const auto& p : brute_force(sets, t)) {
    if (group_of(p.a) != group_of(p.b)) continue;
    if (group_of(p.a) == 0) dense_pairs.push_back(p);
    if (share(p.a, p.b)) {
      expected.push_back(p);
      ++kept[group_of(p.a)];
    } else {
      ++dropped[group_of(p.a)];
    }
  }
  for (const int g : {0, 1}) {
    ASSERT_GT(kept[g], 20u) << g;
    ASSERT_GT(dropped[g], 20u) << g;
  }
  const auto set_of = [&](DocId d) { return std::span<const ShingleHash>(sets[d]); };
  for (const int threads : {1, 2}) {
    std::vector<std::unique_ptr<SetJoin>> joins;
    for (const auto& g : groups) joins.push_back(std::make_unique<SetJoin>(g, set_of, t, threads));
    const std::vector<const SetJoin*> all = {joins[1].get(), joins[0].get()};
    std::vector<ScoredPair> got;
    rows_filled = 0;
    SetJoin::pairs_of(all, keep, [&](std::span<const ScoredPair> c) { got.insert(got.end(), c.begin(), c.end()); });
    EXPECT_EQ(got, expected) << "threads " << threads;
    // Rows for the dense families only.
    EXPECT_GT(joins[0]->stats().dense_walks, 0u);
    EXPECT_EQ(joins[1]->stats().dense_walks, 0u);
    EXPECT_EQ(rows_filled, dense_docs);
    // The test alone, as a single pair is asked (SetJoin::connect, the small buckets).
    std::vector<ScoredPair> by_test;
    const PairFilter test_only = share;
    EXPECT_EQ(test_only.width(), 0u);
    SetJoin::pairs_of(all, test_only, [&](std::span<const ScoredPair> c) { by_test.insert(by_test.end(), c.begin(), c.end()); });
    EXPECT_EQ(by_test, expected) << "threads " << threads;
    // Which of the two each join asks: with rows that keep every pair and a test that keeps
    // none, only the dense families' pairs are listed, all of them.
    const PairFilter split = PairFilter::shared_key([](DocId, DocId) { return false; }, kWidth,
                                                    [](std::span<const DocId>, std::span<uint64_t> rows) { std::fill(rows.begin(), rows.end(), 7); });
    std::vector<ScoredPair> by_rows;
    SetJoin::pairs_of(all, split, [&](std::span<const ScoredPair> c) { by_rows.insert(by_rows.end(), c.begin(), c.end()); });
    EXPECT_EQ(by_rows, dense_pairs) << "threads " << threads;
  }
  const uint64_t x[kWidth] = {1, 2, 3, 4, 5}, y[kWidth] = {9, 9, 9, 9, 5}, z[kWidth] = {9, 9, 9, 9, 9};
  EXPECT_TRUE(PairFilter::share_key(x, y, kWidth));
  EXPECT_FALSE(PairFilter::share_key(x, z, kWidth));
  EXPECT_FALSE(PairFilter::share_key(x, y, kWidth - 1));
}

TEST(SetJoin, ConnectGivesTheComponentsOfAllPairs) {
  for (const uint64_t seed : {11u, 12u}) {
    const Sets sets = messy(seed, 150);
    const auto docs = all_docs(sets);
    for (const double t : {0.5, 0.8}) {
      const auto all = brute_force(sets, t);
      SetJoin join(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, t, 2);
      const auto edges = join.connect(sets.size(), {}, {});
      EXPECT_EQ(components(sets.size(), edges), components(sets.size(), all)) << seed << " " << t;
      // Every edge is a true pair, and it verified fewer pairs than the join found.
      for (const auto& e : edges)
        EXPECT_TRUE(std::find_if(all.begin(), all.end(), [&](const ScoredPair& p) { return p.a == e.a && p.b == e.b; }) !=
                    all.end());
      EXPECT_LE(edges.size(), all.size());
      // Known edges are used: given half of the pairs, it still ends at the same partition.
      const std::vector<ScoredPair> half(all.begin(), all.begin() + static_cast<ptrdiff_t>(all.size() / 2));
      const auto more = join.connect(sets.size(), half, {});
      EXPECT_EQ(components(sets.size(), half, more), components(sets.size(), all));
    }
  }
}

// What is connected already, given as each joined document's component, leads to the very
// edges that the known edges giving those components lead to (verify_buckets passes its
// clusters so, where a group's known pairs far outnumber the documents it joins).
TEST(SetJoin, ConnectFromComponentsEqualsConnectFromKnownEdges) {
  const Sets sets = messy(14, 150);
  const auto docs = all_docs(sets);
  const auto all = brute_force(sets, 0.5);
  ASSERT_GT(all.size(), 40u);
  SetJoin join(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, 0.5, 2);
  for (const size_t known_count : {size_t{0}, all.size() / 4, all.size() / 2}) {
    const std::vector<ScoredPair> known(all.begin(), all.begin() + static_cast<ptrdiff_t>(known_count));
    const auto from_edges = join.connect(sets.size(), known, {});
    // Each document's component as an arbitrary label: its smallest member, times 7, plus 3.
    std::vector<uint32_t> label = components(sets.size(), known);
    for (uint32_t& l : label) l = l * 7 + 3;
    const auto from_components = join.connect(label, {});
    EXPECT_EQ(from_components, from_edges) << known_count;
    EXPECT_EQ(components(sets.size(), known, from_components), components(sets.size(), all)) << known_count;
    if (known_count > 0) {
      EXPECT_LT(from_components.size(), join.connect(sets.size(), {}, {}).size());
    }
  }
  EXPECT_THROW(join.connect(std::vector<uint32_t>(3, 0), {}), UsageError);
}

// Known edges may pass through documents outside the join: a chain a - o - b through a document
// o that is not joined already connects a and b, so connect adds no edge between them. Every
// edge it returns joins two components (their count drops by one per edge).
TEST(SetJoin, ConnectFollowsKnownEdgesThroughDocumentsNotJoined) {
  const Sets sets = messy(13, 150);
  std::vector<DocId> even;
  for (DocId d = 0; d < sets.size(); d += 2) even.push_back(d);
  SetJoin join(even, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, 0.5, 2);
  std::vector<ScoredPair> even_pairs;
  for (const auto& p : brute_force(sets, 0.5))
    if (p.a % 2 == 0 && p.b % 2 == 0) even_pairs.push_back(p);
  ASSERT_GT(even_pairs.size(), 20u);
  std::vector<ScoredPair> known;  // half of the true pairs, each as a chain through the odd a + 1
  for (size_t i = 0; i < even_pairs.size(); i += 2) {
    const ScoredPair& p = even_pairs[i];
    known.push_back({p.a, p.a + 1, 1.0});
    known.push_back({p.a + 1, p.b, 1.0});
  }
  const auto count = [](const std::vector<uint32_t>& root) {
    size_t c = 0;
    for (size_t i = 0; i < root.size(); ++i) c += root[i] == i;
    return c;
  };
  const auto more = join.connect(sets.size(), known, {});
  const auto want = components(sets.size(), known, even_pairs);
  EXPECT_EQ(components(sets.size(), known, more), want);
  EXPECT_EQ(more.size(), count(components(sets.size(), known)) - count(want));
  for (const auto& e : more) EXPECT_TRUE(e.a % 2 == 0 && e.b % 2 == 0);
  // A known edge beyond the documents counted is refused.
  const std::vector<ScoredPair> beyond = {{0, static_cast<DocId>(sets.size()), 1.0}};
  EXPECT_THROW(join.connect(sets.size(), beyond, {}), UsageError);
}

TEST(SetJoin, BigClusterWithAnOutlierFirstCostsAboutOneVerificationPerDocument) {
  // 2,000 near-copies of one text after an outlier that shares a third of it: star edges from the
  // first document would all fail; connect verifies about one pair per document.
  std::mt19937_64 rng(5);
  std::vector<ShingleHash> base(300);
  for (auto& x : base) x = rng();
  Sets sets;
  sets.push_back(sorted_set(std::vector<ShingleHash>(base.begin(), base.begin() + 100)));
  for (int m = 0; m < 2000; ++m) {
    auto doc = base;
    for (int k = 0; k < 6; ++k) doc[rng() % doc.size()] = rng();
    sets.push_back(sorted_set(doc));
  }
  SetJoin join(all_docs(sets), [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, 0.8, 2);
  const auto edges = join.connect(sets.size(), {}, {});
  const auto root = components(sets.size(), edges);
  EXPECT_EQ(root[0], 0u);
  for (size_t i = 1; i < sets.size(); ++i) ASSERT_EQ(root[i], 1u);
  EXPECT_EQ(edges.size(), 1999u);
  EXPECT_LT(join.stats().verified, 3 * sets.size());
}

// A join of more members than SetJoin picks pivots for on one thread picks them in parts, one
// per thread, each member's pivot from its own part: the pairs and their similarities are those of
// the join on one thread, and members of every part are counted on their differences from a pivot.
TEST(SetJoin, PivotsPickedInPartsGiveThePairsOfOneThread) {
  std::mt19937_64 rng(17);
  Sets bases(60);
  for (auto& b : bases) {
    b.resize(200 + rng() % 200);
    for (auto& x : b) x = rng();
  }
  Sets sets;
  for (size_t i = 0; i < 5000; ++i) {
    auto doc = bases[rng() % bases.size()];
    for (auto& x : doc)
      if (rng() % 40 == 0) x = rng();
    sets.push_back(sorted_set(doc));
  }
  const auto set_of = [&](DocId d) { return std::span<const ShingleHash>(sets[d]); };
  const SetJoin one(all_docs(sets), set_of, 0.8, 1);
  const auto want = one.all_pairs();
  ASSERT_GT(want.size(), 100000u);
  for (const int threads : {2, 3}) {
    const SetJoin parts(all_docs(sets), set_of, 0.8, threads);
    EXPECT_EQ(parts.all_pairs(), want) << threads;
    EXPECT_GT(parts.stats().by_delta, want.size() / 10) << threads;
  }
}

TEST(SetJoin, RejectsBadArguments) {
  const Sets sets = {{1, 2}, {1, 2}};
  auto set_of = [&](DocId d) { return std::span<const ShingleHash>(sets[d]); };
  const std::vector<DocId> docs = {0, 1}, unsorted = {1, 0};
  EXPECT_THROW(SetJoin(docs, set_of, 0.0, 1), UsageError);
  EXPECT_THROW(SetJoin(docs, set_of, 1.5, 1), UsageError);
  EXPECT_THROW(SetJoin(unsorted, set_of, 0.5, 1), UsageError);
  SetJoin join(docs, set_of, 1.0, 1);
  EXPECT_EQ(join.all_pairs().size(), 1u);
}
