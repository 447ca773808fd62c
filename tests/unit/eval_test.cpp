#include "neardup/eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "neardup/error.h"
#include "test_util.h"

using namespace neardup;
using namespace neardup::test;

namespace {

using IntPair = std::pair<int, int>;
std::string name(int i) { return "doc" + std::to_string(i); }

// Random truth (pairs with similarity >= 0.5, on 3 decimals) and a random report: some truth
// pairs with their score perturbed, some pairs absent from the truth, some written reversed or
// twice. evaluate_pairs must agree with a direct count over the two maps.
TEST(Eval, AgreesWithADirectCount) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::map<IntPair, double> truth, reported;
    std::string truth_text, pairs_text;
    size_t repeated = 0;
    for (int i = 0; i < 300; ++i) {
      int a = static_cast<int>(rng() % 80), b = static_cast<int>(rng() % 80);
      if (a == b) continue;
      if (a > b) std::swap(a, b);
      const double j = std::round((0.5 + 0.5 * u(rng)) * 1000) / 1000;
      if (!truth.emplace(IntPair{a, b}, j).second) continue;
      truth_text += name(a) + "\t" + name(b) + "\t" + std::to_string(j) + "\n";
    }
    for (const auto& [p, j] : truth) {
      if (u(rng) < 0.3) continue;  // a miss
      const double s = std::clamp(j + (u(rng) - 0.5) * 0.2, 0.0, 1.0);
      reported[p] = s;
      const bool flip = rng() % 2;
      pairs_text += name(flip ? p.second : p.first) + "\t" + name(flip ? p.first : p.second) + "\t" + std::to_string(s) + "\textra\n";
      if (rng() % 10 == 0) {
        pairs_text += name(p.first) + "\t" + name(p.second) + "\t0.1\n";  // a repeat: the first line counts
        ++repeated;
      }
    }
    for (int i = 0; i < 60; ++i) {  // pairs below the floor
      const int a = static_cast<int>(80 + rng() % 40), b = static_cast<int>(rng() % 80);
      const double s = std::round(u(rng) * 1000) / 1000;
      if (!reported.emplace(IntPair{b, a}, s).second) continue;
      pairs_text += name(a) + "\t" + name(b) + "\t" + std::to_string(s) + "\n";
    }
    TempDir dir;
    write_file(dir.file("truth.tsv"), "# a comment\n" + truth_text);
    write_file(dir.file("pairs.tsv"), pairs_text);
    for (const double t : {0.5, 0.63, 0.8, 0.95}) {
      EvalOptions o;
      o.threshold = t;
      o.list = true;
      const EvalResult r = evaluate_pairs(dir.file("truth.tsv"), dir.file("pairs.tsv"), o);
      uint64_t pos = 0, found = 0, pred = 0, correct = 0;
      std::set<std::string> misses, fps;
      for (const auto& [p, j] : truth) {
        if (j < t) continue;
        ++pos;
        const auto it = reported.find(p);
        if (it != reported.end() && it->second >= t) ++found;
        else misses.insert(std::min(name(p.first), name(p.second)) + " " + std::max(name(p.first), name(p.second)));
      }
      for (const auto& [p, s] : reported) {
        if (s < t) continue;
        ++pred;
        const auto it = truth.find(p);
        if (it != truth.end() && it->second >= t) ++correct;
        else fps.insert(std::min(name(p.first), name(p.second)) + " " + std::max(name(p.first), name(p.second)));
      }
      ASSERT_EQ(r.truth_pairs, truth.size());
      ASSERT_EQ(r.reported_pairs, reported.size());
      ASSERT_EQ(r.repeated_pairs, repeated);
      ASSERT_EQ(r.overall.positives, pos) << seed << " " << t;
      ASSERT_EQ(r.overall.found, found) << seed << " " << t;
      ASSERT_EQ(r.overall.predictions, pred) << seed << " " << t;
      ASSERT_EQ(r.overall.correct, correct) << seed << " " << t;
      std::set<std::string> got_m, got_f;
      for (const auto& p : r.misses) got_m.insert(p.id1 + " " + p.id2);
      for (const auto& p : r.false_positives) got_f.insert(p.id1 + " " + p.id2);
      ASSERT_EQ(got_m, misses);
      ASSERT_EQ(got_f, fps);
      // The bins partition the totals.
      uint64_t bp = 0, bf = 0, bpr = 0, bc = 0;
      for (const auto& b : r.bins) bp += b.positives, bf += b.found, bpr += b.predictions, bc += b.correct;
      ASSERT_EQ(bp, pos);
      ASSERT_EQ(bf, found);
      ASSERT_EQ(bpr, pred);
      ASSERT_EQ(bc, correct);
      EXPECT_DOUBLE_EQ(r.bins.front().lo, std::floor(t * 10 + 1e-9) / 10);
      EXPECT_DOUBLE_EQ(r.bins.back().hi, 1.0);
    }
  }
}

TEST(Eval, BinsFloorAndScoreError) {
  TempDir dir;
  write_file(dir.file("t.tsv"), "a\tb\t0.55\nc\td\t0.95\ne\tf\t1.0\ng\th\t0.71\n");
  write_file(dir.file("p.tsv"), "b\ta\t0.58\nd\tc\t0.95\ne\tf\t0.9\nx\ty\t0.6\n");
  const EvalResult r = evaluate_pairs(dir.file("t.tsv"), dir.file("p.tsv"), {});
  EXPECT_DOUBLE_EQ(r.floor, 0.5);  // the default: 0.5 when no truth pair is lower
  EXPECT_DOUBLE_EQ(r.threshold, 0.5);
  ASSERT_EQ(r.bins.size(), 5u);  // 0.5-0.6 .. 0.9-1.0
  EXPECT_EQ(r.bins[0].positives, 1u);  // a-b
  EXPECT_EQ(r.bins[0].predictions, 1u);  // a-b at 0.58; x-y at 0.6 is in 0.6-0.7
  EXPECT_EQ(r.bins[1].predictions, 1u);
  EXPECT_EQ(r.bins[1].correct, 0u);
  EXPECT_EQ(r.overall.positives, 4u);
  EXPECT_EQ(r.overall.found, 3u);
  EXPECT_EQ(r.overall.predictions, 4u);
  EXPECT_EQ(r.overall.correct, 3u);
  EXPECT_EQ(r.bins[4].positives, 2u);  // 0.95 and 1.0 share the last bin
  EXPECT_NEAR(r.mean_abs_error, (0.03 + 0.0 + 0.1) / 3, 1e-12);
  EXPECT_NEAR(r.max_abs_error, 0.1, 1e-12);
}

TEST(Eval, BadInputIsRefusedByFileAndLine) {
  TempDir dir;
  write_file(dir.file("t.tsv"), "a\tb\t0.6\n");
  const auto msg = [&](const std::string& pairs, const EvalOptions& o = {}) -> std::string {
    write_file(dir.file("p.tsv"), pairs);
    try {
      evaluate_pairs(dir.file("t.tsv"), dir.file("p.tsv"), o);
    } catch (const FormatError& e) {
      return std::string("format: ") + e.what();
    } catch (const UsageError& e) {
      return std::string("usage: ") + e.what();
    }
    return "accepted";
  };
  EXPECT_NE(msg("a\tb\t0.6\nc d 0.5\n").find("p.tsv:2: fewer than three"), std::string::npos);
  EXPECT_NE(msg("a\tb\tnan\n").find("p.tsv:1: similarity 'nan' is not a number in [0, 1]"), std::string::npos);
  EXPECT_NE(msg("a\tb\t1.5\n").find("not a number in [0, 1]"), std::string::npos);
  EXPECT_NE(msg("a\ta\t1\n").find("with itself"), std::string::npos);
  EXPECT_EQ(msg("a\tb\t0.6\r\n\n"), "accepted");
  EvalOptions low;
  low.threshold = 0.4;
  EXPECT_NE(msg("a\tb\t0.6\n", low).find("usage: eval: threshold=0.400000 is below the truth's floor"), std::string::npos);
  EvalOptions floor;
  floor.truth_floor = 0.7;
  EXPECT_NE(msg("a\tb\t0.6\n", floor).find("below truth_floor="), std::string::npos);
  write_file(dir.file("low.tsv"), "a\tb\t0.6\nc\td\t0.327\n");
  EXPECT_DOUBLE_EQ(evaluate_pairs(dir.file("low.tsv"), dir.file("p.tsv"), {}).floor, 0.32);
  EXPECT_THROW(evaluate_pairs(dir.file("missing.tsv"), dir.file("p.tsv"), {}), IoError);
}

}  // namespace
