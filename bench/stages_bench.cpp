// Per-stage throughput on the real sample corpus (data/sample, 2,500 news articles, 4 MB):
// read (decompress + JSON), tokenize + shingle, MinHash sketch per kernel, exact Jaccard.
// Bytes processed are bytes of document text, so MB/s compare across stages.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_corpus.h"
#include "io/raw_records.h"
#include "internal/testing.h"
#include "internal/prefix_ranking.h"
#include "internal/sorted_merge.h"
#include "kernels/dispatch.h"
#include "neardup/neardup.h"

using namespace neardup;

namespace {

// NEARDUP_BENCH_CORPUS and NEARDUP_BENCH_MB choose another corpus (BM_Read always reads this one).
const std::string kCorpus = NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst";

const std::vector<std::string>& texts() {
  static const std::vector<std::string> t = [] {
    const char* path = std::getenv("NEARDUP_BENCH_CORPUS");
    const char* mb = std::getenv("NEARDUP_BENCH_MB");
    return bench::load_texts(path ? path : kCorpus, static_cast<size_t>(mb ? std::atof(mb) * 1e6 : 50e6));
  }();
  return t;
}

int64_t text_bytes() { return bench::total_bytes(texts()); }

void BM_Read(benchmark::State& state) {
  int64_t bytes = 0;  // of text, counted from what is read (texts() may be another corpus)
  for (auto _ : state) {
    io::InputSet in({kCorpus}, io::InputFormat::Auto);
    io::RecordReader r(in, {});
    io::Record rec;
    size_t n = 0;
    while (r.next(rec)) n += rec.text.size();
    benchmark::DoNotOptimize(n);
    bytes += static_cast<int64_t>(n);
  }
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_Read)->Unit(benchmark::kMillisecond);

// JSONL lines to records, as the pipeline's workers parse them: 0 = the full parse (simdjson's
// DOM, every string decoded), 1 = word text (the text's escapes read as spaces, the rest of the
// line parsed as a skeleton); `isa`: the kernels' instruction set (cpu.h's Isa plus 1), 0 the
// detected one. Bytes are of decoded text.
void BM_ParseJsonl(benchmark::State& state) {
  if (const auto isa = state.range(1); isa > 0) {
    if (isa - 1 > static_cast<int>(detected_isa())) return state.SkipWithError("ISA not supported");
    force_isa(static_cast<Isa>(isa - 1));
  }
  static const auto lines = [] {
    const char* path = std::getenv("NEARDUP_BENCH_CORPUS");
    const char* mb = std::getenv("NEARDUP_BENCH_MB");
    const size_t limit = static_cast<size_t>(mb ? std::atof(mb) * 1e6 : 50e6);
    io::InputSet in({path ? path : kCorpus}, io::InputFormat::Auto);
    io::RecordReader r(in, {});
    io::RawRecord raw;
    std::pair<std::string, std::vector<std::pair<size_t, size_t>>> out;  // lines back to back, padded
    while (out.first.size() < limit && io::next_raw(r, raw)) {
      if (raw.kind != io::RawRecord::Kind::Line) continue;
      out.second.emplace_back(out.first.size(), raw.bytes.size());
      out.first.append(raw.bytes);
    }
    out.first.append(io::JsonlParser::kPadding, ' ');
    return out;
  }();
  io::JsonlParser parser(io::ReaderOptions{}, state.range(0) == 1);
  io::Source src;
  io::Record rec;
  std::string problem;
  int64_t bytes = 0;
  for (auto _ : state) {
    for (const auto& [at, n] : lines.second) {
      if (parser.parse(std::string_view(lines.first.data() + at, n), src, 1, rec, problem))
        bytes += static_cast<int64_t>(parser.text_length());
      benchmark::DoNotOptimize(rec.text.data());
    }
  }
  reset_isa();
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_ParseJsonl)->Args({0, 0})->Args({1, 0})->Args({1, 2})->Args({1, 3})->ArgNames({"word_text", "isa"})->Unit(benchmark::kMillisecond);

// Words to word hashes (chars:1: to code point hashes, as chars:N shingles use): 0 = the byte-at-a-time scanner, 1/2/3 = the bitmask path with the
// scalar / AVX2 / AVX-512 classification kernel.
void BM_HashWords(benchmark::State& state) {
  const auto variant = state.range(0);
  const bool chars = state.range(1) != 0;
  if (variant > 0) {
    const Isa isa = static_cast<Isa>(variant - 1);
    if (static_cast<int>(isa) > static_cast<int>(detected_isa())) return state.SkipWithError("ISA not supported");
    force_isa(isa);
  }
  std::vector<uint64_t> out;
  using Hash = void (*)(std::string_view, uint64_t, std::vector<uint64_t>&);
  const Hash hash_chars_std = hash_chars, hash_words_std = hash_words;
  for (auto _ : state)
    for (const auto& t : texts()) {
      out.clear();
      if (chars)
        (variant == 0 ? hash_chars_exact : hash_chars_std)(t, kDefaultSeed, out);
      else
        (variant == 0 ? hash_words_exact : hash_words_std)(t, kDefaultSeed, out);
      benchmark::DoNotOptimize(out.data());
    }
  reset_isa();
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
BENCHMARK(BM_HashWords)->ArgsProduct({{0, 1, 2, 3}, {0, 1}})->ArgNames({"path", "chars"})->Unit(benchmark::kMillisecond);

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

// sorted_set of n uniform hashes (one document's shingle hashes: sorted, repeats dropped).
void BM_MakeSet(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<ShingleHash> src(n);
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (auto& h : src) h = x = x * 6364136223846793005ULL + 1442695040888963407ULL, h ^= h >> 29;
  for (auto _ : state) {
    const std::vector<ShingleHash> v = sorted_set(src);
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_MakeSet)->RangeMultiplier(10)->Range(100, 1000000)->Arg(3000000);

// sorted_set of the corpus's documents' shingle hashes (5-word shingles, repeats and all), as the
// first pass and verification make them: real texts repeat shingles (source code much more than
// prose), which the uniform hashes above never do. Bytes are of document text.
void BM_MakeSetText(benchmark::State& state) {
  static const auto shingles = [] {
    Shingler s({ShingleKind::Words, 5, kDefaultSeed});
    std::vector<std::vector<ShingleHash>> sh;
    for (const auto& t : texts()) {
      sh.emplace_back();
      s.shingles(t, sh.back());
    }
    return sh;
  }();
  for (auto _ : state)
    for (const auto& x : shingles) {
      const std::vector<ShingleHash> v = sorted_set(x);
      benchmark::DoNotOptimize(v.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
BENCHMARK(BM_MakeSetText)->Unit(benchmark::kMillisecond);

// Families of near-copies, as dense licence boilerplate makes them: set d is family
// family_of[d]'s 460 random shingle hashes with own(next) percent of them its own.
template <class Own>
std::vector<std::vector<ShingleHash>> near_copies(size_t families, const std::vector<size_t>& family_of, Own own) {
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  const auto next = [&x] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL, x ^ (x >> 29); };
  std::vector<std::vector<ShingleHash>> family(families, std::vector<ShingleHash>(460));
  for (auto& f : family)
    for (auto& h : f) h = next();
  std::vector<std::vector<ShingleHash>> out(family_of.size());
  for (size_t d = 0; d < out.size(); ++d) {
    out[d] = family[family_of[d]];
    const uint64_t share = own(next);
    for (auto& h : out[d])
      if (next() % 100 < share) h = next();
    out[d] = sorted_set(out[d]);
  }
  return out;
}

// The exact join's ranking of shared values (rank_shared_values, one thread) over families of
// near-copies: 20,000 sets in 40 families, interleaved, 8% of each member's values its own. Most
// values are held by hundreds of sets, and the buckets of 8-byte entries hold a few hundred each.
void BM_RankSharedValues(benchmark::State& state) {
  static const auto sets = [] {
    std::vector<size_t> family_of(20000);
    for (size_t d = 0; d < family_of.size(); ++d) family_of[d] = d % 40;
    return near_copies(40, family_of, [](auto&) { return uint64_t{8}; });
  }();
  size_t entries = 0;
  for (const auto& s : sets) entries += s.size();
  for (auto _ : state) {
    const internal::SharedRanks r = internal::rank_shared_values<ShingleHash>(sets.size(), [&](size_t d) { return std::span<const ShingleHash>(sets[d]); }, 1);
    benchmark::DoNotOptimize(r.ranks.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(entries));
}
BENCHMARK(BM_RankSharedValues)->Unit(benchmark::kMillisecond);

// The exact join's listing of every pair at t = 0.8 (SetJoin::pairs, one thread), the work of
// `pairs` on dense licence boilerplate once its join is built: 8 families of 100, 200, ... 800
// sets of 460 shingle hashes, each member its family's set with 2-10% of the values its own, so
// that members of a family lie at J 0.67-0.96 of each other (about half the pairs reach 0.8).
// Families of different sizes hold their values at different frequencies, so that each
// family's ranks lie together, as a distribution's licence families do. The join is built once;
// each iteration lists the pairs.
// Lists every pair of the join over `sets` at t = 0.8 (one thread), once per iteration.
void list_join_pairs(benchmark::State& state, const std::vector<std::vector<ShingleHash>>& sets) {
  std::vector<DocId> docs(sets.size());
  for (size_t d = 0; d < docs.size(); ++d) docs[d] = static_cast<DocId>(d);
  const SetJoin join(docs, [&](DocId d) { return std::span<const ShingleHash>(sets[d]); }, 0.8, 1);
  uint64_t pairs = 0;
  for (auto _ : state) {
    pairs = 0;
    join.pairs({}, [&](std::span<const ScoredPair> chunk) { pairs += chunk.size(); });
  }
  state.counters["pairs"] = static_cast<double>(pairs);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pairs));
}

void BM_SetJoinPairs(benchmark::State& state) {
  static const auto sets = [] {
    std::vector<size_t> family_of;
    for (size_t f = 0; f < 8; ++f) family_of.insert(family_of.end(), 100 * (f + 1), f);
    return near_copies(8, family_of, [](auto& next) { return 2 + next() % 9; });
  }();
  list_join_pairs(state, sets);
}
BENCHMARK(BM_SetJoinPairs)->Unit(benchmark::kMillisecond);

// The same listing in a distribution's shape: 19,900 sets in 36 families of 200 to 3,000 members
// (4.95 M pairs at 0.8), each family's members interleaved with the others' as a distribution's
// copyright files are by package name (interleaved:1), or together (interleaved:0). Interleaved,
// a probe's candidates are spread over all the members rather than lying in one run.
std::vector<std::vector<ShingleHash>> family_sets(bool interleaved) {
  constexpr size_t kSizes[] = {3000, 2000, 1500, 1000, 1000, 1000};
  std::vector<size_t> family_of;
  size_t families = 0;
  for (const size_t n : kSizes) family_of.insert(family_of.end(), n, families++);
  for (size_t i = 0; i < 10; ++i) family_of.insert(family_of.end(), 500, families++);
  for (size_t i = 0; i < 20; ++i) family_of.insert(family_of.end(), 200, families++);
  if (interleaved) std::shuffle(family_of.begin(), family_of.end(), std::mt19937_64(12345));
  return near_copies(families, family_of, [](auto& next) { return 2 + next() % 9; });
}

void BM_SetJoinPairsFamilies(benchmark::State& state) {
  static const auto interleaved = family_sets(true), together = family_sets(false);
  list_join_pairs(state, state.range(0) != 0 ? interleaved : together);
}
BENCHMARK(BM_SetJoinPairsFamilies)->ArgName("interleaved")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// The pairs output (io::write_pairs) as a dense cluster gives it: 1 M pairs in runs of 200 by
// their first document, ids of 38 bytes like the licence mix's, into a file under TMPDIR; handed
// over whole, or in chunks of 16 pairs as the listing of a sparse corpus hands them to the writer.
void BM_WritePairs(benchmark::State& state) {
  constexpr size_t kDocs = 20'000, kRun = 200;
  std::vector<std::string> ids(kDocs);
  for (size_t d = 0; d < kDocs; ++d) ids[d] = "copyright/" + std::to_string(10000 + d) + "/python3-pkg-resources";
  std::vector<ScoredPair> pairs;
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < (size_t{1} << 20); ++i) {
    const DocId a = static_cast<DocId>(i / kRun % (kDocs - kRun));
    pairs.push_back({a, static_cast<DocId>(a + 1 + i % kRun), 0.8 + static_cast<double>(rng() % 200000) / 1e6});
  }
  const io::IdOf id = [&](DocId d) { return std::string_view(ids[d]); };
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/neardup-bench-pairs.tsv";
  for (auto _ : state) {
    state.PauseTiming();
    auto out = std::make_unique<io::AtomicFile>(path);
    state.ResumeTiming();
    const auto chunk = static_cast<size_t>(state.range(0));
    for (size_t i = 0; i < pairs.size(); i += chunk)
      io::write_pairs(*out, std::span<const ScoredPair>(pairs).subspan(i, std::min(chunk, pairs.size() - i)), id);
    state.PauseTiming();
    out->commit();  // its sync is the disk's time, not the formatting's
    out.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(std::filesystem::file_size(path)));
  std::remove(path.c_str());
}
BENCHMARK(BM_WritePairs)->ArgName("chunk")->Arg(1 << 20)->Arg(16)->Unit(benchmark::kMillisecond);

// The LSH search of 21 bands of 32-bit keys (lsh_buckets_from_narrow_keys, one thread) over 1
// million documents: the argument is the share of each band's keys (in percent) that documents of
// one cluster hold (clusters of 2-21 documents for one document in ten, singletons otherwise), the
// rest unique; 0 is a copy-free corpus. Items are keys.
void BM_LshNarrowKeys(benchmark::State& state) {
  const size_t n = 1000000, bands = 21;
  const auto shared = static_cast<uint64_t>(state.range(0));
  std::mt19937_64 rng(7);
  std::vector<uint32_t> cluster(n);
  for (size_t d = 0, c = 0; d < n; ++c)
    for (size_t i = 0, size = rng() % 10 == 0 ? 2 + rng() % 20 : 1; i < size && d < n; ++i) cluster[d++] = static_cast<uint32_t>(c);
  std::shuffle(cluster.begin(), cluster.end(), rng);
  std::vector<std::vector<uint32_t>> keys(bands, std::vector<uint32_t>(n));
  for (size_t b = 0; b < bands; ++b)
    for (size_t i = 0; i < n; ++i)
      keys[b][i] = rng() % 100 < shared ? static_cast<uint32_t>((cluster[i] + 1) * 0x9E3779B1u + b * 0x85EBCA77u) : static_cast<uint32_t>(rng());
  const std::vector<std::span<const uint32_t>> views(keys.begin(), keys.end());
  for (auto _ : state) {
    const LshBuckets buckets = lsh_buckets_from_narrow_keys(views, {}, 1);
    benchmark::DoNotOptimize(buckets.members.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n * bands));
}
BENCHMARK(BM_LshNarrowKeys)->Arg(0)->Arg(60)->Unit(benchmark::kMillisecond);

// The exact verification's merge (set_common_at_least) per kernel level (0 scalar, 1 AVX2, 2 AVX-512)
// on the pairs an LSH run verifies on a crowded corpus: sets of 100-2,000 uniform hashes whose
// Jaccard similarity is spread over 0.3-0.95 (most candidates fall short of the threshold, so
// the early abort decides the cost), verified at t = 0.8. 4,096 distinct pairs (about 70 MB), so
// that neither the caches nor the branch predictor learn them. The second argument: how many
// pairs ahead the start of the sets is prefetched (0: none), as verify_pairs does. Items are pairs.
void BM_SetCommon(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  if (isa > detected_isa()) return state.SkipWithError("kernel not supported by this CPU");
  const auto kernel = internal::kernels(isa).set_common_at_least;
  struct Pair {
    std::vector<uint64_t> a, b;
    long need;
  };
  static const std::vector<Pair> pairs = [] {
    std::mt19937_64 rng(7);
    std::vector<Pair> out(4096);
    for (Pair& p : out) {
      const size_t n = 100 + rng() % 1900;
      const double j = 0.3 + 0.65 * static_cast<double>(rng() % 1000) / 1000;
      // |a| = |b| = n sharing c: J = c / (2n - c), so c = 2nJ / (1 + J).
      const auto c = static_cast<size_t>(2.0 * static_cast<double>(n) * j / (1 + j));
      for (size_t i = 0; i < n; ++i) p.a.push_back(rng());
      p.b.assign(p.a.begin(), p.a.begin() + static_cast<std::ptrdiff_t>(c));
      while (p.b.size() < n) p.b.push_back(rng());
      std::sort(p.a.begin(), p.a.end());
      std::sort(p.b.begin(), p.b.end());
      p.need = static_cast<long>(0.8 * static_cast<double>(2 * n) / 1.8);
    }
    return out;
  }();
  const auto ahead = static_cast<size_t>(state.range(1));
  for (auto _ : state)
    for (size_t k = 0; k < pairs.size(); ++k) {
      if (ahead > 0 && k + ahead < pairs.size()) {
        const Pair& q = pairs[k + ahead];
        internal::prefetch_merge_start(q.a.data(), q.a.size());
        internal::prefetch_merge_start(q.b.data(), q.b.size());
      }
      const Pair& p = pairs[k];
      benchmark::DoNotOptimize(kernel(p.a.data(), p.a.size(), p.b.data(), p.b.size(), p.need));
    }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pairs.size()));
}
BENCHMARK(BM_SetCommon)->ArgsProduct({{0, 1, 2}, {0, 2}})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// SimHash tally alone (word 3-shingles precomputed), per kernel: 0/1/2 = scalar/AVX2/AVX-512;
// the second argument is the weighting (0 tf, 1 set, 2 logtf).
void BM_SimHashTally(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  if (isa > detected_isa()) return state.SkipWithError("kernel not supported by this CPU");
  const auto weights = static_cast<SimHashWeights>(state.range(1));
  Shingler s({ShingleKind::Words, 3, kDefaultSeed});
  std::vector<std::vector<ShingleHash>> sh;
  for (const auto& t : texts()) {
    sh.emplace_back();
    s.shingles(t, sh.back());
  }
  SimHasher h(weights);
  for (auto _ : state)
    for (const auto& x : sh) benchmark::DoNotOptimize(h.hash(x, isa));
  state.SetBytesProcessed(state.iterations() * text_bytes());
  state.SetLabel(std::string(isa_name(isa)) + " " + simhash_weights_name(weights));
}
BENCHMARK(BM_SimHashTally)->ArgsProduct({{0, 1, 2}, {0}})->ArgsProduct({{2}, {1, 2}})->Unit(benchmark::kMillisecond);

// Text to SimHash, the whole per-document path of --method simhash (word 3-shingles, tf).
void BM_TextToSimHash(benchmark::State& state) {
  Shingler s({ShingleKind::Words, 3, kDefaultSeed});
  SimHasher h(static_cast<SimHashWeights>(state.range(0)));
  std::vector<ShingleHash> sh;
  for (auto _ : state)
    for (const auto& t : texts()) {
      s.shingles(t, sh);
      benchmark::DoNotOptimize(h(sh));
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
  state.SetLabel(simhash_weights_name(static_cast<SimHashWeights>(state.range(0))));
}
BENCHMARK(BM_TextToSimHash)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

// OPH alone (word 5-shingles precomputed, repeats kept as the pipeline passes them), K = 128:
// binning plus densification.
void BM_OphSketch(benchmark::State& state) {
  Shingler s({ShingleKind::Words, 5, kDefaultSeed});
  std::vector<std::vector<ShingleHash>> sh;
  for (const auto& t : texts()) {
    sh.emplace_back();
    s.shingles(t, sh.back());
  }
  OphHasher h(static_cast<int>(state.range(0)), kDefaultSeed);
  std::vector<SigValue> sig(static_cast<size_t>(h.num_perm()));
  for (auto _ : state)
    for (const auto& x : sh) {
      h.sketch(x, sig);
      benchmark::DoNotOptimize(sig.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
}
BENCHMARK(BM_OphSketch)->Arg(128)->Unit(benchmark::kMillisecond);

// Text to signature, the whole per-document path of --method minhash (0) and oph (1): word
// 5-shingles, 128 values, the best kernel of this CPU.
void BM_TextToSignature(benchmark::State& state) {
  PipelineSpec spec;
  spec.method = state.range(0) == 0 ? SketchMethod::MinHash : SketchMethod::Oph;
  Shingler s(spec.shingle);
  const SignatureHasher h(spec);
  std::vector<ShingleHash> sh;
  std::vector<SigValue> sig(static_cast<size_t>(h.num_perm()));
  for (auto _ : state)
    for (const auto& t : texts()) {
      s.shingles(t, sh);
      h.sketch(sh, sig);
      benchmark::DoNotOptimize(sig.data());
    }
  state.SetBytesProcessed(state.iterations() * text_bytes());
  state.SetLabel(state.range(0) == 0 ? "minhash:128" : "oph:128");
}
BENCHMARK(BM_TextToSignature)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

// One long text's set, made a piece at a time on two threads (piecewise_shingle_set), against
// the whole text's set made on one (Shingler::shingle_set): the texts of the corpus joined.
void BM_LongTextSet(benchmark::State& state) {
  static const std::string text = [] {
    std::string t;
    for (const auto& x : texts()) (t += x) += '\n';
    return t;
  }();
  Shingler s({ShingleKind::Words, 5, kDefaultSeed});
  for (auto _ : state) {
    const std::vector<ShingleHash> set = state.range(0) ? piecewise_shingle_set(s, text, 2) : s.shingle_set(text);
    benchmark::DoNotOptimize(set.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.SetLabel(state.range(0) ? "pieces, 2 threads" : "whole, 1 thread");
}
BENCHMARK(BM_LongTextSet)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->UseRealTime();
