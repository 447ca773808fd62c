// The persistent index: N documents cut from a corpus (pieces of about PIECE bytes, cut
// at spaces), sketched, inserted one at a time, saved, reopened (median of 3 opens, page cache
// warm), then queried with the first Q pieces (each finds itself at least): one at a time (sketch
// + query on one thread) and batched (pre-sketched, on THREADS threads). Bytes per document.
//
//   build/bench/neardup_index_bench N CORPUS [PIECE=512] [SPEC="words:5 minhash:128 verify:0.8"] [THREADS=2] [Q=100000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "neardup/neardup.h"
#include "../src/internal/parallel.h"
#include "bench_corpus.h"

using namespace neardup;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s N CORPUS [PIECE] [SPEC] [THREADS] [Q]\n", argv[0]);
    return 2;
  }
  const size_t n = std::strtoull(argv[1], nullptr, 10);
  const std::string corpus = argv[2];
  const size_t piece = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 512;
  const PipelineSpec spec = PipelineSpec::parse(argc > 4 ? argv[4] : "words:5 minhash:128 verify:0.8").resolved();
  const int threads = argc > 5 ? std::atoi(argv[5]) : 2;
  const size_t nq = std::min<size_t>(n, argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 100000);

  const std::vector<std::string> texts = bench::load_pieces(corpus, n, piece);
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  std::printf("%zu documents, %.1f MB, spec %s\n", texts.size(), bytes / 1e6, spec.to_string().c_str());

  std::vector<IndexSketch> sk(texts.size());
  auto t = Clock::now();
  std::vector<IndexSketcher> sketchers;
  for (int i = 0; i < threads; ++i) sketchers.emplace_back(spec);
  internal::parallel_for(texts.size(), threads, [&](size_t i, size_t th) { sketchers[th].sketch(texts[i], sk[i]); });
  std::printf("sketch: %.2f s on %d threads (%.0f MB/s)\n", since(t), threads, bytes / 1e6 / since(t));

  const std::string path = "/tmp/neardup-index-bench.ndx";
  {
    NearDupIndex idx(spec);
    t = Clock::now();
    for (size_t i = 0; i < texts.size(); ++i) idx.insert("doc" + std::to_string(i), sk[i]);
    const double ins = since(t);
    std::printf("insert, one at a time: %.2f s, %.0f inserts/s\n", ins, texts.size() / ins);
    t = Clock::now();
    idx.save(path);
    std::printf("save: %.2f s\n", since(t));
  }
  std::vector<double> opens;
  std::unique_ptr<NearDupIndex> idx;
  for (int r = 0; r < 3; ++r) {
    idx.reset();
    t = Clock::now();
    idx = NearDupIndex::open(path);
    opens.push_back(since(t));
  }
  std::sort(opens.begin(), opens.end());
  const IndexStats st = idx->stats();
  std::printf("open: %.3f s (median of 3, checksums verified); file %.1f MB, %.0f bytes per document (ids %.0f, "
              "signatures %.0f, bands %.0f, sets %.0f)\n",
              opens[1], st.file_bytes / 1e6, double(st.file_bytes) / st.documents, double(st.id_bytes) / st.documents,
              double(st.signature_bytes) / st.documents, double(st.band_bytes) / st.documents,
              double(st.set_bytes) / st.documents);

  std::vector<IndexMatch> m;
  IndexSketch q;
  uint64_t found = 0;
  t = Clock::now();
  for (size_t i = 0; i < nq; ++i) {
    sketchers[0].sketch(texts[i], q);
    idx->query(q, spec.threshold, m);
    found += m.size();
  }
  const double one = since(t);
  std::printf("query, one at a time (sketch + query, 1 thread): %.0f queries/s, %.2f matches per query\n", nq / one,
              double(found) / nq);
  std::vector<size_t> counts(nq);
  t = Clock::now();
  internal::parallel_for(nq, threads, [&](size_t i, size_t) {
    thread_local std::vector<IndexMatch> mm;
    idx->query(sk[i], spec.threshold, mm);
    counts[i] = mm.size();
  });
  const double batch = since(t);
  std::printf("query, batched (pre-sketched, %d threads): %.0f queries/s\n", threads, nq / batch);
  std::remove(path.c_str());
}
