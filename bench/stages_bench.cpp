// Per-stage throughput on the real sample corpus (data/sample, 2,500 news articles, 4 MB):
// read (decompress + JSON), tokenize + shingle, MinHash sketch per kernel, exact Jaccard.
// Bytes processed are bytes of document text, so MB/s compare across stages.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_corpus.h"
#include "neardup/neardup.h"

using namespace neardup;

namespace {

const std::string kCorpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";

const std::vector<std::string>& texts() {
  static const std::vector<std::string> t = bench::load_texts(kCorpus);
  return t;
}

int64_t text_bytes() { return bench::total_bytes(texts()); }

void BM_Read(benchmark::State& state) {
  for (auto _ : state) {
    io::InputSet in({kCorpus}, io::InputFormat::Auto);
    io::RecordReader r(in, {});
    io::Record rec;
    size_t n = 0;
    while (r.next(rec)) n += rec.text.size();
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
BENCHMARK(BM_Read)->Unit(benchmark::kMillisecond);

void BM_Shingle(benchmark::State& state) {
  Shingler s({ShingleKind::Words, static_cast<int>(state.range(0)), kDefaultSeed});
  std::vector<ShingleHash> out;
  for (auto _ : state)
    for (const auto& t : texts()) {
      s.shingles(t, out);
      benchmark::DoNotOptimize(out.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
BENCHMARK(BM_Shingle)->Arg(3)->Arg(5)->Unit(benchmark::kMillisecond);

void BM_Sketch(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  if (isa > detected_isa()) {
    state.SkipWithError("kernel not supported by this CPU");
    return;
  }
  Shingler s({ShingleKind::Words, 5, kDefaultSeed});
  std::vector<std::vector<ShingleHash>> sh;
  for (const auto& t : texts()) sh.push_back(s.shingle_set(t));
  MinHasher h(static_cast<int>(state.range(1)), kDefaultSeed);
  std::vector<SigValue> sig(h.num_perm());
  for (auto _ : state)
    for (const auto& x : sh) {
      h.sketch(x, sig, isa);
      benchmark::DoNotOptimize(sig.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
  state.SetLabel(isa_name(isa));
}
BENCHMARK(BM_Sketch)->ArgsProduct({{0, 1, 2}, {128}})->Unit(benchmark::kMillisecond);

void BM_ExactJaccard(benchmark::State& state) {
  Shingler s({ShingleKind::Words, 5, kDefaultSeed});
  std::vector<std::vector<ShingleHash>> sh;
  for (const auto& t : texts()) sh.push_back(s.shingle_set(t));
  for (auto _ : state)
    for (size_t i = 1; i < sh.size(); ++i) benchmark::DoNotOptimize(jaccard(sh[i - 1], sh[i]));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(sh.size() - 1));
}
BENCHMARK(BM_ExactJaccard)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
