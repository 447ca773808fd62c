#include "internal/testing.h"
#include "neardup/pipeline.h"

#include "neardup/allpairs.h"

#include <gtest/gtest.h>

#include "internal/seen_keys.h"
#include "pipeline/document_table.h"
#include "pipeline/sketch_store.h"
#include "neardup/union_find.h"

#include <sys/vfs.h>

#include <filesystem>
#include <tuple>
#include <algorithm>
#include <map>
#include <random>
#include <thread>
#include <atomic>
#include <set>
#include <sstream>
#include <cstring>

#include "neardup/io/stream.h"
#include "neardup/io/writer.h"
#include "neardup/error.h"
#include "test_util.h"

using namespace neardup;

namespace {

using PairKey = std::pair<std::string, std::string>;
PairKey key(std::string_view a, std::string_view b) {
  return a < b ? PairKey{std::string(a), std::string(b)} : PairKey{std::string(b), std::string(a)};
}

std::map<PairKey, double> load_truth(const std::string& path) {
  std::map<PairKey, double> t;
  std::istringstream in(io::read_all(path, path));
  std::string a, b;
  double j;
  while (in >> a >> b >> j) t[key(a, b)] = j;
  return t;
}

std::map<PairKey, double> run_pairs(const std::vector<std::string>& inputs, const std::string& spec, int threads = 2) {
  RunOptions o;
  o.spec = PipelineSpec::parse(spec);
  o.tuning.threads = threads;
  Pipeline p(inputs, o);
  p.run(Pipeline::Mode::Pairs);
  std::map<PairKey, double> out;
  p.each_pair([&](std::span<const ScoredPair> chunk) {  // pairs() refuses where the pairs are streamed from a join
    for (const auto& e : chunk) {
      EXPECT_LT(e.a, e.b);
      EXPECT_TRUE(out.emplace(key(p.id(e.a), p.id(e.b)), e.similarity).second) << "pair reported twice";
    }
  });
  return out;
}

// The acceptance check of the foundation on a real corpus with exact ground truth: at threshold
// 0.8 over word 3-shingles, >= 99% of the truth pairs with J >= 0.85 are found, no pair below 0.8
// is reported, and every reported similarity is the exact one.
void check_real_corpus(const std::string& corpus, const std::string& truth_path,
                       const std::string& spec = "words:3 minhash:128 verify:0.8") {
  const auto truth = load_truth(truth_path);
  ASSERT_FALSE(truth.empty());
  const auto got = run_pairs({corpus}, spec);
  size_t want = 0, found = 0;
  for (const auto& [k, j] : truth)
    if (j >= 0.85) {
      ++want;
      found += got.count(k);
    }
  EXPECT_GE(static_cast<double>(found), 0.99 * static_cast<double>(want)) << found << "/" << want;
  for (const auto& [k, j] : got) {
    const auto it = truth.find(k);
    ASSERT_NE(it, truth.end()) << k.first << " " << k.second << " reported at " << j << ", truth J < 0.5";
    EXPECT_GE(it->second, 0.8) << k.first << " " << k.second;
    EXPECT_NEAR(j, it->second, 1e-6) << k.first << " " << k.second;
  }
}

// The pairs a finished run writes, as the file's text.
std::string written_pairs(Pipeline& p, const std::string& path) {
  {
    io::AtomicFile out(path);
    p.write_pairs(out);
    out.commit();
  }
  return test::read_file(path);
}

}  // namespace

TEST(RealData, MmdsSampleInRepo) {
  check_real_corpus(NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst", NEARDUP_SAMPLE_DIR "/mmds-articles-2500.truth.tsv.zst");
}

TEST(RealData, SpamAssassin) {
  const std::string dir = NEARDUP_CORPORA_DIR;
  if (!std::filesystem::exists(dir + "/spamassassin.jsonl.zst"))
    GTEST_SKIP() << "shared corpora not found at " << dir << " (configure NEARDUP_CORPORA_DIR)";
  check_real_corpus(dir + "/spamassassin.jsonl.zst", dir + "/spamassassin.truth.tsv.zst");
}

// One-permutation hashing with densification meets the same acceptance as k-permutation MinHash.
TEST(RealData, OphMmdsSampleInRepo) {
  check_real_corpus(NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst", NEARDUP_SAMPLE_DIR "/mmds-articles-2500.truth.tsv.zst",
                    "words:3 oph:128 verify:0.8");
}

TEST(RealData, OphSpamAssassin) {
  const std::string dir = NEARDUP_CORPORA_DIR;
  if (!std::filesystem::exists(dir + "/spamassassin.jsonl.zst")) GTEST_SKIP() << "shared corpora not found";
  check_real_corpus(dir + "/spamassassin.jsonl.zst", dir + "/spamassassin.truth.tsv.zst", "words:3 oph:128 verify:0.8");
}

// The bottom-k path with exact verification meets the same acceptance on real data: its join runs
// at an estimate threshold lowered by the estimator's error.
TEST(RealData, BottomKMmdsSampleInRepo) {
  check_real_corpus(NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst", NEARDUP_SAMPLE_DIR "/mmds-articles-2500.truth.tsv.zst",
                    "words:3 bottomk:128 verify:0.8");
}

TEST(RealData, BottomKSpamAssassin) {
  const std::string dir = NEARDUP_CORPORA_DIR;
  if (!std::filesystem::exists(dir + "/spamassassin.jsonl.zst")) GTEST_SKIP() << "shared corpora not found";
  check_real_corpus(dir + "/spamassassin.jsonl.zst", dir + "/spamassassin.truth.tsv.zst", "words:3 bottomk:128 verify:0.8");
  check_real_corpus(dir + "/spamassassin.jsonl.zst", dir + "/spamassassin.truth.tsv.zst", "words:3 bottomk:64 verify:0.8");
}

TEST(RealData, SpamAssassinFiveShinglesWithEstimate) {
  const std::string dir = NEARDUP_CORPORA_DIR;
  if (!std::filesystem::exists(dir + "/spamassassin.truth.k5.tsv.zst")) GTEST_SKIP() << "shared corpora not found";
  const auto truth = load_truth(dir + "/spamassassin.truth.k5.tsv.zst");
  const auto got = run_pairs({dir + "/spamassassin.jsonl.zst"}, "words:5 minhash:128 estimate:0.8");
  size_t want = 0, found = 0, bad = 0;
  for (const auto& [k, j] : truth)
    if (j >= 0.9) ++want, found += got.count(k);
  for (const auto& [k, j] : got) bad += !truth.count(k) || truth.at(k) < 0.7;
  EXPECT_GE(static_cast<double>(found), 0.98 * static_cast<double>(want)) << found << "/" << want;
  EXPECT_LE(static_cast<double>(bad), 0.01 * static_cast<double>(got.size())) << bad << "/" << got.size();
}

// Pairs mode against a brute-force oracle on a generated corpus with planted near-duplicates.
class PipelineOracle : public ::testing::TestWithParam<const char*> {};

TEST_P(PipelineOracle, PairsMatchBruteForce) {
  test::TempDir d;
  std::mt19937_64 rng(99);
  std::string jsonl;
  std::vector<std::string> texts;
  for (int base = 0; base < 120; ++base) {
    auto words = test::random_words(rng, 80 + rng() % 150);
    const int copies = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < copies; ++c) {
      auto w = words;
      const double rate = c == 0 ? 0 : 0.004 * static_cast<double>(rng() % 25);
      for (auto& x : w)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < rate) x = "e" + std::to_string(rng());
      texts.push_back(test::join(w));
    }
  }
  for (size_t i = 0; i < texts.size(); ++i)
    jsonl += "{\"id\": \"d" + std::to_string(i) + "\", \"text\": \"" + texts[i] + "\"}\n";
  test::write_file(d.file("c.jsonl"), jsonl);

  const double t = 0.75;
  Shingler sh({ShingleKind::Words, 5, kDefaultSeed});
  std::vector<std::vector<ShingleHash>> sets;
  for (const auto& x : texts) sets.push_back(sh.shingle_set(x));
  std::map<PairKey, double> truth;
  for (size_t a = 0; a < texts.size(); ++a)
    for (size_t b = a + 1; b < texts.size(); ++b)
      if (const double j = jaccard(sets[a], sets[b]); j >= t)
        truth[key("d" + std::to_string(a), "d" + std::to_string(b))] = j;
  ASSERT_GT(truth.size(), 60u);

  const auto got = run_pairs({d.file("c.jsonl")}, GetParam());
  size_t found = 0, want_margin = 0, found_margin = 0;
  for (const auto& [k, j] : truth) {
    found += got.count(k);
    if (j >= t + 0.05) ++want_margin, found_margin += got.count(k);
  }
  for (const auto& [k, j] : got) {
    ASSERT_TRUE(truth.count(k)) << "false positive " << k.first << " " << k.second;  // precision 1
    EXPECT_DOUBLE_EQ(j, truth.at(k));
  }
  EXPECT_GE(static_cast<double>(found_margin), 0.99 * static_cast<double>(want_margin));
  EXPECT_GE(static_cast<double>(found), 0.95 * static_cast<double>(truth.size()));
}

INSTANTIATE_TEST_SUITE_P(Methods, PipelineOracle,
                         ::testing::Values("words:5 minhash:128 verify:0.75", "words:5 bottomk:128 verify:0.75",
                                           "words:5 bottomk:32 verify:0.75"));

// bottomk with estimate: every reported pair is exactly the set of pairs whose bottom-k estimate
// reaches the threshold (the join misses none of them).
TEST(Pipeline, BottomKEstimatePairsAreExactlyThoseAboveThreshold) {
  const std::string corpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";
  RunOptions o;
  o.spec = PipelineSpec::parse("words:3 bottomk:64 estimate:0.3");
  o.tuning.threads = 2;
  Pipeline p({corpus}, o);
  p.run(Pipeline::Mode::Pairs);
  const Fingerprints& f = p.fingerprints();
  std::vector<ScoredPair> want;
  for (DocId a = 0; a < f.count(); ++a)
    for (DocId b = a + 1; b < f.count(); ++b)
      if (const double e = bottomk_estimate(f[a], f[b], 64); e + kSimilarityEpsilon >= 0.3) want.push_back({a, b, e});
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(p.pairs(), want);
}

TEST(Pipeline, BottomKTopPairs) {
  const std::string corpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";
  for (VerifyMode mode : {VerifyMode::Estimate, VerifyMode::Exact}) {
    RunOptions o;
    o.spec = PipelineSpec::parse("words:3 bottomk:128");
    o.spec.verify = mode;
    o.top = 15;
    o.tuning.threads = 2;
    Pipeline p({corpus}, o);
    p.run(Pipeline::Mode::Pairs);
    ASSERT_EQ(p.pairs().size(), 15u);
    for (size_t i = 1; i < p.pairs().size(); ++i) EXPECT_TRUE(better_pair(p.pairs()[i - 1], p.pairs()[i]));
    if (mode == VerifyMode::Estimate) {
      EXPECT_EQ(p.pairs(), top_pairs_brute_force(p.fingerprints(), 15, PairScore::BottomKEstimate));
    } else {
      // The exact top 15 by the ground truth (it lists every pair with J >= 0.5).
      const auto truth = load_truth(NEARDUP_SAMPLE_DIR "/mmds-articles-2500.truth.tsv.zst");
      std::vector<double> best;
      for (const auto& [k, j] : truth) best.push_back(j);
      std::sort(best.rbegin(), best.rend());
      for (size_t i = 0; i < 15; ++i) EXPECT_NEAR(p.pairs()[i].similarity, best[i], 1e-6) << i;
    }
  }
}

// The same inputs give the same results whatever the number of threads.
TEST(Pipeline, DeterministicAcrossThreadCounts) {
  const std::string corpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";
  const auto one = run_pairs({corpus}, "words:3 minhash:64 verify:0.5", 1);
  const auto two = run_pairs({corpus}, "words:3 minhash:64 verify:0.5", 2);
  const auto four = run_pairs({corpus}, "words:3 minhash:64 verify:0.5", 4);
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, four);
  const auto bk1 = run_pairs({corpus}, "words:3 bottomk:64 estimate:0.4", 1);
  EXPECT_FALSE(bk1.empty());
  EXPECT_EQ(bk1, run_pairs({corpus}, "words:3 bottomk:64 estimate:0.4", 3));
}

// Everything a run writes (kept, removed, clusters, pairs), its skip messages and counts, as one
// string.
std::string run_outputs(const std::vector<std::string>& inputs, RunOptions o, Pipeline::Mode mode, const test::TempDir& d) {
  Pipeline p(inputs, o);
  p.run(mode);
  std::string all;
  for (const char* name : {"kept", "removed", "clusters", "pairs"}) {
    {
      io::AtomicFile out(d.file(name));
      if (name[0] == 'k') p.write_kept(out);
      if (name[0] == 'r') p.write_removed(out);
      if (name[0] == 'c') p.write_clusters(out);
      if (name[0] == 'p') p.write_pairs(out);
      out.commit();
    }
    all += std::string("== ") + name + "\n" + test::read_file(d.file(name));
  }
  const RunStats& s = p.stats();
  all += "== stats " + std::to_string(s.documents) + " " + std::to_string(s.reader.skipped) + " " +
         std::to_string(s.reader.invalid_utf8) + " " + std::to_string(s.shingles) + " " + std::to_string(s.removed) + "\n";
  for (const auto& m : s.reader.first_skips) all += m + "\n";
  return all;
}

// Pairs mode with stream_pairs (what the CLI sets): the pairs within clusters are verified and
// written a chunk at a time instead of held, and the output and the count are the same. A
// cluster of 1,505 copies has 1,131,760 pairs, more than one chunk of candidates (2^20); a
// cluster of edited copies has pairs below the threshold.
TEST(Pipeline, StreamedPairsEqualHeldPairs) {
  test::TempDir d;
  std::mt19937_64 rng(31);
  const auto words = [&](size_t n) { return test::join(test::random_words(rng, n)) + " "; };
  const std::string copy = words(12);
  const std::string base = words(60);
  std::string jsonl;
  uint64_t copies = 0;
  for (int i = 0; i < 1800; ++i) {
    std::string text;
    if (i % 17 == 3) {  // an edited copy of base: a few words changed
      text = base;
      for (int e = 0; e < 1 + i % 5; ++e) text.replace(static_cast<size_t>(rng() % (text.size() - 8)), 3, "zz ");
    } else {
      text = i < 1600 ? copy : words(40);
      copies += i < 1600;
    }
    jsonl += "{\"id\": \"d" + std::to_string(i) + "\", \"text\": \"" + text + "\"}\n";
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  for (const char* spec : {"words:3 oph:64 verify:0.7", "words:3 minhash:32 verify:0.7"})
    for (int threads : {1, 2}) {
      std::string held, streamed;
      uint64_t held_count = 0;
      for (const bool stream : {false, true}) {
        RunOptions o;
        o.spec = PipelineSpec::parse(spec);
        o.tuning.threads = threads;
        o.tuning.stream_pairs = stream;
        Pipeline p({d.file("in.jsonl")}, o);
        p.run(Pipeline::Mode::Pairs);
        (stream ? streamed : held) = written_pairs(p, d.file("pairs.tsv"));
        if (!stream) held_count = p.pairs().size();
        EXPECT_EQ(p.stats().pairs, held_count) << spec << " stream " << stream;
      }
      // Every pair of the copies is there, with similarity 1 (an oracle for the expansion that
      // does not share its code): the copies' ids are the d<i> with i < 1600.
      uint64_t copy_pairs = 0;
      for (size_t at = 0; at < held.size();) {
        const size_t end = held.find('\n', at);
        const std::string_view line(held.data() + at, end - at);
        const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
        const int a = std::stoi(std::string(line.substr(1, t1 - 1))), b = std::stoi(std::string(line.substr(t1 + 2, t2 - t1 - 2)));
        copy_pairs += a < 1600 && b < 1600 && a % 17 != 3 && b % 17 != 3 && line.substr(t2 + 1) == "1.000000";
        at = end + 1;
      }
      EXPECT_EQ(copy_pairs, copies * (copies - 1) / 2) << spec;
      EXPECT_GT(held_count, (size_t{1} << 20)) << spec;
      EXPECT_EQ(static_cast<uint64_t>(std::count(held.begin(), held.end(), '\n')), held_count);
      EXPECT_TRUE(streamed == held) << spec << " threads " << threads << ": " << streamed.size() << " bytes, want " << held.size();
    }
}

// Band keys kept as their top halves (RunTuning::narrow_band_keys_up_to, on for runs of up to
// 2^22 documents) find the same pairs and clusters as the full keys in 4 bytes less per band
// and document; a run of more documents than the setting keeps the full keys.
TEST(Pipeline, NarrowBandKeysFindTheSamePairsInHalfTheirMemory) {
  test::TempDir d;
  std::mt19937_64 rng(41);
  std::string jsonl;
  const size_t n = 900;
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> words = test::random_words(rng, 60, 3000);
    if (i % 3 != 0) {  // edited copies of one of ten texts
      std::mt19937_64 base_rng(i % 10);
      words = test::random_words(base_rng, 60, 3000);
      for (size_t e = 0; e < rng() % 5; ++e) words[rng() % words.size()] = "e" + std::to_string(rng() % 100);
    }
    jsonl += "{\"id\": \"d" + std::to_string(i) + "\", \"text\": \"" + test::join(words) + "\"}\n";
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  for (const char* spec : {"words:3 oph:128 verify:0.7", "words:3 minhash:64 verify:0.7"}) {
    const auto bands = static_cast<uint64_t>(PipelineSpec::parse(spec).resolved().lsh.bands);
    std::string pairs[3];
    std::vector<DocId> keepers[3];
    uint64_t state[3] = {};
    const uint64_t up_to[3] = {0, n - 1, uint64_t{1} << 22};  // full keys, full keys, narrow keys
    for (int run = 0; run < 3; ++run)
      for (const auto mode : {Pipeline::Mode::Pairs, Pipeline::Mode::Dedup}) {
        RunOptions o;
        o.spec = PipelineSpec::parse(spec);
        o.tuning.threads = 2;
        o.tuning.narrow_band_keys_up_to = up_to[run];
        Pipeline p({d.file("in.jsonl")}, o);
        p.run(mode);
        if (mode == Pipeline::Mode::Pairs) {
          pairs[run] = written_pairs(p, d.file("pairs.tsv"));
          state[run] = p.state_bytes();
        } else {
          keepers[run] = p.clustering().keeper;
          EXPECT_GE(p.clustering().removed, 500u) << spec;
        }
      }
    EXPECT_GT(std::count(pairs[0].begin(), pairs[0].end(), '\n'), 5000) << spec;
    for (int run = 1; run < 3; ++run) {
      EXPECT_EQ(pairs[run], pairs[0]) << spec << " run " << run;
      EXPECT_EQ(keepers[run], keepers[0]) << spec << " run " << run;
    }
    EXPECT_EQ(state[1], state[0]) << spec;
    EXPECT_EQ(state[0] - state[2], n * bands * 4) << spec;
  }
}

// Long texts keep their full band keys (more than 128 distinct shingles on average): their keys
// are a small part of what they keep, and a chance collision of narrow keys would join two
// components for verification.
TEST(Pipeline, LongTextsKeepFullBandKeys) {
  test::TempDir d;
  std::mt19937_64 rng(43);
  std::string jsonl;
  for (int i = 0; i < 300; ++i)
    jsonl += "{\"id\": \"d" + std::to_string(i) + "\", \"text\": \"" + test::join(test::random_words(rng, 300, 3000)) + "\"}\n";
  test::write_file(d.file("in.jsonl"), jsonl);
  uint64_t state[2] = {};
  for (int run = 0; run < 2; ++run) {
    RunOptions o;
    o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.7");
    o.tuning.narrow_band_keys_up_to = run == 0 ? 0 : uint64_t{1} << 22;
    Pipeline p({d.file("in.jsonl")}, o);
    p.run(Pipeline::Mode::Pairs);
    state[run] = p.state_bytes();
    EXPECT_GT(p.estimate_memory().shingles_per_document, 250) << run;
  }
  EXPECT_EQ(state[1], state[0]);
}

// A pairs run that does not cluster (RunTuning::cluster_pairs off, as the CLI's `pairs` without
// a report) lists the same pairs, held or streamed: its large buckets' joins are not connected
// first, so their pairs are all found by the listing. What only clusters give is refused. 500
// edited copies of one text make buckets past kDirectBucket, which go to the join.
TEST(Pipeline, PairsWithoutClustersAreThePairsWithThem) {
  test::TempDir d;
  std::mt19937_64 rng(37);
  const auto words = [&](size_t n) { return test::join(test::random_words(rng, n)) + " "; };
  const std::string base = words(80);
  std::string jsonl;
  for (int i = 0; i < 700; ++i) {
    std::string text = base;
    if (i >= 500)
      text = words(50);
    else
      for (int e = 0; e < static_cast<int>(rng() % 6); ++e) text.replace(static_cast<size_t>(rng() % (text.size() - 8)), 3, "zz ");
    jsonl += "{\"id\": \"d" + std::to_string(i) + "\", \"text\": \"" + text + "\"}\n";
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  for (const char* spec : {"words:3 oph:64 verify:0.7", "words:3 minhash:32 verify:0.7"})
    for (const bool stream : {false, true})
      for (int threads : {1, 2}) {
        std::string with, without;
        for (const bool cluster : {true, false}) {
          RunOptions o;
          o.spec = PipelineSpec::parse(spec);
          o.tuning.threads = threads;
          o.tuning.stream_pairs = stream;
          o.tuning.cluster_pairs = cluster;
          Pipeline p({d.file("in.jsonl")}, o);
          p.run(Pipeline::Mode::Pairs);
          (cluster ? with : without) = written_pairs(p, d.file("pairs.tsv"));
          if (cluster) {
            EXPECT_GE(p.stats().clusters, 1u) << spec;
            EXPECT_GE(p.clustering().removed, 400u) << spec;
            continue;
          }
          EXPECT_EQ(p.stats().clusters, 0u) << spec;
          EXPECT_THROW(p.clustering(), UsageError) << spec;
          EXPECT_THROW(p.removed_similarity(), UsageError) << spec;
          io::AtomicFile out(d.file("clusters.tsv"));
          EXPECT_THROW(p.write_clusters(out), UsageError) << spec;
          EXPECT_THROW(p.write_removed(out), UsageError) << spec;
          EXPECT_THROW(p.write_kept(out), UsageError) << spec;
        }
        // Most of the 500 copies' 124,750 pairs reach 0.7.
        EXPECT_GT(std::count(with.begin(), with.end(), '\n'), 50000) << spec;
        EXPECT_TRUE(without == with) << spec << " stream " << stream << " threads " << threads << ": " << without.size()
                                     << " bytes, want " << with.size();
      }
}

// Verification with the sets the first pass kept (the documents already in a bucket when
// sketched) gives the outputs of reading every needed document again, whatever the budget
// (none, part, all) and the thread count, in clusters of copies, of edited copies and chains.
// The first pass's set of band keys: an insert tells whether the key was there, through the
// shards' growth, from several threads at once (each key's first insert alone says no), with the
// prefetches that read the tables without the lock (ThreadSanitizer runs this too).
TEST(Pipeline, SeenKeysTellsTheFirstInsert) {
  internal::SeenKeys seen;
  std::mt19937_64 rng(60);
  std::vector<uint64_t> keys(200000);
  for (auto& k : keys) k = rng();
  keys[0] = 2;  // 0 is stored as 1: a later 1 is "seen"
  std::atomic<int> firsts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i + 8 < keys.size()) seen.prefetch(keys[i + 8]);
        firsts += seen.insert(keys[i]) ? 0 : 1;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(firsts.load(), static_cast<int>(keys.size()));
  for (const uint64_t k : keys) EXPECT_TRUE(seen.insert(k));
  EXPECT_FALSE(seen.insert(0));
  EXPECT_TRUE(seen.insert(1));
  EXPECT_FALSE(seen.insert(rng()));
}

// Lines of 4 MiB or more go from the reader to their batch in the buffer they were read into;
// the records around them, their line numbers and positions (the kept output is copied by
// position) and a bad line after them come out as for small lines.
TEST(Pipeline, LargeLinesHandedOverWhole) {
  const size_t before = set_large_line_bytes(size_t{4} << 20);
  struct Restore {
    size_t bytes;
    ~Restore() { set_large_line_bytes(bytes); }
  } restore{before};
  test::TempDir d;
  std::mt19937_64 rng(59);
  const auto record = [](const std::string& id, const std::string& text) {
    return "{\"id\": \"" + id + "\", \"text\": \"" + text + "\"}\n";
  };
  const auto big1 = test::random_words(rng, 700000, 300000);  // about 4.5 MB
  auto big2 = big1;
  for (auto& w : big2)
    if (rng() % 100 == 0) w = "e" + std::to_string(rng() % 1000);
  const auto big3 = test::random_words(rng, 700000, 300000);
  std::vector<std::string> small;
  for (int i = 0; i < 12; ++i) small.push_back(test::join(test::random_words(rng, 300, 3000)));
  std::string near = small[0];
  near.replace(near.find(' '), 1, "\\t");  // a JSON tab escape: the same words
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"s0", small[0]}, {"s1", small[1]}, {"b1", test::join(big1)}, {"s2", small[2]}, {"s0copy", near},
      {"b2", test::join(big2)}, {"", ""}, {"b3", test::join(big3)}, {"s3", small[3]}};
  std::string jsonl = "\xEF\xBB\xBF", kept;  // the mark is not part of the first record
  for (const auto& [id, text] : lines) {
    const std::string line = id.empty() ? "{\"id\": \"bad\", \"text\": 12}\n" : record(id, text);
    ASSERT_TRUE(id.empty() || id[0] == 's' || line.size() >= (size_t{4} << 20));
    jsonl += line;
    if (!id.empty() && id != "s0copy" && id != "b2") kept += line;  // a bad record is not kept
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  for (const int threads : {1, 2}) {
    RunOptions o;
    o.spec = PipelineSpec::parse("words:5 oph:128 verify:0.8");
    o.tuning.threads = threads;
    o.reader.on_error = io::OnError::Skip;
    Pipeline p({d.file("in.jsonl")}, o);
    p.run(Pipeline::Mode::Dedup);
    EXPECT_EQ(p.stats().documents, 8u);
    EXPECT_EQ(p.stats().reader.skipped, 1u);
    ASSERT_EQ(p.stats().reader.first_skips.size(), 1u);
    EXPECT_NE(p.stats().reader.first_skips[0].find("in.jsonl:7:"), std::string::npos) << p.stats().reader.first_skips[0];
    EXPECT_EQ(p.id(2), "b1");
    EXPECT_EQ(p.id(7), "s3");
    io::AtomicFile out(d.file("kept.jsonl"));
    p.write_kept(out);
    out.commit();
    EXPECT_TRUE(test::read_file(d.file("kept.jsonl")) == kept) << "threads " << threads;
  }
}

// Texts of 4 MiB or more are shingled in pieces when they are read again for verification
// (bounded scratch); their exact Jaccard is the whole texts'.
TEST(Pipeline, LongTextsReadAgainInPiecesScoreExactly) {
  test::TempDir d;
  std::mt19937_64 rng(58);
  const auto base = test::random_words(rng, 800000, 200000);  // about 5 MB
  auto copy = base;
  for (auto& x : copy)
    if (rng() % 100 < 2) x = "e" + std::to_string(rng() % 100000);
  const std::string a = test::join(base), b = test::join(copy);
  ASSERT_GE(a.size(), size_t{4} << 20);
  test::write_file(d.file("in.jsonl"), "{\"id\": \"a\", \"text\": \"" + a + "\"}\n{\"id\": \"b\", \"text\": \"" + b + "\"}\n");
  Shingler sh(PipelineSpec::parse("words:5 oph:128 verify:0.8").resolved().shingle);
  const double want = jaccard(sh.shingle_set(a), sh.shingle_set(b));
  ASSERT_GT(want, 0.8);
  // Read again by position (JSONL), and from memory with the sets of the first pass or without.
  for (const uint64_t budget : {uint64_t{0}, uint64_t{1} << 30})
    for (const bool memory : {false, true}) {
      RunOptions o;
      o.spec = PipelineSpec::parse("words:5 oph:128 verify:0.8");
      o.tuning.threads = 2;
      o.tuning.first_pass_set_bytes = budget;
      o.tuning.stream_pairs = false;
      Pipeline p = memory ? Pipeline(std::vector<io::Document>{{"a", a}, {"b", b}}, o) : Pipeline({d.file("in.jsonl")}, o);
      p.run(Pipeline::Mode::Pairs);
      ASSERT_EQ(p.pairs().size(), 1u);
      EXPECT_EQ(p.pairs()[0].similarity, want) << "budget " << budget << " memory " << memory;
      EXPECT_EQ(p.stats().verify_docs + p.stats().verify_kept, 2u);
      EXPECT_EQ(p.stats().verify_kept, memory && budget > 0 ? 1u : 0u) << "budget " << budget << " memory " << memory;
    }
}

// The removed documents, clusters and pairs a run writes, as one string.
std::string decided_outputs(Pipeline& p, const test::TempDir& d) {
  std::string all;
  for (const char* name : {"removed", "clusters", "pairs"}) {
    {
      io::AtomicFile out(d.file(name));
      if (name[0] == 'r') p.write_removed(out);
      if (name[0] == 'c') p.write_clusters(out);
      if (name[0] == 'p') p.write_pairs(out);
      out.commit();
    }
    all += std::string("== ") + name + "\n" + test::read_file(d.file(name));
  }
  return all;
}

// Plain JSONL verifies group by group, reading each group's sets by position (and pairs mode
// keeps a join per group); compressed JSONL without its decompressed copy (which would be
// decompressed again for each group) and documents in memory keep the sets of the first pass up
// to a budget and read the rest again, all at once. All give the same outputs, whatever the
// budget and threads.
TEST(Pipeline, FirstPassSetsGiveTheOutputsOfReadingAgain) {
  test::TempDir d;
  std::mt19937_64 rng(57);
  std::string jsonl;
  std::vector<io::Document> docs;
  const auto add = [&](std::string id, std::string text) {
    jsonl += "{\"id\": \"" + id + "\", \"text\": \"" + text + "\"}\n";
    docs.push_back({std::move(id), std::move(text)});
  };
  for (int f = 0; f < 120; ++f) {
    auto base = test::random_words(rng, 30 + rng() % 200, 3000);
    const auto first = base;
    const int copies = static_cast<int>(rng() % 9);
    for (int c = 0; c <= copies; ++c) {
      auto w = base;
      for (auto& x : w)
        if (c > 0 && rng() % 100 < static_cast<uint64_t>(3 * c)) x = "e" + std::to_string(rng() % 100000);
      add("f" + std::to_string(f) + "-" + std::to_string(c), test::join(w));
      if (c % 3 == 2) base = w;  // a chain: the next copies drift from this one
    }
    // An exact copy of the group's first text: documents sharing one stored set (ShingleSets).
    if (f % 4 == 0) add("f" + std::to_string(f) + "-same", test::join(first));
  }
  // A cluster larger than a bucket verified pair by pair (64): its pairs are listed by a join.
  const auto big = test::random_words(rng, 150, 3000);
  for (int c = 0; c < 90; ++c) {
    auto w = big;
    w[rng() % w.size()] = "b" + std::to_string(c);
    add("big-" + std::to_string(c), test::join(w));
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  test::write_file(d.file("in.jsonl.zst"), test::zstd(jsonl));
  for (const char* spec : {"words:3 oph:64 verify:0.7", "words:2 minhash:64 verify:0.5"})
    for (const auto mode : {Pipeline::Mode::Pairs, Pipeline::Mode::Dedup}) {
      std::string want;
      uint64_t read_all = 0;
      for (const uint64_t budget : {uint64_t{0}, uint64_t{20000}, uint64_t{1} << 30})
        for (const int threads : {1, 2}) {
          RunOptions o;
          o.spec = PipelineSpec::parse(spec);
          o.tuning.threads = threads;
          o.tuning.first_pass_set_bytes = budget;
          o.tuning.stream_pairs = false;
          o.tuning.decompressed_copies = false;
          Pipeline p({d.file("in.jsonl")}, o);
          p.run(mode);
          const RunStats& st = p.stats();
          // By position: every candidate read again in its group, none kept from the first pass.
          EXPECT_EQ(st.verify_kept, 0u);
          if (read_all == 0) read_all = st.verify_docs;
          EXPECT_EQ(st.verify_docs, read_all);
          EXPECT_GT(read_all, 100u);
          EXPECT_GE(st.verify_shared, 25u) << spec << " budget " << budget;
          if (mode == Pipeline::Mode::Dedup) {  // a copy of a text is verified through its original, not read
            EXPECT_GE(st.text_copies, 25u) << spec;
            EXPECT_EQ(st.verify_copies, 0u) << spec;
          } else {
            EXPECT_EQ(st.text_copies, 0u) << spec;
            EXPECT_GE(st.verify_copies, 25u) << spec << " budget " << budget;  // not shingled again
          }
          EXPECT_LE(st.verify_copies + st.text_copies, st.verify_shared);
          EXPECT_GT(st.largest_bucket, 64u) << spec;  // the join's part
          const std::string got = decided_outputs(p, d);
          if (want.empty()) want = got;
          EXPECT_TRUE(got == want) << spec << " budget " << budget << " threads " << threads;
          // The same documents from memory, and compressed: the first pass's sets.
          for (const bool memory : {true, false}) {
            Pipeline m = memory ? Pipeline(docs, o) : Pipeline({d.file("in.jsonl.zst")}, o);
            m.run(mode);
            const RunStats& ms = m.stats();
            if (budget == 0) {
              EXPECT_EQ(ms.verify_kept, 0u);
            } else {
              EXPECT_GT(ms.verify_kept, 0u) << spec << " budget " << budget << " memory " << memory;
              if (budget > 20000) {
                EXPECT_LT(ms.verify_docs, read_all / 2) << spec;
              }
            }
            EXPECT_EQ(ms.verify_kept + ms.verify_docs, read_all) << spec << " budget " << budget;
            EXPECT_TRUE(decided_outputs(m, d) == want) << spec << " memory " << memory << ", budget " << budget << " threads " << threads;
          }
        }
      if (mode == Pipeline::Mode::Pairs) {  // every pair of the big cluster: 90 * 89 / 2
        size_t big_pairs = 0;
        for (size_t at = want.find("\nbig-", want.find("== pairs")); at != std::string::npos; at = want.find("\nbig-", at + 1))
          big_pairs += want.compare(want.find('\t', at) + 1, 4, "big-") == 0;
        EXPECT_EQ(big_pairs, 4005u) << spec;
      }
    }
}

// A dedup verifies each copy of an earlier text through its original (RunTuning::collapse_copies):
// in a shuffled corpus of short texts, near-copies (some below the threshold) and exact copies of
// both, repeated one-word and empty texts, the removed documents and the clusters are those of
// verifying every copy itself, for each keep policy and clustering, read by position (in groups)
// or from memory, on 1 or 2 threads.
TEST(Pipeline, CopiesOfATextAreVerifiedThroughTheirOriginal) {
  test::TempDir d;
  std::mt19937_64 rng(63);
  std::vector<io::Document> docs;
  for (int f = 0; f < 80; ++f) {
    const auto base = test::random_words(rng, 8 + rng() % 50, 400);
    std::vector<std::string> family{test::join(base)};
    for (int c = 0; c < 1 + static_cast<int>(rng() % 6); ++c) {
      auto w = base;
      for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) w[rng() % w.size()] = "e" + std::to_string(rng() % 1000);
      if (rng() % 3 == 0) w.push_back("longer");
      family.push_back(test::join(w));
    }
    for (int c = 0; c < static_cast<int>(rng() % 8); ++c) family.push_back(family[rng() % family.size()]);  // exact copies
    for (std::string& t : family) docs.push_back({"", std::move(t)});
  }
  for (int c = 0; c < 6; ++c) docs.push_back({"", c % 2 ? "" : "word"});
  std::shuffle(docs.begin(), docs.end(), rng);
  std::string jsonl;
  std::set<std::string> seen;
  uint64_t planted = 0;  // documents whose text an earlier document had (not empty)
  for (size_t i = 0; i < docs.size(); ++i) {
    docs[i].id = "d" + std::to_string(i);
    jsonl += "{\"id\": \"" + docs[i].id + "\", \"text\": \"" + docs[i].text + "\"}\n";
    planted += !docs[i].text.empty() && !seen.insert(docs[i].text).second;
  }
  ASSERT_GT(planted, 150u);
  test::write_file(d.file("in.jsonl"), jsonl);
  const auto decided = [&](Pipeline& p) {
    std::string all;
    for (const char* name : {"removed", "clusters"}) {
      io::AtomicFile out(d.file(name));
      if (name[0] == 'r') p.write_removed(out);
      else p.write_clusters(out);
      out.commit();
      all += test::read_file(d.file(name));
    }
    return all;
  };
  for (const char* spec : {"words:3 oph:64 verify:0.7", "words:2 minhash:64 verify:0.5"})
    for (const KeepPolicy keep : {KeepPolicy::First, KeepPolicy::Longest})
      for (const ClusterMode cluster : {ClusterMode::Components, ClusterMode::Leader})
        for (const bool memory : {false, true})
          for (const int threads : {1, 2}) {
            std::string want;
            uint64_t removed = 0;
            for (const bool collapse : {false, true}) {
              RunOptions o;
              o.spec = PipelineSpec::parse(spec);
              o.keep = keep;
              o.cluster = cluster;
              o.tuning.threads = threads;
              o.tuning.collapse_copies = collapse;
              Pipeline p = memory ? Pipeline(docs, o) : Pipeline({d.file("in.jsonl")}, o);
              p.run(Pipeline::Mode::Dedup);
              EXPECT_EQ(p.stats().text_copies, collapse ? planted : 0u) << spec;
              const std::string got = decided(p);
              if (!collapse) {
                want = got;
                removed = p.stats().removed;
              }
              EXPECT_TRUE(got == want) << spec << " keep " << static_cast<int>(keep) << " cluster " << static_cast<int>(cluster)
                                       << " memory " << memory << " threads " << threads;
            }
            EXPECT_GT(removed, planted) << spec;  // the copies and some near-copies
          }
}

// A run's pairs (pairs mode), removed documents and clusters as its writers write them, through
// files in `d`.
static std::string written_outputs(Pipeline& p, Pipeline::Mode mode, const test::TempDir& d) {
  std::string all;
  for (const char* name : {"pairs", "removed", "clusters"}) {
    io::AtomicFile out(d.file(name));
    if (name[0] == 'p' && mode == Pipeline::Mode::Pairs) p.write_pairs(out);
    else if (name[0] == 'r') p.write_removed(out);
    else if (name[0] == 'c') p.write_clusters(out);
    out.commit();
    all += test::read_file(d.file(name));
  }
  return all;
}

// Band keys and the document table spilled to disk (RunTuning::spill_band_keys,
// spill_documents, or a memory limit below the expected peak, which spills both) give the
// outputs of a run that keeps them in memory: pairs and dedup, oph and minhash, copies of a
// text, a file and documents in memory, 1 and 2 threads; each takes its bytes on disk, and a
// limit above the peak spills nothing.
TEST(Pipeline, SpilledStateGivesTheOutputsOfStateInMemory) {
  test::TempDir d;
  std::mt19937_64 rng(64);
  std::vector<io::Document> docs;
  std::string jsonl;
  for (int f = 0; f < 120; ++f) {
    const auto base = test::random_words(rng, 10 + rng() % 60, 500);
    for (int c = 0; c < 1 + static_cast<int>(rng() % 7); ++c) docs.push_back({"d" + std::to_string(docs.size()), test::edited(rng, base, 5)});
  }
  // A family larger than a bucket completed pair by pair (kDirectBucket): the join lists its
  // pairs, those that share a band (share_band on the keys read back).
  const auto big = test::random_words(rng, 40, 500);
  for (int c = 0; c < 600; ++c) docs.push_back({"", test::edited(rng, big, 3, "b")});
  for (int c = 0; c < 40; ++c) docs.push_back(docs[rng() % docs.size()]);  // copies of a text
  std::shuffle(docs.begin(), docs.end(), rng);
  for (size_t i = 0; i < docs.size(); ++i) {
    docs[i].id = "d" + std::to_string(i);
    jsonl += "{\"id\": \"" + docs[i].id + "\", \"text\": \"" + docs[i].text + "\"}\n";
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  for (const char* spec : {"words:3 oph:64 verify:0.6", "words:2 minhash:64 lsh:8x8 verify:0.5"})
    for (const Pipeline::Mode mode : {Pipeline::Mode::Pairs, Pipeline::Mode::Dedup})
      for (const bool memory : {false, true})
        for (const int threads : {1, 2}) {
          SCOPED_TRACE(std::string(spec) + (mode == Pipeline::Mode::Pairs ? " pairs" : " dedup") + (memory ? " memory" : " file") +
                       " threads " + std::to_string(threads));
          std::string want;
          uint64_t verified = 0;
          // In memory, keys spilled, a limit below the peak, a limit above it, the table spilled,
          // verification in groups of a few components (each read ahead on a thread of its own).
          for (const int how : {0, 1, 2, 3, 4, 5}) {
            RunOptions o;
            o.spec = PipelineSpec::parse(spec);
            o.tuning.threads = threads;
            o.tuning.temp_dir = d.path();
            o.tuning.spill_band_keys = how == 1;
            o.tuning.spill_documents = how == 4;
            o.tuning.memory_limit = how == 2 ? 1 : how == 3 ? uint64_t{1} << 40 : 0;
            if (how == 5) o.tuning.verify_group_bytes = 2048;
            Pipeline p = memory ? Pipeline(docs, o) : Pipeline({d.file("in.jsonl")}, o);
            p.run(mode);
            // A file is verified in groups (documents in memory at once): one by default, many
            // of 2 KiB.
            EXPECT_EQ(p.stats().verify_groups > 1, how == 5 && !memory) << how << " " << p.stats().verify_groups;
            const uint64_t n = p.stats().documents;
            const uint64_t keys_bytes = n * static_cast<uint64_t>(p.spec().lsh.bands) * sizeof(uint64_t);
            uint64_t table_bytes = n * (sizeof(uint64_t) + sizeof(uint32_t) + (memory ? 0 : sizeof(io::RecordPos)));
            for (const io::Document& doc : docs) table_bytes += doc.id.size();
            // A dedup spills its text hashes too (16 bytes a document) when it spills its table.
            const uint64_t hash_bytes = mode == Pipeline::Mode::Dedup ? n * 16 : 0;
            const uint64_t state_bytes = how == 1   ? keys_bytes
                                         : how == 2 ? keys_bytes + table_bytes + hash_bytes
                                         : how == 4 ? table_bytes + hash_bytes
                                                    : 0u;
            if (how == 1 || how == 2) {  // and the bands' buckets until they are merged: a size and a document at most per band and document
              EXPECT_GT(p.stats().spilled_bytes, state_bytes) << how;
              EXPECT_LE(p.stats().spilled_bytes, state_bytes + keys_bytes / 8 * 6) << how;
            } else {
              EXPECT_EQ(p.stats().spilled_bytes, state_bytes) << how;
            }
            const std::string got = written_outputs(p, mode, d);
            if (how == 0) {
              want = got;
              verified = p.stats().verified;
              EXPECT_GT(verified, 50u);
            }
            EXPECT_TRUE(got == want) << how;
            EXPECT_EQ(p.stats().verified, verified) << how;
            // A dedup that spills its table holds no verified pair, and says so.
            if (mode == Pipeline::Mode::Dedup && (how == 2 || how == 4)) {
              EXPECT_THROW(p.pairs(), UsageError) << how;
            } else if (mode == Pipeline::Mode::Dedup) {
              EXPECT_EQ(p.pairs().size(), verified) << how;
            }
            // A dedup in groups with its keys spilled indexes each group's buckets in turn:
            // share_band() refuses after it (RunTuning::keep_sets keeps the whole index).
            if (mode == Pipeline::Mode::Dedup && !memory && (how == 1 || how == 2)) {
              EXPECT_THROW(p.share_band(0, 1), UsageError) << how;
            } else {
              EXPECT_NO_THROW(p.share_band(0, 1)) << how;
            }
          }
        }
}

// With the band keys spilled, share_band reads the buckets: indexed one component's buckets at a
// time (index_group, as a dedup verifies in groups) it answers every pair of the component as
// the index of all buckets does (index_buckets), including pairs in no common bucket.
TEST(SketchStore, GroupIndexAnswersAsTheWholeIndex) {
  std::mt19937_64 rng(67);
  constexpr size_t kDocs = 3000;
  LshBuckets all;
  for (int b = 0; b < 1500; ++b) {  // buckets of 2-6 documents, ascending and distinct
    std::set<DocId> m;
    const DocId base = static_cast<DocId>(rng() % (kDocs - 40));
    while (m.size() < 2 + rng() % 5) m.insert(base + static_cast<DocId>(rng() % 40));
    all.members.insert(all.members.end(), m.begin(), m.end());
    all.offsets.push_back(all.members.size());
  }
  UnionFind uf(kDocs);
  for (size_t i = 0; i < all.size(); ++i)
    for (const DocId d : all[i]) uf.unite(all[i][0], d);
  std::map<DocId, std::vector<size_t>> by_component;  // root: its buckets
  for (size_t i = 0; i < all.size(); ++i) by_component[uf.find(all[i][0])].push_back(i);
  SketchStore whole, group;
  for (SketchStore* s : {&whole, &group}) {
    s->reset(1, 0);
    s->by_buckets = true;
  }
  whole.index_buckets(all, kDocs);
  const LshParams lsh{1, 1};
  uint64_t shared = 0, apart = 0;
  for (const auto& [root, ids] : by_component) {
    LshBuckets g;
    std::set<DocId> docs;
    for (const size_t i : ids) {
      g.members.insert(g.members.end(), all[i].begin(), all[i].end());
      g.offsets.push_back(g.members.size());
      docs.insert(all[i].begin(), all[i].end());
    }
    const std::vector<DocId> sorted(docs.begin(), docs.end());
    group.index_group(g, sorted);
    for (const DocId a : sorted)
      for (const DocId b : sorted) {
        const bool want = whole.share_band(a, b, 1, lsh);
        ASSERT_EQ(group.share_band(a, b, 1, lsh), want) << a << " " << b;
        (want ? shared : apart) += a != b;
      }
  }
  EXPECT_GT(shared, 1000u);
  EXPECT_GT(apart, 1000u);  // pairs of a component in no common bucket
}

// A dedup lets its band keys go after the LSH search and share_band reads the buckets instead
// (SketchStore::drop_keys); pairs mode keeps the keys. Both answer every pair of documents alike:
// families of near-copies, copies of a text (which a dedup keeps out of the buckets, through
// their originals) and documents in no bucket. The state measured is the first pass's.
TEST(Pipeline, DedupAnswersShareBandFromItsBuckets) {
  test::TempDir d;
  std::mt19937_64 rng(71);
  std::vector<std::string> texts;
  for (int f = 0; f < 60; ++f) {
    const auto base = test::random_words(rng, 20 + rng() % 40, 400);
    for (int c = 0; c < 1 + static_cast<int>(rng() % 6); ++c) texts.push_back(test::edited(rng, base, 8));
  }
  for (int c = 0; c < 30; ++c) texts.push_back(texts[rng() % texts.size()]);  // copies of a text
  std::shuffle(texts.begin(), texts.end(), rng);
  std::string jsonl;
  for (size_t i = 0; i < texts.size(); ++i) jsonl += "{\"id\": \"d" + std::to_string(i) + "\", \"text\": \"" + texts[i] + "\"}\n";
  test::write_file(d.file("in.jsonl"), jsonl);
  for (const uint64_t narrow_up_to : {uint64_t{0}, uint64_t{1} << 22}) {  // full keys, narrow keys
    SCOPED_TRACE(narrow_up_to);
    RunOptions o;
    o.spec = PipelineSpec::parse("words:3 oph:128 lsh:21x6 verify:0.6");
    o.tuning.threads = 2;
    o.tuning.narrow_band_keys_up_to = narrow_up_to;
    Pipeline pairs({d.file("in.jsonl")}, o), dedup({d.file("in.jsonl")}, o);
    pairs.run(Pipeline::Mode::Pairs);
    dedup.run(Pipeline::Mode::Dedup);
    EXPECT_GT(dedup.clustering().removed, 50u);
    EXPECT_EQ(dedup.state_bytes(), pairs.state_bytes());
    uint64_t shared = 0, apart = 0;
    for (DocId a = 0; a < texts.size(); ++a)
      for (DocId b = a + 1; b < texts.size(); ++b) {
        const bool want = pairs.share_band(a, b);
        ASSERT_EQ(dedup.share_band(a, b), want) << a << " " << b;
        ASSERT_EQ(dedup.share_band(b, a), want) << a << " " << b;
        ++(want ? shared : apart);
      }
    EXPECT_GT(shared, 150u);
    EXPECT_GT(apart, 10000u);
  }
}

// A document table kept in files answers as one in memory: ids of every length (none, longer
// than a file buffer), lengths and positions, gathered for a selection, read behind a pass
// that lets its pages go, and after they all go; its bytes are on disk, not in memory, and
// nothing is left in the folder.
TEST(DocumentTable, SpilledAnswersAsInMemory) {
  test::TempDir tmp;
  std::mt19937_64 rng(66);
  DocumentTable mem, disk;
  disk.spill_to(tmp.path());
  uint64_t id_bytes = 0;
  constexpr uint32_t kDocs = 600000;  // more than a pass lets go at once
  for (uint32_t i = 0; i < kDocs; ++i) {
    const std::string id = i == 999 ? std::string(100000, 'i') : std::string(rng() % 20, static_cast<char>('a' + i % 26));
    const io::RecordPos pos{static_cast<uint32_t>(rng() % 3), static_cast<uint32_t>(rng()), rng()};
    const auto length = static_cast<uint32_t>(rng());
    for (DocumentTable* t : {&mem, &disk}) t->add(id, length, &pos, nullptr);
    id_bytes += id.size();
  }
  mem.finish();
  disk.finish();
  EXPECT_TRUE(disk.spilled());
  EXPECT_EQ(disk.spilled_bytes(), id_bytes + kDocs * (8 + 4 + sizeof(io::RecordPos)));
  EXPECT_LT(disk.bytes(), mem.bytes() / 4);
  // A scattered selection gathered, its pages let go behind it, reads as the accessors do.
  std::vector<DocId> some;
  for (DocId d = 0; d < mem.size(); d += 1 + static_cast<DocId>(rng() % 7)) some.push_back(d);
  std::vector<io::RecordPos> pos;
  std::vector<uint32_t> lengths;
  disk.gather(some, pos, lengths);
  ASSERT_EQ(pos.size(), some.size());
  for (size_t k = 0; k < some.size(); ++k) {
    ASSERT_EQ(pos[k].offset, mem.pos(some[k]).offset) << k;
    ASSERT_EQ(lengths[k], mem.length(some[k])) << k;
  }
  {
    DocumentTable::Behind behind(disk);  // a pass in order, a look back now and then
    for (DocId d = 0; d < disk.size(); ++d) {
      behind.at(d);
      ASSERT_EQ(disk.id(d), mem.id(d)) << d;
      if (d % 1000 == 999) {
        ASSERT_EQ(disk.id(d - 999), mem.id(d - 999)) << d;
      }
    }
  }
  for (const bool dropped : {false, true}) {
    if (dropped) disk.drop_pages();
    ASSERT_EQ(disk.size(), mem.size());
    EXPECT_TRUE(disk.has_positions());
    for (DocId d = 0; d < mem.size(); ++d) {
      ASSERT_EQ(disk.id(d), mem.id(d)) << d;
      ASSERT_EQ(disk.length(d), mem.length(d)) << d;
      ASSERT_EQ(disk.pos(d).offset, mem.pos(d).offset) << d;
      ASSERT_EQ(disk.pos(d).length, mem.pos(d).length) << d;
      ASSERT_EQ(disk.pos(d).source, mem.pos(d).source) << d;
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the files have no name";
  DocumentTable none;  // no documents, no positions
  none.spill_to(tmp.path());
  none.finish();
  EXPECT_EQ(none.size(), 0u);
  EXPECT_FALSE(none.has_positions());
}

// The document table spilled (RunTuning::spill_documents) gives every method's outputs: SimHash,
// bottom-k, the exact join, minhash with estimates; keeping the longest (the lengths read back)
// or by a field (its values stay in memory), pairs and dedup.
TEST(Pipeline, SpilledDocumentTableGivesEveryMethodsOutputs) {
  test::TempDir d, tmp;
  std::mt19937_64 rng(65);
  std::string jsonl;
  for (int f = 0, i = 0; f < 60; ++f) {
    const auto base = test::random_words(rng, 12 + rng() % 40, 400);
    for (int c = 0; c < 1 + static_cast<int>(rng() % 5); ++c, ++i) {
      const std::string text = test::edited(rng, base, 4);
      // Ids of every length, a long one among them (longer than a buffer of the table's files).
      const std::string id = i == 7 ? std::string(70000, 'L') : "doc-" + std::string(rng() % 12, 'x') + std::to_string(i);
      jsonl += "{\"id\": \"" + id + "\", \"rank\": " + std::to_string(rng() % 50) + ", \"text\": \"" + text + "\"}\n";
    }
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  for (const char* spec : {"words:3 simhash:8", "words:3 bottomk:64", "words:3 exact verify:0.6", "words:3 minhash:64 estimate:0.6"})
    for (const Pipeline::Mode mode : {Pipeline::Mode::Pairs, Pipeline::Mode::Dedup})
      for (const int keep : {0, 1, 2}) {
        SCOPED_TRACE(std::string(spec) + (mode == Pipeline::Mode::Pairs ? " pairs" : " dedup") + " keep " + std::to_string(keep));
        std::string want;
        for (const bool spill : {false, true}) {
          RunOptions o;
          o.spec = PipelineSpec::parse(spec);
          o.tuning.threads = 2;
          o.tuning.temp_dir = tmp.path();
          o.tuning.spill_documents = spill;
          if (keep == 1) o.keep = KeepPolicy::Longest;
          if (keep == 2) o.keep_by = "rank", o.keep = KeepPolicy::Field;
          Pipeline p({d.file("in.jsonl")}, o);
          p.run(mode);
          EXPECT_EQ(p.stats().spilled_bytes > 0, spill);
          const std::string got = written_outputs(p, mode, d);
          if (!spill) {
            want = got;
            EXPECT_GT(p.stats().verified, 20u);
          }
          EXPECT_TRUE(got == want);
          EXPECT_EQ(p.id(7), std::string(70000, 'L'));
        }
      }
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the files have no name";
}

// Many batches (records are parsed on the workers), bad records, invalid UTF-8, gzip, zstd and a
// directory of text files: every output is byte-identical for 1 to 4 threads, and a bad record
// under --on-error fail is the first one in reading order whatever the thread count.
TEST(Pipeline, OutputsAreByteIdenticalForAnyThreadCount) {
  test::TempDir d;
  std::mt19937_64 rng(21);
  std::string a, b;
  for (int i = 0; i < 6000; ++i) {
    std::vector<std::string> w = test::random_words(rng, 8 + rng() % 30, 40);
    std::string line = "{\"id\": \"a" + std::to_string(i) + "\", \"text\": \"" + test::join(w) + "\"}";
    if (i % 7 == 3) line = "{\"id\": \"dup" + std::to_string(i) + "\", \"text\": \"" + test::join(w) + " extra\"}";
    a += line + "\n";
    if (i % 11 == 0) b += line + "\n";
    if (i % 997 == 5) a += "{\"id\": \"bad" + std::to_string(i) + "\", \"text\": null}\n";
    if (i % 1499 == 7) a += "{\"id\": \"x\", \"text\": \"caf\xC3 \xFF broken utf8 " + std::to_string(i) + "\"}\n";
    if (i % 2003 == 11) a += "not json at all\n";
  }
  test::write_file(d.file("a.jsonl"), a);
  test::write_file(d.file("b.jsonl.gz"), test::gzip(b));
  test::write_file(d.file("c.jsonl.zst"), test::zstd(b + a.substr(0, a.size() / 3)));
  std::filesystem::create_directories(d.file("texts"));
  for (int i = 0; i < 30; ++i) test::write_file(d.file("texts/t" + std::to_string(i) + ".txt"), test::join(test::random_words(rng, 200, 400)));
  test::write_file(d.file("texts/copy.txt"), test::read_file(d.file("texts/t3.txt")) + " end");
  const std::vector<std::vector<std::string>> input_sets = {
      {d.file("a.jsonl"), d.file("b.jsonl.gz"), d.file("c.jsonl.zst")},
      {d.file("texts"), d.file("a.jsonl")},  // mixed: later passes read every record again
  };
  for (const auto& inputs : input_sets)
    for (const char* spec : {"words:3 verify:0.7", "words:3 bottomk:32 verify:0.7", "words:3 simhash:3 verify:0.7"})
      for (const auto mode : {Pipeline::Mode::Dedup, Pipeline::Mode::Pairs}) {
        RunOptions o;
        o.duplicate_ids = DuplicateIds::Keep;  // the inputs number their records alike
        o.spec = PipelineSpec::parse(spec);
        o.reader.on_error = io::OnError::Skip;
        std::string first;
        for (int threads = 1; threads <= 4; ++threads) {
          o.tuning.threads = threads;
          const std::string got = run_outputs(inputs, o, mode, d);
          if (threads == 1) {
            first = got;
            EXPECT_NE(got.find("== stats"), std::string::npos);
            EXPECT_NE(got.find("a.jsonl:7: text field \"text\" is null"), std::string::npos) << "the skip messages name the bad records";
            EXPECT_GT(got.size(), 10000u);
          } else {
            EXPECT_TRUE(got == first) << spec << " threads " << threads << ": " << got.size() << " bytes, want " << first.size();
          }
        }
      }
  // --on-error fail: the first bad record in reading order, for any thread count, though it lies
  // several batches in and later batches (with other bad records) are parsed alongside.
  std::string late;
  for (int i = 0; i < 9000; ++i) {
    late += "{\"id\": " + std::to_string(i) + ", \"text\": \"" + test::join(test::random_words(rng, 8, 40)) + "\"}\n";
    if (i == 5000) late += "{\"id\": \"first bad\", \"text\": null}\n";
    if (i > 5000 && i % 100 == 0) late += "[\"a later bad record\"]\n";
  }
  test::write_file(d.file("late.jsonl"), late);
  for (int threads = 1; threads <= 4; ++threads) {
    RunOptions o;
    o.tuning.threads = threads;
    try {
      Pipeline p({d.file("late.jsonl")}, o);
      p.run(Pipeline::Mode::Dedup);
      ADD_FAILURE() << "no error";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("late.jsonl:5002: text field \"text\" is null"), std::string::npos) << e.what();
    }
  }
}

TEST(Pipeline, DedupKeepsRecordsByteForByte) {
  test::TempDir d;
  const std::string lines[] = {
      R"({"id": "a", "text": "the quick brown fox jumps over the lazy dog again and again"})",
      R"({"text": "The quick brown fox jumps over the lazy dog again and again!", "id": "b", "extra": 1})",
      R"({"id": "c", "text": "something entirely different from the other documents here"})",
      R"({"id": "e", "text": "  ...  "})",
      R"({ "id" : "d" , "text" : "THE QUICK BROWN FOX jumps over the lazy dog again and again" })",
  };
  std::string in;
  for (const auto& l : lines) in += l + "\n";
  test::write_file(d.file("in.jsonl"), in);
  RunOptions o;
  o.spec = PipelineSpec::parse("words:3 verify:0.9");
  Pipeline p({d.file("in.jsonl")}, o);
  p.run(Pipeline::Mode::Dedup);
  {
    io::AtomicFile out(d.file("out.jsonl"));
    p.write_kept(out);
    out.commit();
  }
  EXPECT_EQ(test::read_file(d.file("out.jsonl")), lines[0] + "\n" + lines[2] + "\n" + lines[3] + "\n");
  EXPECT_EQ(p.stats().documents, 5u);
  EXPECT_EQ(p.stats().empty, 1u);
  EXPECT_EQ(p.stats().removed, 2u);
  EXPECT_EQ(p.stats().clusters, 1u);
  EXPECT_EQ(p.clustering().keeper[1], 0u);
  EXPECT_EQ(p.clustering().keeper[4], 0u);
}

// The kept output is copied by position (plain files in the kernel, compressed ones streamed),
// and equals the kept records' raw lines, each with a newline: CRLF lines keep their CR, blank
// lines and skipped bad records are left out, a last line without a newline gets one.
TEST(Pipeline, DedupOutputByPositionEqualsTheKeptRawLines) {
  test::TempDir d;
  std::mt19937_64 rng(8);
  const auto make = [&](const std::string& prefix, bool final_newline) {
    std::string out;
    for (int i = 0; i < 400; ++i) {
      std::vector<std::string> w = test::random_words(rng, 30 + rng() % 40, 60);
      if (i % 3 == 1) w = test::random_words(rng, 30, 60);
      out += "{\"id\": \"" + prefix + std::to_string(i) + "\", \"text\": \"" + test::join(w) + "\"}";
      out += i % 5 == 0 ? "\r\n" : "\n";
      if (i % 17 == 0) out += "   \n\n";
      if (i % 29 == 0) out += "{\"id\": \"bad\", \"text\": 3}\n";
    }
    out += "{\"id\": \"" + prefix + "last\", \"text\": \"w1 w2 w3 w4 w5\"}";
    return final_newline ? out + "\n" : out;
  };
  // Families of near-copies: repeat some lines with a word changed, across files too.
  std::string a = make("a", false), b = make("b", true), c = make("c", true);
  test::write_file(d.file("a.jsonl"), a + "\n" + a.substr(0, a.size() / 2));
  test::write_file(d.file("b.jsonl.gz"), test::gzip(b + a));
  test::write_file(d.file("c.jsonl.zst"), test::zstd(c + b));
  const std::vector<std::string> inputs = {d.file("a.jsonl"), d.file("b.jsonl.gz"), d.file("c.jsonl.zst")};
  for (const int threads : {1, 2}) {
    RunOptions o;
    o.duplicate_ids = DuplicateIds::Keep;  // the inputs number their records alike
    o.spec = PipelineSpec::parse("words:2 verify:0.3");
    o.tuning.threads = threads;
    o.reader.on_error = io::OnError::Skip;
    Pipeline p(inputs, o);
    p.run(Pipeline::Mode::Dedup);
    ASSERT_GT(p.stats().removed, 100u);
    ASSERT_GT(p.stats().reader.skipped, 10u);
    {
      io::AtomicFile out(d.file("out.jsonl"));
      p.write_kept(out);
      out.commit();
    }
    std::string want;
    io::InputSet in(inputs, io::InputFormat::Auto);
    io::RecordReader r(in, o.reader);
    io::Record rec;
    DocId doc = 0;
    while (r.next(rec))
      if (p.clustering().kept(doc++)) want += std::string(rec.raw) + "\n";
    ASSERT_EQ(doc, p.size());
    const std::string got = test::read_file(d.file("out.jsonl"));
    EXPECT_TRUE(got == want) << "threads " << threads << ": " << got.size() << " bytes, want " << want.size();
  }
}

// A corpus of families of near-copies spread over the whole input (so that the candidate
// components fall in many of run_dedup's groups), in three plain files; with `compressed`, the
// same records in a plain, a gzip and a zstd file (which a run reads at once, not in groups).
std::vector<std::string> spread_families(test::TempDir& d, bool compressed = false) {
  std::mt19937_64 rng(26);
  std::vector<std::vector<std::string>> family;
  for (int f = 0; f < 60; ++f) family.push_back(test::random_words(rng, 40 + rng() % 40, 80));
  std::string files[3];
  for (int i = 0; i < 1500; ++i) {
    std::vector<std::string> w;
    if (rng() % 3 == 0) {
      w = test::random_words(rng, 30 + rng() % 30, 400);
    } else {
      w = family[rng() % family.size()];
      for (int k = 0, edits = static_cast<int>(rng() % 8); k < edits; ++k) w[rng() % w.size()] = "x" + std::to_string(rng() % 50);
      if (rng() % 4 == 0) w.resize(w.size() - rng() % 10);
    }
    files[i % 3] += "{\"id\": \"d" + std::to_string(i) + "\", \"rank\": " + std::to_string(rng() % 100) +
                    ", \"text\": \"" + test::join(w) + "\"}\n";
  }
  test::write_file(d.file("a.jsonl"), files[0]);
  if (compressed) {
    test::write_file(d.file("b.jsonl.gz"), test::gzip(files[1]));
    test::write_file(d.file("c.jsonl.zst"), test::zstd(files[2]));
    return {d.file("a.jsonl"), d.file("b.jsonl.gz"), d.file("c.jsonl.zst")};
  }
  test::write_file(d.file("b.jsonl"), files[1]);
  test::write_file(d.file("c.jsonl"), files[2]);
  return {d.file("a.jsonl"), d.file("b.jsonl"), d.file("c.jsonl")};
}

// run_dedup writes the kept records while it verifies, a group of candidate components at a
// time: the same bytes and clusters as run() then write_kept(), for every keep order and both
// cluster modes, into one file or one per source. Both verify and cluster group by group, so
// both are held to a run that verifies every bucket at once (the same records, two of the files
// compressed).
TEST(Pipeline, RunDedupWritesWhatRunThenWriteKeptWrites) {
  test::TempDir d;
  const std::vector<std::string> inputs = spread_families(d);
  test::TempDir dz;
  const std::vector<std::string> compressed = spread_families(dz, true);
  const std::vector<std::string>& spread_plain = inputs;  // the same records, uncompressed
  // The decompressed copies need ext4 (a tmpfs would hold them in memory).
  const bool copies_possible = io::ScratchCopy::create(dz.path()) != nullptr;
  if (!copies_possible) std::cerr << "note: no decompressed copies in " << dz.path() << " (not ext4): that part is not run\n";
  struct Case {
    KeepPolicy keep;
    std::string keep_by;
    ClusterMode cluster;
    int threads;
  };
  const Case cases[] = {{KeepPolicy::First, "", ClusterMode::Components, 2},
                        {KeepPolicy::Longest, "", ClusterMode::Components, 1},
                        {KeepPolicy::First, "rank", ClusterMode::Components, 2},
                        {KeepPolicy::First, "", ClusterMode::Leader, 2},
                        {KeepPolicy::Longest, "", ClusterMode::Leader, 1}};
  for (const Case& c : cases) {
    RunOptions o;
    o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.6");
    o.tuning.threads = c.threads;
    o.keep = c.keep;
    o.keep_by = c.keep_by;
    o.cluster = c.cluster;
    const std::string name = std::to_string(static_cast<int>(c.keep)) + c.keep_by + std::to_string(static_cast<int>(c.cluster));
    Pipeline after(inputs, o);
    after.run(Pipeline::Mode::Dedup);
    {
      io::AtomicFile out(d.file("after.jsonl"));
      after.write_kept(out);
      out.commit();
    }
    ASSERT_GT(after.stats().removed, 300u) << name;
    // The same kept bytes (in `file`), clusters and removed similarities as `after`.
    const auto expect_as_after = [&](const Pipeline& p, const std::string& file, const std::string& what) {
      EXPECT_TRUE(test::read_file(d.file(file)) == test::read_file(d.file("after.jsonl"))) << name << " " << what;
      EXPECT_EQ(p.clustering().keeper, after.clustering().keeper) << name << " " << what;
      EXPECT_EQ(p.stats().removed, after.stats().removed) << name << " " << what;
      EXPECT_EQ(p.stats().clusters, after.stats().clusters) << name << " " << what;
      EXPECT_TRUE(std::equal(p.removed_similarity().begin(), p.removed_similarity().end(), after.removed_similarity().begin(),
                             after.removed_similarity().end())) << name << " " << what;
    };
    RunOptions no_copies = o;
    no_copies.tuning.decompressed_copies = false;
    Pipeline once(compressed, no_copies);
    once.run(Pipeline::Mode::Dedup);
    {
      io::AtomicFile out(d.file("once.jsonl"));
      once.write_kept(out);
      out.commit();
    }
    expect_as_after(once, "once.jsonl", "every bucket at once");
    EXPECT_GT(once.stats().verify_kept, 0u) << name << ": sets kept from the first pass, for reading at once";
    EXPECT_EQ(after.stats().verify_kept, 0u) << name << ": none kept, for reading in groups";
    Pipeline during(inputs, o);
    {
      io::AtomicFile out(d.file("during.jsonl"));
      during.run_dedup(out);
      out.commit();
    }
    EXPECT_GT(during.stats().times.write_during_run, 0.0) << name << ": the write did not start during verification";
    expect_as_after(during, "during.jsonl", "run_dedup");
    // In groups of a few components, each read (with 2 threads) on a thread of its own while the
    // one before is verified and the writer copies the records decided: the same.
    RunOptions small = o;
    small.tuning.verify_group_bytes = 4096;
    Pipeline grouped(inputs, small);
    {
      io::AtomicFile out(d.file("grouped.jsonl"));
      grouped.run_dedup(out);
      out.commit();
    }
    expect_as_after(grouped, "grouped.jsonl", "run_dedup in small groups");
    EXPECT_EQ(during.stats().verify_groups, 1u) << name;
    EXPECT_GT(grouped.stats().verify_groups, 20u) << name;
    EXPECT_EQ(grouped.stats().verify_docs, during.stats().verify_docs) << name;
    // The compressed inputs with the first pass's decompressed copies: read again from those, in
    // groups, and the kept records copied from them (read with O_DIRECT) while verifying.
    if (copies_possible) {
      RunOptions copies = o;
      copies.tuning.temp_dir = dz.path();
      Pipeline copied(compressed, copies);
      {
        io::AtomicFile out(d.file("copied.jsonl"));
        copied.run_dedup(out);
        out.commit();
      }
      expect_as_after(copied, "copied.jsonl", "run_dedup from decompressed copies");
      EXPECT_EQ(copied.stats().copied_bytes, test::read_file(spread_plain[1]).size() + test::read_file(spread_plain[2]).size()) << name;
      EXPECT_EQ(copied.stats().copy_note, "") << name;
      EXPECT_EQ(copied.stats().verify_kept, 0u) << name << ": verified in groups, none kept from the first pass";
      EXPECT_GT(copied.stats().times.write_during_run, 0.0) << name << ": the write did not start during verification";
    }
    // One output per source.
    std::vector<std::unique_ptr<io::AtomicFile>> files;
    std::vector<io::AtomicFile*> outs;
    for (size_t s = 0; s < inputs.size(); ++s) {
      files.push_back(std::make_unique<io::AtomicFile>(d.file("per" + std::to_string(s))));
      outs.push_back(files.back().get());
    }
    Pipeline per(inputs, o);
    per.run_dedup(outs);
    std::string joined;
    for (auto& f : files) f->commit();
    for (size_t s = 0; s < inputs.size(); ++s) joined += test::read_file(d.file("per" + std::to_string(s)));
    EXPECT_TRUE(joined == test::read_file(d.file("after.jsonl"))) << name;
  }
}

// Compressed inputs whose decompressed copy cannot be kept (no room under the reserve) or is
// given up at its first bytes (the free space below the reserve then): decompressed again, the
// candidates read at once, with the results of the plain inputs; and pairs read again from the
// copies are those of the plain inputs.
TEST(Pipeline, CompressedInputsGiveTheSameResultsWithOrWithoutTheirCopies) {
  test::TempDir d;
  const std::vector<std::string> inputs = spread_families(d);
  test::TempDir dz;
  const std::vector<std::string> compressed = spread_families(dz, true);
  RunOptions o;
  o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.6");
  o.tuning.temp_dir = dz.path();
  const auto dedup = [&](const std::vector<std::string>& in, const RunOptions& opt, const std::string& file) {
    auto p = std::make_unique<Pipeline>(in, opt);
    io::AtomicFile out(d.file(file));
    p->run_dedup(out);
    out.commit();
    return p;
  };
  const auto plain = dedup(inputs, o, "plain.jsonl");
  ASSERT_GT(plain->stats().removed, 300u);
  const auto same = [&](const Pipeline& p, const std::string& file, const std::string& what) {
    EXPECT_TRUE(test::read_file(d.file(file)) == test::read_file(d.file("plain.jsonl"))) << what;
    EXPECT_EQ(p.clustering().keeper, plain->clustering().keeper) << what;
    EXPECT_TRUE(std::equal(p.removed_similarity().begin(), p.removed_similarity().end(), plain->removed_similarity().begin(),
                           plain->removed_similarity().end())) << what;
  };
  RunOptions no_room = o;
  no_room.tuning.temp_keep_free = uint64_t{1} << 62;
  const auto a = dedup(compressed, no_room, "no_room.jsonl");
  same(*a, "no_room.jsonl", "no room for a copy");
  EXPECT_EQ(a->stats().copied_bytes, 0u);
  EXPECT_NE(a->stats().copy_note.find("no temporary copy can be made in " + dz.path()), std::string::npos) << a->stats().copy_note;
  struct statfs fs {};
  if (::statfs(dz.path().c_str(), &fs) != 0 || !io::ScratchCopy::create(dz.path())) GTEST_SKIP() << "no decompressed copies in " << dz.path() << " (not ext4)";
  RunOptions tight = o;  // room for the trial copy, not for the first bytes of a real one
  tight.tuning.temp_keep_free = uint64_t{fs.f_bavail} * static_cast<uint64_t>(fs.f_bsize) - (uint64_t{32} << 20);
  const auto b = dedup(compressed, tight, "tight.jsonl");
  same(*b, "tight.jsonl", "copies given up");
  EXPECT_EQ(b->stats().copied_bytes, 0u);
  EXPECT_NE(b->stats().copy_note.find("free space in " + dz.path()), std::string::npos) << b->stats().copy_note;
  EXPECT_GT(b->stats().verify_docs, 0u);
  const auto c = dedup(compressed, o, "copied.jsonl");
  same(*c, "copied.jsonl", "copies");
  EXPECT_GT(c->stats().copied_bytes, 0u);
  // Pairs: the same pairs and similarities from the copies as from the plain files.
  const auto pairs = [&](const std::vector<std::string>& in) {
    RunOptions po = o;
    po.tuning.stream_pairs = false;
    Pipeline p(in, po);
    p.run(Pipeline::Mode::Pairs);
    std::vector<std::tuple<std::string, std::string, double>> got;
    for (const auto& e : p.pairs()) got.emplace_back(std::string(p.id(e.a)), std::string(p.id(e.b)), e.similarity);
    std::sort(got.begin(), got.end());
    return std::make_pair(got, p.stats().copied_bytes);
  };
  const auto [plain_pairs, none] = pairs(inputs);
  const auto [copied_pairs, copied] = pairs(compressed);
  EXPECT_GT(plain_pairs.size(), 1000u);
  EXPECT_TRUE(plain_pairs == copied_pairs);
  EXPECT_EQ(none, 0u);
  EXPECT_EQ(copied, c->stats().copied_bytes);
}

// An input that changes while run_dedup verifies and writes: the run stops with an error, the
// writer with it, and no output is put in place; also where the input changes while the next
// group is read ahead on a thread of its own (small groups, 2 threads): that thread's error stops
// the run.
TEST(Pipeline, RunDedupStopsItsWriterWhenTheRunFails) {
  for (const uint64_t group_bytes : {uint64_t{32} << 20, uint64_t{4096}}) {
    test::TempDir d;
    const std::vector<std::string> inputs = spread_families(d);
    const std::string original = test::read_file(inputs[0]);
    RunOptions o;
    o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.6");
    o.tuning.threads = 2;
    o.tuning.verify_group_bytes = group_bytes;
    bool changed = false;
    o.tuning.progress = [&](const Progress& p) {
      if (!changed && std::string_view(p.stage) == "verify") {
        changed = true;
        test::write_file(inputs[0], original.substr(0, original.size() / 2));
      }
    };
    Pipeline p(inputs, o);
    {
      io::AtomicFile out(d.file("out.jsonl"));
      EXPECT_THROW(p.run_dedup(out), IoError) << group_bytes;
    }
    EXPECT_TRUE(changed) << group_bytes;
    EXPECT_FALSE(std::filesystem::exists(d.file("out.jsonl"))) << group_bytes;
  }
}

// The writer's own error (here a full device) ends run_dedup with it.
TEST(Pipeline, RunDedupReportsItsWritersError) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  test::TempDir d;
  const std::vector<std::string> inputs = spread_families(d);
  RunOptions o;
  o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.6");
  Pipeline p(inputs, o);
  io::AtomicFile out("/dev/full");
  try {
    p.run_dedup(out);
    ADD_FAILURE() << "wrote to a full device";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write output"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, InputChangedBetweenPassesIsDetected) {
  test::TempDir d;
  test::write_file(d.file("in.jsonl"), "{\"id\": \"a\", \"text\": \"one two three four\"}\n"
                                       "{\"id\": \"b\", \"text\": \"one two three four\"}\n");
  RunOptions o;
  Pipeline p({d.file("in.jsonl")}, o);
  p.run(Pipeline::Mode::Dedup);
  test::write_file(d.file("in.jsonl"), "{\"id\": \"x\", \"text\": \"one two three four\"}\n");
  io::AtomicFile out(d.file("out.jsonl"));
  EXPECT_THROW(p.write_kept(out), IoError);
}

// simhash, estimate: the pairs are exactly those whose SimHashes are within the distance, scored
// 1 - d/64, the same for any thread count; with a Jaccard threshold every reported pair is a
// truth pair with its exact similarity.
TEST(Pipeline, SimHashPairsAreExactlyThoseWithinTheDistance) {
  const std::string corpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";
  std::vector<ScoredPair> first;
  for (int threads : {1, 2}) {
    RunOptions o;
    o.spec = PipelineSpec::parse("words:3 simhash:8");
    o.tuning.threads = threads;
    Pipeline p({corpus}, o);
    p.run(Pipeline::Mode::Pairs);
    const auto h = p.simhashes();
    std::vector<ScoredPair> want;
    for (DocId a = 0; a < h.size(); ++a)
      for (DocId b = a + 1; b < h.size(); ++b)
        if (const int d = hamming_distance(h[a], h[b]); d <= 8) want.push_back({a, b, simhash_similarity(d)});
    ASSERT_GT(want.size(), 5u);
    EXPECT_EQ(p.pairs(), want);
    if (threads == 1) first = p.pairs();
    EXPECT_EQ(p.pairs(), first);
  }
  const auto truth = load_truth(NEARDUP_SAMPLE_DIR "/mmds-articles-2500.truth.tsv.zst");
  const auto got = run_pairs({corpus}, "words:3 simhash:8 verify:0.8");
  ASSERT_FALSE(got.empty());
  for (const auto& [k, j] : got) {
    ASSERT_TRUE(truth.count(k)) << k.first << " " << k.second;
    EXPECT_NEAR(j, truth.at(k), 1e-6);
    EXPECT_GE(j, 0.8);
  }
}

// The expected memory, from a sample of 1 MB of a real corpus of 4 MB: the documents and their
// shingles as the run then finds them, and the state per document as the run keeps it.
TEST(Pipeline, MemoryEstimateMatchesTheRun) {
  const std::string corpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";
  for (const char* spec : {"words:3 oph:128 lsh:21x6 verify:0.5", "words:3 simhash:3 verify:0.5",
                           "words:3 minhash:64 estimate:0.5", "words:3 bottomk:64 verify:0.5"}) {
    SCOPED_TRACE(spec);
    RunOptions o;
    o.spec = PipelineSpec::parse(spec);
    o.tuning.threads = 2;
    Pipeline p({corpus}, o);
    const MemoryEstimate whole = p.estimate_memory();
    const MemoryEstimate m = p.estimate_memory(1 << 20);
    EXPECT_TRUE(whole.input.whole);
    EXPECT_FALSE(m.input.whole);
    p.run(Pipeline::Mode::Dedup);
    const RunStats& s = p.stats();
    EXPECT_DOUBLE_EQ(whole.input.records, static_cast<double>(s.documents));
    EXPECT_DOUBLE_EQ(whole.input.text_bytes, static_cast<double>(s.text_bytes));
    EXPECT_NEAR(m.input.records / static_cast<double>(s.documents), 1.0, 0.2);
    EXPECT_NEAR(m.input.text_bytes / static_cast<double>(s.text_bytes), 1.0, 0.2);
    // The state the estimate predicts against what the run holds, measured from its containers.
    EXPECT_NEAR(whole.per_document * static_cast<double>(s.documents) / static_cast<double>(p.state_bytes()), 1.0, 0.01);
    EXPECT_NEAR(m.per_document * static_cast<double>(s.documents) / static_cast<double>(p.state_bytes()), 1.0, 0.2);
    // The shingles per document, as an exact verification would hold them.
    if (o.spec.verify == VerifyMode::Exact) {
      EXPECT_NEAR((whole.verify_per_document - 40) / 8 * static_cast<double>(s.documents) / static_cast<double>(s.shingles), 1.0, 0.25);
    }
    EXPECT_GT(m.peak(), static_cast<double>(s.documents) * m.per_document);
    // Spilled, the document table takes its bytes on disk (every method: ids, their ends, text
    // lengths, record positions), and the band keys their 8 bytes per band and document (oph
    // with exact verification keeps keys; the others have none to spill); a spilled run writes
    // as much.
    uint64_t table = s.documents * (sizeof(uint64_t) + sizeof(uint32_t) + sizeof(io::RecordPos));
    for (DocId d = 0; d < s.documents; ++d) table += p.id(d).size();
    // Oph with exact verification: the band keys, and a dedup's text hashes (16 bytes a document);
    // then the bands' buckets until they are merged, at most a size and a document (6 bytes) per
    // band and document.
    const bool oph = o.spec.method == SketchMethod::Oph;
    const uint64_t keys = oph ? s.documents * (static_cast<uint64_t>(p.spec().lsh.bands) * 8 + 16) : 0;
    const uint64_t buckets_at_most = oph ? s.documents * static_cast<uint64_t>(p.spec().lsh.bands) * 6 : 0;
    EXPECT_NEAR(whole.spill_disk / static_cast<double>(table + keys + buckets_at_most), 1.0, 1e-9);
    EXPECT_EQ(whole.spill_keys, keys > 0);
    EXPECT_GT(whole.spill_saves, 0.0);
    EXPECT_LT(whole.peak_spilled(), whole.peak());
    test::TempDir tmp;
    RunOptions limited = o;
    limited.tuning.memory_limit = 1;
    limited.tuning.temp_dir = tmp.path();
    Pipeline q({corpus}, limited);
    q.run(Pipeline::Mode::Dedup);
    if (oph) {  // the buckets' streams too
      EXPECT_GT(q.stats().spilled_bytes, table + keys);
      EXPECT_LE(q.stats().spilled_bytes, table + keys + buckets_at_most);
    } else {
      EXPECT_EQ(q.stats().spilled_bytes, table + keys);
    }
  }
}

// A file of one record longer than the sample can read: the estimate counts the record and its
// text, and the memory of working it (more than the record itself), rather than nothing.
TEST(Pipeline, MemoryEstimateOfARecordLongerThanTheSample) {
  std::mt19937_64 rng(5);
  std::string text;
  while (text.size() < (3u << 20)) text += test::join(test::random_words(rng, 1000)) + " ";
  test::TempDir d;
  test::write_file(d.file("one.jsonl"), "{\"id\": \"one\", \"text\": \"" + text + "\"}\n");
  for (const char* spec : {"words:5 oph:128 lsh:21x6 verify:0.8", "words:5 simhash:3 verify:0.8", "words:5 bottomk:64 verify:0.8"}) {
    SCOPED_TRACE(spec);
    RunOptions o;
    o.spec = PipelineSpec::parse(spec);
    o.tuning.threads = 2;
    Pipeline p({d.file("one.jsonl")}, o);
    const MemoryEstimate m = p.estimate_memory(256 << 10);
    EXPECT_FALSE(m.input.whole);
    EXPECT_DOUBLE_EQ(m.input.records, 1);
    EXPECT_GE(m.input.text_bytes, static_cast<double>(text.size()));
    EXPECT_GT(m.state, 1.5 * static_cast<double>(text.size()));
    if (o.spec.verify == VerifyMode::Exact) {
      EXPECT_GT(m.verify_per_document, static_cast<double>(text.size()));  // its shingles, when verified
    }
  }
}

// A reused id stops the run naming both records by file and line, also in compressed inputs
// (records are found by position; their line numbers are counted for the message); the same with
// the document table spilled, whose ids are hashed twice instead of held in an array.
TEST(Pipeline, DuplicateIdsAreNamedByFileAndLine) {
  test::TempDir d;
  std::string a, b;
  for (int i = 1; i <= 5; ++i) a += "{\"id\": \"a" + std::to_string(i) + "\", \"text\": \"first file words " + std::to_string(i) + "\"}\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string id = i == 7 ? "a2" : "b" + std::to_string(i);
    b += i == 4 ? "\n" : "{\"id\": \"" + id + "\", \"text\": \"second file words " + std::to_string(i) + "\"}\n";
  }
  test::write_file(d.file("a.jsonl"), a);
  test::write_file(d.file("b.jsonl.gz"), test::gzip(b));
  for (const bool spill : {false, true}) {
    RunOptions o;
    o.tuning.threads = 2;
    o.tuning.spill_documents = spill;
    Pipeline p({d.file("a.jsonl"), d.file("b.jsonl.gz")}, o);
    try {
      p.run(Pipeline::Mode::Dedup);
      ADD_FAILURE() << "a reused id must stop the run";
    } catch (const FormatError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("b.jsonl.gz:7: id \"a2\" is already used by "), std::string::npos) << m;
      EXPECT_NE(m.find("a.jsonl:2 (1 record reuses an earlier id)"), std::string::npos) << m;
    }
    o.duplicate_ids = DuplicateIds::Keep;
    Pipeline keep({d.file("a.jsonl"), d.file("b.jsonl.gz")}, o);
    keep.run(Pipeline::Mode::Dedup);
    EXPECT_EQ(keep.stats().duplicate_ids, 1u);
    EXPECT_EQ(keep.size(), 13u);
  }
}

// Documents given in memory give the same pairs, removals and clusters as the same records read
// from a file, for every method; the kept "records" are the kept ids.
TEST(Pipeline, InMemoryDocumentsEqualTheFile) {
  const std::string corpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";
  std::vector<io::Document> docs;
  {
    io::InputSet in({corpus}, io::InputFormat::Auto);
    io::RecordReader reader(in, io::ReaderOptions{});
    io::Record r;
    while (reader.next(r)) docs.push_back({std::string(r.id), std::string(r.text)});
  }
  ASSERT_EQ(docs.size(), 2500u);
  test::TempDir d;
  for (const char* spec : {"words:3 oph:128 verify:0.7", "words:3 minhash:64 verify:0.5", "words:3 bottomk:64 verify:0.5",
                           "words:3 simhash:6 verify:0.6", "words:3 exact verify:0.6"}) {
    RunOptions o;
    o.spec = PipelineSpec::parse(spec);
    o.tuning.threads = 2;
    std::map<std::string, std::string> from_file, from_memory;
    for (int memory = 0; memory < 2; ++memory) {
      auto p = memory ? std::make_unique<Pipeline>(docs, o) : std::make_unique<Pipeline>(std::vector<std::string>{corpus}, o);
      p->run(Pipeline::Mode::Dedup);
      auto& out = memory ? from_memory : from_file;
      for (const char* name : {"kept", "removed", "clusters"}) {
        {
          io::AtomicFile f(d.file(name));
          if (name[0] == 'k') p->write_kept(f);
          if (name[0] == 'r') p->write_removed(f);
          if (name[0] == 'c') p->write_clusters(f);
          f.commit();
        }
        out[name] = test::read_file(d.file(name));
      }
      out["documents"] = std::to_string(p->stats().documents);
    }
    EXPECT_EQ(from_file["removed"], from_memory["removed"]) << spec;
    EXPECT_EQ(from_file["clusters"], from_memory["clusters"]) << spec;
    EXPECT_EQ(from_memory["documents"], "2500") << spec;
    EXPECT_FALSE(from_file["removed"].empty()) << spec;
    // The kept JSONL lines of the file run name the kept ids of the memory run, in order.
    std::string kept_ids;
    std::istringstream lines(from_file["kept"]);
    for (std::string line; std::getline(lines, line);) {
      const size_t at = line.find("\"id\": \"") != std::string::npos ? line.find("\"id\": \"") + 7 : line.find("\"id\":\"") + 6;
      kept_ids += line.substr(at, line.find('"', at) - at) + "\n";
    }
    EXPECT_EQ(kept_ids, from_memory["kept"]) << spec;
  }
}

// A bad document in memory (an id with a TAB) is named by its number.
TEST(Pipeline, InMemoryBadDocumentIsNamed) {
  RunOptions o;
  std::vector<io::Document> docs = {{"a", "one two three"}, {"b\tc", "four five six"}};
  Pipeline p(docs, o);
  try {
    p.run(Pipeline::Mode::Pairs);
    FAIL() << "an id with a TAB was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("<memory>:2: id holds a TAB"), std::string::npos) << e.what();
  }
}

// Narrow band keys keep each key's top half: two documents share a band when some band's top
// halves are equal, in half the bytes of the full keys.
TEST(SketchStore, NarrowKeysShareABandByTheirTopHalves) {
  SketchStore wide, narrow;
  wide.reset(3, 0);
  narrow.reset(3, 0, true);
  const uint64_t keys[4][3] = {{0x1111'0000'0000'0001, 0x2222'0000'0000'0002, 0x3333'0000'0000'0003},
                               {0x1111'0000'0000'0009, 0x4444'0000'0000'0002, 0x5555'0000'0000'0003},  // doc 0's top half in band 0
                               {0x6666'0000'0000'0001, 0x7777'0000'0000'0002, 0x3333'0000'0000'0003},  // doc 0's key in band 2
                               {0x8888'0000'0000'0001, 0x9999'0000'0000'0002, 0xAAAA'0000'0000'0003}};
  for (const auto& k : keys) {
    wide.push_keys(k);
    narrow.push_keys(k);
  }
  wide.finish_keys();
  narrow.finish_keys();
  EXPECT_TRUE(narrow.has_keys());
  EXPECT_TRUE(narrow.band_keys.empty());
  const LshParams lsh{3, 1};
  EXPECT_TRUE(narrow.share_band(0, 1, 0, lsh));
  EXPECT_FALSE(wide.share_band(0, 1, 0, lsh));  // the full keys differ below the top half
  EXPECT_TRUE(narrow.share_band(0, 2, 0, lsh));
  EXPECT_TRUE(wide.share_band(0, 2, 0, lsh));
  EXPECT_FALSE(narrow.share_band(0, 3, 0, lsh));
  EXPECT_FALSE(narrow.share_band(1, 2, 0, lsh));
  EXPECT_EQ(wide.bytes() - narrow.bytes(), 4u * 3 * 4);
}

// Keys are staged and written band by band in runs: each still lands at its document's place in
// its band's column, in memory (full or narrow) and spilled, whether or not the documents fill
// the last run.
TEST(SketchStore, StagedKeysLandAtTheirDocumentsPlaces) {
  constexpr size_t kBands = 5;
  const auto key = [](size_t doc, size_t band) { return (uint64_t{doc} * 7919 + band) << 32 | (doc * kBands + band); };
  for (const size_t n : {size_t{1}, size_t{255}, size_t{256}, size_t{1000}}) {
    test::TempDir d;
    SketchStore wide, narrow, spilled;
    wide.reset(kBands, 0);
    narrow.reset(kBands, 0, true);
    spilled.reset(kBands, 0);
    spilled.spill_keys_to(d.path());
    for (size_t doc = 0; doc < n; ++doc) {
      uint64_t k[kBands];
      for (size_t band = 0; band < kBands; ++band) k[band] = key(doc, band);
      wide.push_keys(k);
      narrow.push_keys(k);
      spilled.push_keys(k);
    }
    wide.finish_keys();
    narrow.finish_keys();
    spilled.finish_keys();
    spilled.spilled->finish();
    for (size_t band = 0; band < kBands; ++band) {
      ASSERT_EQ(wide.band_keys[band].size(), n);
      ASSERT_EQ(narrow.narrow_keys[band].size(), n);
      const auto column = spilled.spilled->map(band);
      ASSERT_EQ(column.size(), n * sizeof(uint64_t));
      for (size_t doc = 0; doc < n; ++doc) {
        uint64_t from_disk;
        std::memcpy(&from_disk, column.data() + doc * sizeof(uint64_t), sizeof from_disk);
        EXPECT_EQ(wide.band_keys[band][doc], key(doc, band)) << n << " documents, band " << band << ", document " << doc;
        EXPECT_EQ(narrow.narrow_keys[band][doc], key(doc, band) >> 32) << n << " documents, band " << band << ", document " << doc;
        EXPECT_EQ(from_disk, key(doc, band)) << n << " documents, band " << band << ", document " << doc;
      }
    }
  }
}
