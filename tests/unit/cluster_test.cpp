#include "neardup/cluster.h"

#include <gtest/gtest.h>

#include "neardup/union_find.h"

#include <algorithm>
#include <random>

using namespace neardup;

TEST(Cluster, KeepFirstAndLongest) {
  // Components {0, 2, 4}, {1, 5}, {3}.
  const std::vector<ScoredPair> edges{{2, 4, 0.9}, {0, 2, 0.9}, {1, 5, 0.85}};
  const std::vector<uint32_t> len{10, 5, 30, 7, 30, 50};
  const Clustering first = cluster_documents(6, edges, KeepPolicy::First, len);
  EXPECT_EQ(first.keeper, (std::vector<DocId>{0, 1, 0, 3, 0, 1}));
  EXPECT_EQ(first.clusters, 2u);
  EXPECT_EQ(first.removed, 3u);
  const Clustering longest = cluster_documents(6, edges, KeepPolicy::Longest, len);
  EXPECT_EQ(longest.keeper, (std::vector<DocId>{2, 5, 2, 3, 2, 5}));  // tie 2 vs 4 goes to the first
  EXPECT_EQ(longest.removed, 3u);
}

TEST(Cluster, IndependentOfEdgeOrder) {
  std::mt19937_64 rng(3);
  std::vector<ScoredPair> edges;
  for (int i = 0; i < 300; ++i) {
    DocId a = rng() % 200, b = rng() % 200;
    if (a == b) continue;
    edges.push_back({std::min(a, b), std::max(a, b), 0.9});
  }
  std::vector<uint32_t> len(200);
  for (auto& l : len) l = rng() % 10;
  const Clustering ref = cluster_documents(200, edges, KeepPolicy::Longest, len);
  for (int t = 0; t < 5; ++t) {
    std::shuffle(edges.begin(), edges.end(), rng);
    EXPECT_EQ(cluster_documents(200, edges, KeepPolicy::Longest, len).keeper, ref.keeper);
  }
}

// A union-find given up for its representatives names each element's smallest set member, as
// find() does, for random unions in any order.
TEST(UnionFind, RepresentativesAreTheSmallestOfEachSet) {
  std::mt19937_64 rng(68);
  for (int trial = 0; trial < 20; ++trial) {
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 2000);
    UnionFind uf(n);
    for (uint32_t k = 0; k < n; ++k) uf.unite(static_cast<uint32_t>(rng() % n), static_cast<uint32_t>(rng() % n));
    std::vector<uint32_t> want(n), smallest(n, UINT32_MAX);
    for (uint32_t x = 0; x < n; ++x) want[x] = uf.find(x);
    for (uint32_t x = 0; x < n; ++x) smallest[want[x]] = std::min(smallest[want[x]], x);
    const std::vector<uint32_t> got = std::move(uf).representatives();
    ASSERT_EQ(got, want);
    for (uint32_t x = 0; x < n; ++x) ASSERT_EQ(got[x], smallest[got[x]]) << x;
  }
}
