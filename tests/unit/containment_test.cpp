// The exact containment join and the exact index searches (containment, top k) against brute
// force, on planted passages: parts of sets copied with edits into other, larger sets, over
// shared boilerplate.
#include "neardup/containment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "neardup/set_search.h"
#include "neardup/shingle.h"

using namespace neardup;

namespace containment_test {

using Sets = std::vector<std::vector<ShingleHash>>;

size_t common(const std::vector<ShingleHash>& a, const std::vector<ShingleHash>& b) {
  std::vector<ShingleHash> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both.size();
}

// Hosts of 20-2,000 values; passages of 5-60% of a host (or of a piece of boilerplate), each value
// replaced with probability 0-30%, planted into 1-3 other hosts; some sets empty, tiny or copied.
Sets planted(uint64_t seed, size_t hosts) {
  std::mt19937_64 rng(seed);
  std::vector<ShingleHash> boilerplate(300);
  for (auto& x : boilerplate) x = rng();
  Sets sets;
  for (size_t h = 0; h < hosts; ++h) {
    std::vector<ShingleHash> s(rng() % 7 == 0 ? rng() % 4 : 20 + rng() % 2000);
    for (auto& x : s) x = rng() % 5 == 0 ? boilerplate[rng() % boilerplate.size()] : rng();
    sets.push_back(sorted_set(s));
  }
  for (size_t p = 0; p < hosts; ++p) {
    const auto& from = rng() % 6 == 0 ? boilerplate : sets[rng() % hosts];
    if (from.size() < 4) continue;
    const double share = 0.05 + 0.55 * std::uniform_real_distribution<double>(0, 1)(rng);
    const double edit = 0.3 * std::uniform_real_distribution<double>(0, 1)(rng);
    const size_t len = std::max<size_t>(1, static_cast<size_t>(share * static_cast<double>(from.size())));
    const size_t at = rng() % (from.size() - len + 1);
    std::vector<ShingleHash> passage(from.begin() + static_cast<ptrdiff_t>(at), from.begin() + static_cast<ptrdiff_t>(at + len));
    for (auto& x : passage)
      if (std::uniform_real_distribution<double>(0, 1)(rng) < edit) x = rng();
    sets.push_back(sorted_set(passage));  // the passage alone, as a query or a short document
    for (size_t k = rng() % 4; k > 0; --k) {
      auto& host = sets[rng() % hosts];
      host.insert(host.end(), passage.begin(), passage.end());
      host = sorted_set(host);
    }
  }
  for (size_t c = 0; c < hosts / 10; ++c) sets.push_back(sets[rng() % sets.size()]);
  return sets;
}

std::vector<ScoredPair> brute_force_pairs(const Sets& sets, const std::vector<DocId>& docs, double t) {
  const ExactThreshold th = ExactThreshold::from(t);
  std::vector<ScoredPair> out;
  for (size_t i = 0; i < docs.size(); ++i)
    for (size_t j = i + 1; j < docs.size(); ++j) {
      const auto& a = sets[docs[i]];
      const auto& b = sets[docs[j]];
      const size_t small = std::min(a.size(), b.size());
      if (small == 0) continue;
      const size_t c = common(a, b);
      if (c >= th.min_overlap(small)) out.push_back({docs[i], docs[j], static_cast<double>(c) / static_cast<double>(small)});
    }
  return out;
}

TEST(Containment, PairsEqualBruteForce) {
  for (const uint64_t seed : {1, 2, 3}) {
    const Sets sets = planted(seed, 120);
    std::vector<DocId> docs;
    for (DocId d = 0; d < sets.size(); ++d)
      if (d % 11 != 3) docs.push_back(d);  // a join over some of the documents
    const auto set_of = [&](DocId d) { return std::span<const ShingleHash>(sets[d]); };
    for (const double t : {0.3, 0.5, 0.8, 0.95, 1.0}) {
      const auto expect = brute_force_pairs(sets, docs, t);
      for (const int threads : {1, 3}) {
        ContainmentStats st;
        const auto got = containment_pairs(docs, set_of, t, threads, &st);
        ASSERT_EQ(got, expect) << "seed " << seed << " t " << t << " threads " << threads;
        EXPECT_EQ(st.results, expect.size());
        EXPECT_LE(st.verified, st.candidates);
      }
      if (t == 0.5) {
        EXPECT_GT(expect.size(), 50u) << "the planted passages make pairs";
      }
    }
  }
}

TEST(Containment, EdgeCases) {
  const Sets sets = {{}, {1}, {1}, {1, 2, 3, 4}, {5, 6}, {1, 2, 3, 4, 5, 6, 7, 8}};
  const std::vector<DocId> docs = {0, 1, 2, 3, 4, 5};
  const auto set_of = [&](DocId d) { return std::span<const ShingleHash>(sets[d]); };
  // {1} in {1}, {1} in {1,2,3,4}, {1} in the 8; {1,2,3,4} and {5,6} in the 8.
  const std::vector<ScoredPair> expect = {{1, 2, 1.0}, {1, 3, 1.0}, {1, 5, 1.0}, {2, 3, 1.0}, {2, 5, 1.0}, {3, 5, 1.0}, {4, 5, 1.0}};
  EXPECT_EQ(containment_pairs(docs, set_of, 1.0, 2), expect);
  EXPECT_TRUE(containment_pairs(std::span<const DocId>(docs).first(1), set_of, 0.5, 1).empty());
}

struct Oracle {
  Sets sets;
  std::vector<uint8_t> removed;
  std::vector<IndexMatch> containing(const std::vector<ShingleHash>& q, double t) const {
    std::vector<IndexMatch> out;
    const uint64_t need = ExactThreshold::from(t).min_overlap(q.size());
    for (DocId d = 0; d < sets.size(); ++d) {
      const size_t c = common(q, sets[d]);
      if (!removed[d] && !q.empty() && c >= need) out.push_back({d, static_cast<double>(c) / static_cast<double>(q.size())});
    }
    std::sort(out.begin(), out.end(), better_match);
    return out;
  }
  // The k documents of highest Jaccard with q (above 0), best first, ties by DocId.
  std::vector<IndexMatch> top(const std::vector<ShingleHash>& q, size_t k) const {
    std::vector<IndexMatch> all;
    for (DocId d = 0; d < sets.size(); ++d) {
      const double j = jaccard(q, sets[d]);
      if (!removed[d] && j > 0) all.push_back({d, j});
    }
    std::sort(all.begin(), all.end(), better_match);
    if (all.size() > k) all.resize(k);
    return all;
  }
};

TEST(SetSearch, ContainingAndTopEqualBruteForce) {
  const Sets sets = planted(7, 300);
  Oracle oracle{sets, std::vector<uint8_t>(sets.size(), 0)};
  for (size_t d = 0; d < sets.size(); d += 13) oracle.removed[d] = 1;
  const auto set_of = [&](DocId d) { return std::span<const ShingleHash>(sets[d]); };
  const auto skip = [&](DocId d) { return oracle.removed[d] != 0; };
  // Extended as an index's insertions extend it: segments, merged, and a tail compared one by one.
  SegmentedSearch search;
  std::mt19937_64 rng(11);
  size_t found = 0, most_segments = 0;
  for (const size_t slots : {size_t{40}, sets.size() * 2 / 3, sets.size() * 2 / 3 + 130, sets.size()}) {
    search = search.extended(slots, set_of, skip, 2);
    EXPECT_LE(search.end(), slots);
    EXPECT_LT(slots - search.end(), SegmentedSearch::kTail);
    most_segments = std::max(most_segments, search.segments());
    Oracle upto{Sets(sets.begin(), sets.begin() + static_cast<ptrdiff_t>(slots)), oracle.removed};
    for (size_t qi = 0; qi < 25; ++qi) {
      std::vector<ShingleHash> q = sets[rng() % sets.size()];
      if (qi % 3 == 1 && q.size() > 4) q.resize(q.size() / 3);  // a part of a set
      if (qi % 5 == 2) q.push_back(rng()), q = sorted_set(q);  // with a value no set has
      for (const double t : {0.4, 0.7, 1.0}) {
        std::vector<IndexMatch> got;
        search.containing(q, t, set_of, skip, slots, got);
        ASSERT_EQ(got, upto.containing(q, t)) << "slots " << slots << " query " << qi << " t " << t;
        found += got.size();
      }
      for (const size_t k : {1, 5, 20}) {
        std::vector<IndexMatch> got;
        search.most_similar(q, k, set_of, skip, slots, got);
        ASSERT_EQ(got, upto.top(q, k)) << "slots " << slots << " query " << qi << " k " << k;
      }
    }
  }
  EXPECT_GE(most_segments, 2u) << "the insertions made several segments";
  EXPECT_GT(found, 100u);
}

}  // namespace containment_test
