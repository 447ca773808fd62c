// Bottom-k MinHash benchmarks, on a real corpus held in memory:
//   * text -> fingerprint, MB/s of text per core: the reference design's four variants (naive; pipeline +
//     sort; pipeline + unordered_set + heap; pipeline + custom table + heap) and neardup's
//     (its Unicode tokenizer and shingles, then the default selector or the reference design's heap + table);
//   * fingerprint comparisons per second at N = 128, alpha = 0.5 over every pair of 2,000
//     documents (the reference design's set-up): classical, early abort, early abort + SIMD per kernel.
//
//   NEARDUP_BENCH_CORPUS=bench/data/kernel-200mb.jsonl NEARDUP_BENCH_MB=50 build/bench/neardup_bottomk_bench
//
// The reference design's variants hash as it does (32-bit FNV-1a over the bytes of K = 3 words, a word
// being a run of ASCII letters and digits or bytes >= 0x80); they are references for speed only.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <queue>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench_corpus.h"
#include "internal/testing.h"
#include "neardup/neardup.h"

using namespace neardup;

namespace {

std::string corpus_path() {
  const char* p = std::getenv("NEARDUP_BENCH_CORPUS");
  return p ? p : NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";
}

const std::vector<std::string>& texts() {
  static const std::vector<std::string> t = [] {
    const char* mb = std::getenv("NEARDUP_BENCH_MB");
    return bench::load_texts(corpus_path(), static_cast<size_t>(mb ? std::atof(mb) * 1e6 : 50e6));
  }();
  return t;
}

int64_t text_bytes() { return bench::total_bytes(texts()); }

constexpr int kN = 128;
constexpr int kK = 3;

// ---- The reference design's hashing ----

inline bool seed_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
constexpr uint32_t kFnvBasis = 2166136261u, kFnvPrime = 16777619u;

// Naive: split into a vector of words (copies), then hash each K-tuple of words from scratch.
template <class Collect>
void seed_naive(const std::string& text, Collect&& collect) {
  std::vector<std::string> words;
  std::string w;
  for (unsigned char c : text) {
    if (seed_alnum(c)) {
      w.push_back(static_cast<char>(c));
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  if (!w.empty()) words.push_back(w);
  for (size_t i = 0; i + kK <= words.size(); ++i) {
    uint32_t h = kFnvBasis;
    for (int k = 0; k < kK; ++k)
      for (unsigned char c : words[i + k]) h = (h ^ c) * kFnvPrime;
    collect(h);
  }
}

// Pipelined: K partial hashes updated together for every word character (K known at compile time).
template <int K, class Collect>
void seed_pipeline(const std::string& text, Collect&& collect) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  uint32_t pipe[K];
  for (auto& x : pipe) x = kFnvBasis;
  size_t i = 0, words = 0;
  while (i < n && !seed_alnum(p[i])) ++i;
  while (i < n) {
    while (i < n && seed_alnum(p[i])) {
      const uint32_t c = p[i];
      for (int k = 0; k < K; ++k) pipe[k] = (pipe[k] ^ c) * kFnvPrime;
      ++i;
    }
    if (++words >= K) collect(pipe[0]);
    for (int k = 0; k + 1 < K; ++k) pipe[k] = pipe[k + 1];
    pipe[K - 1] = kFnvBasis;
    while (i < n && !seed_alnum(p[i])) ++i;
  }
}

void sort_unique_first_n(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.size() > kN) v.resize(kN);
}

// The heap guarded by std::unordered_set (variant 3 of the seed).
class HeapUnorderedSet {
 public:
  void add_value(uint32_t h) {
    if (heap_.size() < kN) {
      if (set_.insert(h).second) heap_.push(h);
    } else if (h < heap_.top() && set_.insert(h).second) {
      set_.erase(heap_.top());
      heap_.pop();
      heap_.push(h);
    }
  }
  void finish(std::vector<uint32_t>& out) {
    out.clear();
    for (; !heap_.empty(); heap_.pop()) out.push_back(heap_.top());
    std::reverse(out.begin(), out.end());
    set_.clear();
  }

 private:
  std::priority_queue<uint32_t> heap_;
  std::unordered_set<uint32_t> set_;
};

void BM_FingerprintSeedNaive(benchmark::State& state) {
  std::vector<uint32_t> all;
  for (auto _ : state)
    for (const auto& t : texts()) {
      all.clear();
      seed_naive(t, [&](uint32_t h) { all.push_back(h); });
      sort_unique_first_n(all);
      benchmark::DoNotOptimize(all.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
BENCHMARK(BM_FingerprintSeedNaive)->Unit(benchmark::kMillisecond);

void BM_FingerprintSeedPipelineSort(benchmark::State& state) {
  std::vector<uint32_t> all;
  for (auto _ : state)
    for (const auto& t : texts()) {
      all.clear();
      seed_pipeline<kK>(t, [&](uint32_t h) { all.push_back(h); });
      sort_unique_first_n(all);
      benchmark::DoNotOptimize(all.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
BENCHMARK(BM_FingerprintSeedPipelineSort)->Unit(benchmark::kMillisecond);

// The reference design's pipelined hashing into a selector (add_value, finish).
template <class Selector, class... Args>
void seed_pipeline_into(benchmark::State& state, Args... args) {
  Selector sel(args...);
  std::vector<uint32_t> fp;
  for (auto _ : state)
    for (const auto& t : texts()) {
      seed_pipeline<kK>(t, [&](uint32_t h) { sel.add_value(h); });
      sel.finish(fp);
      benchmark::DoNotOptimize(fp.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}

void BM_FingerprintSeedPipelineUnorderedSetHeap(benchmark::State& state) {
  seed_pipeline_into<HeapUnorderedSet>(state);
}
BENCHMARK(BM_FingerprintSeedPipelineUnorderedSetHeap)->Unit(benchmark::kMillisecond);

void BM_FingerprintSeedPipelineTableHeap(benchmark::State& state) { seed_pipeline_into<BottomKHeapTable>(state, kN); }
BENCHMARK(BM_FingerprintSeedPipelineTableHeap)->Unit(benchmark::kMillisecond);

// The reference design's pipelined hashing into neardup's default selector: the selectors compared alone.
void BM_FingerprintSeedPipelineSelector(benchmark::State& state) { seed_pipeline_into<BottomKSelector>(state, kN); }
BENCHMARK(BM_FingerprintSeedPipelineSelector)->Unit(benchmark::kMillisecond);

// neardup: Unicode words (SIMD scan), word hashes, rolling shingle hashes, then a selector.
template <class Selector>
void neardup_fingerprints(benchmark::State& state) {
  Shingler sh({ShingleKind::Words, kK, kDefaultSeed});
  Selector sel(kN);
  std::vector<ShingleHash> s;
  std::vector<uint32_t> fp;
  for (auto _ : state)
    for (const auto& t : texts()) {
      sh.shingles(t, s);
      sel.add(s);
      sel.finish(fp);
      benchmark::DoNotOptimize(fp.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
void BM_FingerprintNeardupDefault(benchmark::State& state) { neardup_fingerprints<BottomKSelector>(state); }
BENCHMARK(BM_FingerprintNeardupDefault)->Unit(benchmark::kMillisecond);
void BM_FingerprintNeardupHeapTable(benchmark::State& state) { neardup_fingerprints<BottomKHeapTable>(state); }
BENCHMARK(BM_FingerprintNeardupHeapTable)->Unit(benchmark::kMillisecond);

// Selection alone, from shingle hashes already in memory.
template <class Selector>
void select_only(benchmark::State& state) {
  Shingler sh({ShingleKind::Words, kK, kDefaultSeed});
  std::vector<std::vector<ShingleHash>> all;
  for (const auto& t : texts()) {
    all.emplace_back();
    sh.shingles(t, all.back());
  }
  Selector sel(kN);
  std::vector<uint32_t> fp;
  for (auto _ : state)
    for (const auto& s : all) {
      sel.add(s);
      sel.finish(fp);
      benchmark::DoNotOptimize(fp.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
void BM_SelectOnlyDefault(benchmark::State& state) { select_only<BottomKSelector>(state); }
BENCHMARK(BM_SelectOnlyDefault)->Unit(benchmark::kMillisecond);
void BM_SelectOnlyHeapTable(benchmark::State& state) { select_only<BottomKHeapTable>(state); }
BENCHMARK(BM_SelectOnlyHeapTable)->Unit(benchmark::kMillisecond);

// ---- Comparisons: every pair of the first 2,000 documents, N = 128, alpha = 0.5 ----

const Fingerprints& fingerprints2000() {
  static const Fingerprints f = [] {
    Fingerprints out;
    out.size = kN;
    Shingler sh({ShingleKind::Words, kK, kDefaultSeed});
    std::vector<ShingleHash> s;
    for (size_t i = 0; i < texts().size() && out.count() < 2000; ++i) {
      sh.shingles(texts()[i], s);
      out.push_back(bottomk_fingerprint(s, kN));
    }
    return out;
  }();
  return f;
}

template <class Fn>
void all_pairs(benchmark::State& state, Fn&& fn) {
  const Fingerprints& f = fingerprints2000();
  size_t above = 0;
  for (auto _ : state)
    for (size_t a = 0; a < f.count(); ++a)
      for (size_t b = a + 1; b < f.count(); ++b) above += fn(f[a], f[b]) >= 0.5;
  benchmark::DoNotOptimize(above);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.count() * (f.count() - 1) / 2));
}

void BM_CompareClassical(benchmark::State& state) {
  all_pairs(state, [](auto a, auto b) { return fingerprint_jaccard(a, b); });
}
BENCHMARK(BM_CompareClassical)->Unit(benchmark::kMillisecond);

void BM_CompareFastAbort(benchmark::State& state) {
  all_pairs(state, [](auto a, auto b) { return fingerprint_jaccard_abort(a, b, 0.5); });
}
BENCHMARK(BM_CompareFastAbort)->Unit(benchmark::kMillisecond);

void BM_CompareFastAbortSimd(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  if (isa > detected_isa()) {
    state.SkipWithError("kernel not supported by this CPU");
    return;
  }
  all_pairs(state, [isa](auto a, auto b) { return fingerprint_jaccard_fast(a, b, 0.5, isa); });
  state.SetLabel(isa_name(isa));
}
BENCHMARK(BM_CompareFastAbortSimd)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_CompareStandardEstimator(benchmark::State& state) {
  all_pairs(state, [](auto a, auto b) { return bottomk_estimate(a, b, kN); });
}
BENCHMARK(BM_CompareStandardEstimator)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
