// LSH recall against the exact join, on planted corpora with big, messy clusters: every pair the
// S-curve promises is reported, clusters connect everything they should, more sensitive bands
// report a superset, and the leader clustering keeps its guarantee.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "neardup/union_find.h"
#include "neardup/lsh_index.h"
#include "neardup/pipeline.h"
#include "neardup/shingle.h"
#include "neardup/setjoin.h"
#include "test_util.h"

using namespace neardup;

namespace {

// Families of documents from a 3,000-word vocabulary: a base text, members that replace 0-12% of
// its words (so pairs cover the whole range of similarities), long boilerplate shared across
// families (a licence header, in part of them), and in every third family an outlier first: a
// third of the base plus its own words, so that the family's buckets often start with a
// document the others are not similar to.
std::string planted_corpus(const test::TempDir& dir, uint64_t seed, size_t families, std::string name = "planted.jsonl") {
  std::mt19937_64 rng(seed);
  std::vector<std::string> vocab(3000);
  for (size_t i = 0; i < vocab.size(); ++i) vocab[i] = "w" + std::to_string(i) + "x" + std::to_string(rng() % 97);
  auto word = [&] { return vocab[rng() % vocab.size()]; };
  std::vector<std::string> licence(120);
  for (auto& w : licence) w = word();
  const std::string path = dir.file(name);
  std::ofstream out(path);
  size_t id = 0;
  auto emit = [&](const std::vector<std::string>& words) {
    std::string text;
    for (const auto& w : words) text += w + ' ';
    out << "{\"id\":\"d" << id++ << "\",\"text\":\"" << text << "\"}\n";
  };
  for (size_t f = 0; f < families; ++f) {
    std::vector<std::string> base(40 + rng() % 300);
    for (auto& w : base) w = word();
    if (rng() % 2 == 0) base.insert(base.begin(), licence.begin(), licence.end());
    if (f % 3 == 0) {
      std::vector<std::string> outlier(base.begin(), base.begin() + static_cast<ptrdiff_t>(base.size() / 3));
      for (size_t i = 0; i < base.size() / 2; ++i) outlier.push_back(word());
      emit(outlier);
    }
    const size_t members = 2 + rng() % (f % 5 == 0 ? 90 : 12);
    for (size_t m = 0; m < members; ++m) {
      auto doc = base;
      const double change = 0.004 * static_cast<double>(rng() % 31);
      for (auto& w : doc)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < change) w = word();
      emit(doc);
    }
  }
  return path;
}

std::vector<ScoredPair> run_pairs(const std::string& corpus, const std::string& spec) {
  RunOptions o;
  o.spec = PipelineSpec::parse(spec);
  o.tuning.threads = 2;
  Pipeline p({corpus}, o);
  p.run(Pipeline::Mode::Pairs);
  std::vector<ScoredPair> all;  // streamed (the default): the pairs within clusters are found here
  p.each_pair([&](std::span<const ScoredPair> chunk) { all.insert(all.end(), chunk.begin(), chunk.end()); });
  return all;
}

std::set<std::pair<DocId, DocId>> keys(const std::vector<ScoredPair>& v) {
  std::set<std::pair<DocId, DocId>> s;
  for (const auto& p : v) s.insert({p.a, p.b});
  return s;
}

}  // namespace

// The exact method against brute force: every pair's Jaccard from the shingle sets, decided in
// integers.
TEST(Recall, ExactMethodEqualsBruteForce) {
  test::TempDir d;
  const std::string corpus = planted_corpus(d, 3, 60);
  for (const int k : {3, 5}) {
    for (const double t : {0.5, 0.8}) {
      // The sets, as the pipeline computes them.
      std::vector<std::vector<ShingleHash>> sets;
      {
        ShingleOptions so;
        so.k = k;
        Shingler sh(so);
        std::ifstream in(corpus);
        std::string line;
        while (std::getline(in, line)) {
          const size_t a = line.find("\"text\":\"") + 8;
          sets.push_back(sh.shingle_set(line.substr(a, line.rfind('"') - a)));
        }
      }
      const ExactThreshold thr = ExactThreshold::from(t);
      std::vector<ScoredPair> expected;
      for (DocId a = 0; a < sets.size(); ++a)
        for (DocId b = a + 1; b < sets.size(); ++b) {
          std::vector<ShingleHash> common;
          std::set_intersection(sets[a].begin(), sets[a].end(), sets[b].begin(), sets[b].end(), std::back_inserter(common));
          if (thr.reached(common.size(), sets[a].size(), sets[b].size())) expected.push_back({a, b, jaccard(sets[a], sets[b])});
        }
      const auto got = run_pairs(corpus, "words:" + std::to_string(k) + " exact verify:" + std::to_string(t));
      ASSERT_EQ(got, expected) << "K " << k << " t " << t;
      ASSERT_GT(expected.size(), 100u);
    }
  }
}

// Per 0.05-wide bin of true similarity, the share of the exact pairs that LSH reports is at
// least the S-curve at the bin's lower edge minus 0.01 (bins with enough pairs to tell), for
// both sketches, four thresholds and two shingle sizes. Before the buckets were completed,
// star edges from outliers lost 14-18% of such pairs on real corpora.
TEST(Recall, PerBinRecallKeepsTheSCurvesPromise) {
  test::TempDir d;
  const std::string corpus = planted_corpus(d, 17, 300);
  for (const int k : {3, 5}) {
    for (const double t : {0.5, 0.7, 0.8, 0.9}) {
      const std::string tail = " verify:" + std::to_string(t);
      const auto exact = run_pairs(corpus, "words:" + std::to_string(k) + " exact" + tail);
      ASSERT_GT(exact.size(), 1000u);
      for (const char* method : {"oph", "minhash"}) {
        const std::string spec = "words:" + std::to_string(k) + " " + method + ":128" + tail;
        const PipelineSpec resolved = PipelineSpec::parse(spec).resolved();
        const auto got = keys(run_pairs(corpus, spec));
        std::map<int, std::pair<size_t, size_t>> bins;  // bin -> (found, total)
        for (const auto& p : exact) {
          const int bin = static_cast<int>(std::floor(p.similarity / 0.05 + 1e-9));
          ++bins[bin].second;
          bins[bin].first += got.count({p.a, p.b});
        }
        for (const auto& [bin, ft] : bins) {
          if (ft.second < 100) continue;  // too few pairs to tell
          const double lo = bin * 0.05;
          const double promise = lsh_probability(std::max(lo, t), resolved.lsh.bands, resolved.lsh.rows);
          const double recall = static_cast<double>(ft.first) / static_cast<double>(ft.second);
          EXPECT_GE(recall, promise - 0.01) << spec << " bin [" << lo << ", " << lo + 0.05 << "): " << ft.first << "/"
                                            << ft.second << ", S-curve " << promise;
        }
        // And nothing below the threshold or beyond the exact pairs.
        for (const auto& key : got) EXPECT_TRUE(std::binary_search(exact.begin(), exact.end(), ScoredPair{key.first, key.second, 0},
                                                                   [](const ScoredPair& x, const ScoredPair& y) {
                                                                     return x.a != y.a ? x.a < y.a : x.b < y.b;
                                                                   }));
      }
    }
  }
}

// More sensitive bands report a superset: a 6-row band is two 3-row bands of the same rows, and
// a 3-row band three 1-row ones.
TEST(Recall, MoreSensitiveBandsReportASuperset) {
  test::TempDir d;
  const std::string corpus = planted_corpus(d, 23, 100);
  for (const char* method : {"oph", "minhash"}) {
    const auto strict = keys(run_pairs(corpus, std::string("words:3 ") + method + ":128 lsh:21x6 verify:0.7"));
    const auto medium = keys(run_pairs(corpus, std::string("words:3 ") + method + ":128 lsh:42x3 verify:0.7"));
    const auto loose = keys(run_pairs(corpus, std::string("words:3 ") + method + ":128 lsh:126x1 verify:0.7"));
    EXPECT_TRUE(std::includes(medium.begin(), medium.end(), strict.begin(), strict.end())) << method;
    EXPECT_TRUE(std::includes(loose.begin(), loose.end(), medium.begin(), medium.end())) << method;
    EXPECT_GT(strict.size(), 500u);
  }
}

// dedup removes every removable document (those with a pair of J >= t, minus one per component
// of the exact graph) that its bands reach, on clusters whose first member is an outlier; the
// leader clustering keeps every removed document at J >= t from the one kept in its place.
TEST(Recall, DedupRemovesTheRemovableAndLeaderKeepsItsGuarantee) {
  test::TempDir d;
  const std::string corpus = planted_corpus(d, 31, 150);
  const auto exact = run_pairs(corpus, "words:3 exact verify:0.8");
  RunOptions o;
  o.tuning.threads = 2;
  size_t n = 0;
  {
    o.spec = PipelineSpec::parse("words:3 exact verify:0.8");
    Pipeline p({corpus}, o);
    p.run(Pipeline::Mode::Dedup);
    n = p.size();
  }
  UnionFind uf(n);
  std::set<DocId> paired;
  for (const auto& e : exact) {
    uf.unite(e.a, e.b);
    paired.insert(e.a);
    paired.insert(e.b);
  }
  std::set<DocId> roots;
  for (const DocId x : paired) roots.insert(uf.find(x));
  const size_t removable = paired.size() - roots.size();
  ASSERT_GT(removable, 500u);
  for (const char* spec : {"words:3 oph:128 verify:0.8", "words:3 minhash:128 verify:0.8", "words:3 exact verify:0.8"}) {
    o.spec = PipelineSpec::parse(spec);
    o.cluster = ClusterMode::Components;
    o.tuning.keep_sets = true;  // for similarity() after the run
    Pipeline p({corpus}, o);
    p.run(Pipeline::Mode::Dedup);
    EXPECT_GE(static_cast<double>(p.stats().removed), 0.995 * static_cast<double>(removable)) << spec;
    EXPECT_LE(p.stats().removed, removable) << spec;
    // Each removed document's similarity to its kept one, taken from their verified pair where
    // they have one, else merged: what similarity() gives, to the last bit.
    size_t at = 0;
    for (DocId i = 0; i < p.clustering().keeper.size(); ++i)
      if (!p.clustering().kept(i)) {
        EXPECT_EQ(p.removed_similarity()[at++], p.similarity(i, p.clustering().keeper[i])) << spec << " " << p.id(i);
      }
    EXPECT_EQ(at, p.stats().removed) << spec;

    o.cluster = ClusterMode::Leader;
    o.tuning.keep_sets = true;  // for similarity() after the run
    Pipeline l({corpus}, o);
    l.run(Pipeline::Mode::Dedup);
    const Clustering& c = l.clustering();
    EXPECT_GT(l.stats().removed, 0u);
    EXPECT_LE(l.stats().removed, p.stats().removed);
    EXPECT_EQ(l.stats().removed_below_threshold, 0u);
    size_t k = 0;
    for (DocId i = 0; i < c.keeper.size(); ++i) {
      if (c.kept(i)) continue;
      ASSERT_TRUE(c.kept(c.keeper[i])) << spec;
      EXPECT_GE(l.similarity(i, c.keeper[i]) + 1e-12, 0.8) << spec << " " << l.id(i) << " -> " << l.id(c.keeper[i]);
      // What --removed prints, taken while each group was verified, is the same similarity.
      EXPECT_EQ(l.removed_similarity()[k++], l.similarity(i, c.keeper[i])) << spec;
      EXPECT_LT(c.keeper[i], i) << "keep order is input order";
    }
    // Without keep_sets the sets are let go group by group: the same clusters and similarities,
    // and similarity() refuses rather than answer from a missing set.
    o.tuning.keep_sets = false;
    Pipeline r({corpus}, o);
    r.run(Pipeline::Mode::Dedup);
    EXPECT_EQ(r.clustering().keeper, c.keeper) << spec;
    EXPECT_TRUE(std::equal(r.removed_similarity().begin(), r.removed_similarity().end(), l.removed_similarity().begin(),
                           l.removed_similarity().end())) << spec;
    if (o.spec.method != SketchMethod::Exact) {
      for (DocId i = 0; i < c.keeper.size(); ++i)
        if (!c.kept(i)) {
          EXPECT_THROW(r.similarity(i, c.keeper[i]), UsageError) << spec;
          break;
        }
    }
  }
}

// Components chain: the summary counts the removed documents less similar than t to their kept
// one, and the count is right.
TEST(Recall, RemovedBelowThresholdIsCounted) {
  test::TempDir d;
  const std::string corpus = planted_corpus(d, 41, 120);
  RunOptions o;
  o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.8");
  o.tuning.keep_sets = true;  // for similarity() after the run
  Pipeline p({corpus}, o);
  p.run(Pipeline::Mode::Dedup);
  uint64_t below = 0;
  for (DocId i = 0; i < p.size(); ++i)
    if (!p.clustering().kept(i) && p.similarity(i, p.clustering().keeper[i]) < 0.8 - 1e-12) ++below;
  EXPECT_EQ(p.stats().removed_below_threshold, below);
  EXPECT_GT(below, 0u) << "the planted corpus should hold chains";
}
