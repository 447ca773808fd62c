// The error of the two bottom-k estimators against exact Jaccard on real data:
// for every pair of a ground-truth file (all pairs with J >= 0.5), the exact Jaccard of the
// shingle sets, the reference design's estimator (Jaccard of the fingerprints) and the standard bottom-k
// estimator, for N = 64, 128, 256. Prints bias (mean of estimate - J), RMSE and the 99th
// percentile of |error| per similarity bin, and the share of pairs at J >= t + 0.05 whose
// standard estimate reaches bottomk_candidate_threshold(t, N) for t = 0.5, 0.7, 0.8, 0.9.
//
//   build/bench/neardup_estimator_error CORPUS.jsonl.zst TRUTH.tsv.zst [K=3]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "neardup/neardup.h"

using namespace neardup;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CORPUS TRUTH [K]\n", argv[0]);
    return 2;
  }
  const int k = argc > 3 ? std::atoi(argv[3]) : 3;
  std::map<std::string, DocId> ids;
  std::vector<std::vector<ShingleHash>> sets;
  {
    io::InputSet in({argv[1]}, io::InputFormat::Auto);
    io::RecordReader r(in, {});
    io::Record rec;
    Shingler sh({ShingleKind::Words, k, kDefaultSeed});
    while (r.next(rec)) {
      ids[std::string(rec.id)] = static_cast<DocId>(sets.size());
      sets.push_back(sh.shingle_set(rec.text));
    }
  }
  std::vector<std::pair<DocId, DocId>> pairs;
  {
    std::istringstream in(io::read_all(argv[2], argv[2]));
    std::string a, b;
    double j;
    while (in >> a >> b >> j) pairs.push_back({ids.at(a), ids.at(b)});
  }
  std::printf("corpus %s: %zu documents, %zu truth pairs (J >= 0.5), word %d-shingles\n", argv[1], sets.size(),
              pairs.size(), k);
  const double bins[] = {0.5, 0.6, 0.7, 0.8, 0.9, 1.0001};
  for (int n : {64, 128, 256}) {
    std::vector<std::vector<SigValue>> fp(sets.size());
    for (size_t i = 0; i < sets.size(); ++i) fp[i] = bottomk_fingerprint(sets[i], n);
    struct Acc {
      std::vector<double> seed, standard;
    };
    std::vector<Acc> acc(5);
    std::vector<double> exact(pairs.size()), est(pairs.size());
    for (size_t p = 0; p < pairs.size(); ++p) {
      const auto [a, b] = pairs[p];
      const double j = jaccard(sets[a], sets[b]);
      exact[p] = j;
      est[p] = bottomk_estimate(fp[a], fp[b], n);
      for (int bin = 0; bin < 5; ++bin)
        if (j >= bins[bin] && j < bins[bin + 1]) {
          acc[bin].seed.push_back(fingerprint_jaccard(fp[a], fp[b]) - j);
          acc[bin].standard.push_back(est[p] - j);
        }
    }
    std::printf("\nN = %d                       seed estimator (fingerprint Jaccard)   standard bottom-k estimator\n", n);
    std::printf("  J bin       pairs      bias      RMSE   p99|err|            bias      RMSE   p99|err|\n");
    auto stats = [](std::vector<double> e, double& bias, double& rmse, double& p99) {
      bias = rmse = p99 = 0;
      if (e.empty()) return;
      for (double x : e) bias += x, rmse += x * x;
      bias /= static_cast<double>(e.size());
      rmse = std::sqrt(rmse / static_cast<double>(e.size()));
      for (double& x : e) x = std::fabs(x);
      std::sort(e.begin(), e.end());
      p99 = e[std::min(e.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(e.size())))];
    };
    for (int bin = 0; bin < 5; ++bin) {
      double b1, r1, q1, b2, r2, q2;
      stats(acc[bin].seed, b1, r1, q1);
      stats(acc[bin].standard, b2, r2, q2);
      std::printf("  %.1f-%.1f %9zu  %+8.4f  %8.4f  %8.4f        %+8.4f  %8.4f  %8.4f\n", bins[bin], std::min(1.0, bins[bin + 1]),
                  acc[bin].seed.size(), b1, r1, q1, b2, r2, q2);
    }
    for (double t : {0.5, 0.7, 0.8, 0.9}) {
      const double s = bottomk_candidate_threshold(t, n);
      size_t want = 0, pass = 0;
      for (size_t p = 0; p < pairs.size(); ++p)
        if (exact[p] >= t + 0.05) ++want, pass += est[p] + kSimilarityEpsilon >= s;
      std::printf("  t = %.1f: candidate threshold %.3f keeps %zu of %zu pairs with J >= t + 0.05 (%.2f%%)\n", t, s, pass,
                  want, want ? 100.0 * static_cast<double>(pass) / static_cast<double>(want) : 100.0);
    }
  }
  return 0;
}
