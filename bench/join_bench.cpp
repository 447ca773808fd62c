// The all-pairs join against brute force on a real corpus: bottom-k fingerprints
// (word 3-shingles, N = 128) of every document, then every pair with fingerprint Jaccard >= alpha
//   * by the prefix-filter join (median of REPS runs), and
//   * by comparing every pair with the fastest kernel (early abort + SIMD), once,
// on THREADS threads; checks that both give the same pairs and values, and prints the ratio.
//
//   build/bench/neardup_join_bench CORPUS [ALPHA=0.5] [THREADS=2] [REPS=3]
// (NEARDUP_JOIN_ONLY=1 skips brute force, for profiling.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "internal/parallel.h"
#include "neardup/neardup.h"

using namespace neardup;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS [ALPHA] [THREADS] [REPS]\n", argv[0]);
    return 2;
  }
  const double alpha = argc > 2 ? std::atof(argv[2]) : 0.5;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 3;

  Fingerprints f;
  f.size = 128;
  {
    io::InputSet in({argv[1]}, io::InputFormat::Auto);
    io::RecordReader r(in, {});
    io::Record rec;
    Shingler sh({ShingleKind::Words, 3, kDefaultSeed});
    std::vector<ShingleHash> s;
    while (r.next(rec)) {
      sh.shingles(rec.text, s);
      f.push_back(bottomk_fingerprint(s, 128));
    }
  }
  const size_t n = f.count();
  std::printf("corpus: %s, %zu documents, N = 128, alpha = %.2f, %d threads, kernel %s\n", argv[1], n, alpha, threads,
              isa_name(active_isa()));

  std::vector<double> times;
  std::vector<ScoredPair> joined;
  JoinStats st;
  for (int r = 0; r < reps; ++r) {
    st = {};
    const auto t = Clock::now();
    joined = fingerprint_join(f, alpha, threads, &st);
    times.push_back(since(t));
  }
  std::sort(times.begin(), times.end());
  const double join_s = times[times.size() / 2];
  std::printf("join:        %.3f s (median of %d), %zu pairs, %llu pruned by position, %llu candidates compared (%.4f%% of all pairs)\n", join_s,
              reps, joined.size(), static_cast<unsigned long long>(st.pruned), static_cast<unsigned long long>(st.candidates),
              100.0 * static_cast<double>(st.candidates) / (static_cast<double>(n) * (n - 1) / 2));

  if (std::getenv("NEARDUP_JOIN_ONLY")) return 0;  // for profiling the join alone
  const auto t = Clock::now();
  std::vector<std::vector<ScoredPair>> rows(n);
  internal::parallel_for(n, threads, [&](size_t a, size_t) {
    for (size_t b = a + 1; b < n; ++b) {
      const double j = fingerprint_jaccard_fast(f[a], f[b], alpha - kSimilarityEpsilon);
      if (j != kAborted && j + kSimilarityEpsilon >= alpha)
        rows[a].push_back({static_cast<DocId>(a), static_cast<DocId>(b), j});
    }
  });
  const double brute_s = since(t);
  std::vector<ScoredPair> brute;
  for (auto& r : rows) brute.insert(brute.end(), r.begin(), r.end());
  std::printf("brute force: %.3f s, %zu pairs (%.1f M comparisons/s)\n", brute_s, brute.size(),
              static_cast<double>(n) * (n - 1) / 2 / brute_s / 1e6);
  const bool same = brute == joined;
  std::printf("identical output: %s; join is %.0fx faster\n", same ? "yes" : "NO", brute_s / join_s);
  return same ? 0 : 1;
}
