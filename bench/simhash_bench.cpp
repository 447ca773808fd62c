// SimHash find-all and online index: wall time of simhash_find_all over N random
// fingerprints, and over N fingerprints of real text (SimHashes of ~512-byte pieces of a corpus's
// documents, cut at spaces; PIECE bytes to reach 10M fingerprints from a smaller corpus), for
// k = 3 and 6 with the batch plan; then an online index of the N
// random fingerprints: inserts and queries per second, one at a time. Medians of REPS runs.
//
//   build/bench/neardup_simhash_bench [N=1000000] [THREADS=1] [REPS=3] [CORPUS] [PIECE=512]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_corpus.h"
#include "neardup/neardup.h"

using namespace neardup;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

static std::vector<uint64_t> real_fingerprints(const std::string& path, size_t n, size_t piece) {
  Shingler sh({ShingleKind::Words, 3, kDefaultSeed});
  SimHasher hasher;
  std::vector<ShingleHash> s;
  std::vector<uint64_t> out;
  // Pieces with fewer than 8 shingles are left out, so more are read than kept.
  for (const auto& t : bench::load_pieces(path, n + n / 4, piece)) {
    if (out.size() == n) break;
    sh.shingles(t, s);
    if (s.size() >= 8) out.push_back(hasher(s));
  }
  return out;
}

static void find_all(const char* name, const std::vector<uint64_t>& fps, int threads, int reps) {
  for (int k : {3, 6}) {
    const SimHashPlan plan = plan_simhash_tables(k, fps.size(), SimHashWorkload::Batch);
    std::vector<double> times;
    FindAllStats st;
    size_t pairs = 0;
    for (int r = 0; r < reps; ++r) {
      st = {};
      const auto t = Clock::now();
      pairs = simhash_find_all(fps, plan, threads, {}, &st).size();
      times.push_back(since(t));
    }
    std::sort(times.begin(), times.end());
    std::printf("find-all %-6s n=%zu k=%d: %.3f s (median of %d, %d threads), %zu tables (%s), %zu pairs, %llu compared\n",
                name, fps.size(), k, times[times.size() / 2], reps, threads, plan.tables(), plan.layout.c_str(), pairs,
                static_cast<unsigned long long>(st.compared));
  }
}

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  std::mt19937_64 rng(42);
  std::vector<uint64_t> random(n);
  for (auto& x : random) x = rng();
  find_all("random", random, threads, reps);
  if (argc > 4) {
    const auto real = real_fingerprints(argv[4], n, argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 512);
    find_all("real", real, threads, reps);
  }
  // Online: inserts then queries, one at a time, on one thread.
  for (int k : {3, 6}) {
    SimHashIndex index(plan_simhash_tables(k, n));
    auto t = Clock::now();
    for (size_t i = 0; i < n; ++i) index.insert(random[i], static_cast<DocId>(i));
    index.merge();
    const double insert_s = since(t);
    const size_t q = 200'000;
    uint64_t compared = 0, hits = 0;
    t = Clock::now();
    for (size_t i = 0; i < q; ++i) {
      // Half near copies of indexed fingerprints (2 bits flipped), half random.
      uint64_t x = i % 2 ? rng() : random[rng() % n] ^ (uint64_t{1} << (rng() % 64)) ^ (uint64_t{1} << (rng() % 64));
      hits += index.query(x, &compared).size();
    }
    const double query_s = since(t);
    std::printf("online n=%zu k=%d: %zu tables; %.2f M inserts/s (with merges); %.3f M queries/s, %.1f entries "
                "compared per query, %llu hits\n",
                n, k, index.plan().tables(), n / insert_s / 1e6, q / query_s / 1e6,
                static_cast<double>(compared) / q, static_cast<unsigned long long>(hits));
  }
}
