#include "neardup/allpairs.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "internal/parallel.h"
#include "internal/radix_sort.h"
#include "neardup/error.h"
#include "neardup/verify.h"

namespace neardup {
namespace {

// The smallest overlap a set of `len` values needs with any partner at Jaccard >= alpha:
// ceil(alpha * len), computed so that rounding can only make it smaller (a longer, safe prefix).
size_t min_overlap(double alpha, size_t len) noexcept {
  const double x = alpha * static_cast<double>(len) - 1e-9;
  return x <= 0 ? 1 : static_cast<size_t>(std::ceil(x));
}

// Fingerprints rewritten in the global order: value -> rank, rarest first (document frequency,
// then value), each fingerprint sorted by rank. Jaccard is unchanged (a bijection). One radix
// sort of (value, document) keys gives the frequencies; walking the values in rank order and
// appending each rank to its documents writes every fingerprint already sorted.
Fingerprints rank_by_frequency(const Fingerprints& fps, int threads) {
  const size_t n = fps.count();
  std::vector<uint64_t> keys(fps.values.size());
  for (size_t d = 0; d < n; ++d)
    for (uint64_t i = fps.offsets[d]; i < fps.offsets[d + 1]; ++i)
      keys[i] = (static_cast<uint64_t>(fps.values[i]) << 32) | d;
  internal::radix_sort_u64_by_high32(keys, threads);  // by value; documents stay in order within a value
  std::vector<uint64_t> run_start;          // distinct value -> its first key
  run_start.reserve(keys.size() / 2 + 2);
  for (size_t i = 0; i < keys.size(); ++i)
    if (i == 0 || (keys[i] >> 32) != (keys[i - 1] >> 32)) run_start.push_back(i);
  run_start.push_back(keys.size());
  const size_t distinct = run_start.size() - 1;
  // Stable counting sort of the distinct values by frequency (value order within a frequency).
  std::vector<uint64_t> start(n + 2, 0);
  for (size_t d = 0; d < distinct; ++d) ++start[run_start[d + 1] - run_start[d] + 1];
  for (size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
  std::vector<uint32_t> by_rank(distinct);
  for (size_t d = 0; d < distinct; ++d) by_rank[start[run_start[d + 1] - run_start[d]]++] = static_cast<uint32_t>(d);

  Fingerprints out;
  out.size = fps.size;
  out.offsets = fps.offsets;
  out.values.resize(fps.values.size());
  std::vector<uint64_t> cursor(fps.offsets.begin(), fps.offsets.end() - 1);
  for (size_t r = 0; r < distinct; ++r) {
    const uint32_t d = by_rank[r];
    for (uint64_t i = run_start[d]; i < run_start[d + 1]; ++i)
      out.values[cursor[keys[i] & 0xFFFFFFFFu]++] = static_cast<uint32_t>(r);
  }
  return out;
}

// The join: sink(thread, a, b, fingerprint_jaccard) for every pair with J + eps >= alpha.
template <class Sink>
void join(const Fingerprints& fps, double alpha, int threads, JoinStats* stats, Sink&& sink) {
  if (!(alpha > 0.0 && alpha <= 1.0 + kSimilarityEpsilon))
    throw UsageError("join threshold must be in (0, 1]");
  const size_t n = fps.count();
  if (n < 2) return;
  NEARDUP_ASSERT(n < 0xFFFFFFFFull);
  const Fingerprints ranked = rank_by_frequency(fps, threads);
  auto prefix_len = [&](size_t len) { return len == 0 ? 0 : len - min_overlap(alpha, len) + 1; };

  // Inverted index of every prefix (CSR by rank; each list in document order).
  size_t num_ranks = 0;
  for (uint32_t r : ranked.values) num_ranks = std::max<size_t>(num_ranks, r + 1);
  std::vector<uint64_t> head(num_ranks + 1, 0);
  for (size_t d = 0; d < n; ++d) {
    const auto fp = ranked[d];
    for (size_t i = 0, p = prefix_len(fp.size()); i < p; ++i) ++head[fp[i] + 1];
  }
  for (size_t r = 1; r <= num_ranks; ++r) head[r] += head[r - 1];
  std::vector<DocId> postings(head[num_ranks]);
  {
    std::vector<uint64_t> fill(head.begin(), head.end() - 1);
    for (size_t d = 0; d < n; ++d) {
      const auto fp = ranked[d];
      for (size_t i = 0, p = prefix_len(fp.size()); i < p; ++i) postings[fill[fp[i]]++] = static_cast<DocId>(d);
    }
  }

  const int t = std::max(1, threads);
  std::vector<std::vector<DocId>> seen(static_cast<size_t>(t));
  std::vector<JoinStats> per(static_cast<size_t>(t));
  // The merge may stop as soon as the result is certainly below alpha - eps.
  const double abort_at = alpha - kSimilarityEpsilon;
  constexpr size_t kChunk = 256;
  internal::parallel_for((n + kChunk - 1) / kChunk, t, [&](size_t chunk, size_t tid) {
    auto& mark = seen[tid];
    if (mark.empty()) mark.assign(n, 0xFFFFFFFFu);
    JoinStats& st = per[tid];
    std::vector<DocId> cand;
    const size_t end = std::min(n, (chunk + 1) * kChunk);
    for (size_t x = chunk * kChunk; x < end; ++x) {
      const auto fx = ranked[x];
      if (fx.empty()) continue;
      const size_t lx = fx.size();
      const size_t min_len = min_overlap(alpha, lx);  // |y| >= alpha * |x|
      cand.clear();
      for (size_t i = 0, p = prefix_len(lx); i < p; ++i) {
        for (uint64_t k = head[fx[i]]; k < head[fx[i] + 1]; ++k) {
          const DocId y = postings[k];
          const size_t ly = ranked.offsets[y + 1] - ranked.offsets[y];
          // Each pair once: from the longer document, or from the later of two equally long.
          if (ly > lx || (ly == lx && y >= x) || ly < min_len || mark[y] == x) continue;
          mark[y] = static_cast<DocId>(x);
          cand.push_back(y);
        }
      }
      st.candidates += cand.size();
      for (DocId y : cand) {
        const double j = fingerprint_jaccard_fast(fx, ranked[y], abort_at);
        if (j == kAborted) {
          ++st.aborted;
          continue;
        }
        if (j + kSimilarityEpsilon < alpha) continue;
        ++st.results;
        const DocId a = std::min<DocId>(static_cast<DocId>(x), y), b = std::max<DocId>(static_cast<DocId>(x), y);
        sink(tid, a, b, j);
      }
    }
  });
  if (stats)
    for (const auto& s : per) {
      stats->candidates += s.candidates;
      stats->aborted += s.aborted;
      stats->results += s.results;
    }
}

std::vector<ScoredPair> concat_sorted(std::vector<std::vector<ScoredPair>>& parts) {
  std::vector<ScoredPair> all;
  size_t total = 0;
  for (auto& p : parts) total += p.size();
  all.reserve(total);
  for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  std::sort(all.begin(), all.end(), [](const ScoredPair& x, const ScoredPair& y) {
    return x.a != y.a ? x.a < y.a : x.b < y.b;
  });
  return all;
}

double score_of(const Fingerprints& fps, PairScore score, DocId a, DocId b) noexcept {
  return score == PairScore::FingerprintJaccard ? fingerprint_jaccard(fps[a], fps[b])
                                                : bottomk_estimate(fps[a], fps[b], fps.size);
}

// The fingerprint-Jaccard threshold that every pair with score >= s passes.
double join_threshold(PairScore score, double s) noexcept {
  return score == PairScore::FingerprintJaccard ? s : fingerprint_threshold_for_estimate(s);
}

// A bounded min-heap of the best pairs under better_pair (seed 001).
class TopHeap {
 public:
  explicit TopHeap(size_t m) : m_(m) {}
  void offer(const ScoredPair& p) {
    if (m_ == 0) return;
    if (h_.size() < m_) {
      h_.push_back(p);
      std::push_heap(h_.begin(), h_.end(), better_pair);
    } else if (better_pair(p, h_.front())) {
      std::pop_heap(h_.begin(), h_.end(), better_pair);
      h_.back() = p;
      std::push_heap(h_.begin(), h_.end(), better_pair);
    }
  }
  std::vector<ScoredPair>& items() { return h_; }

 private:
  size_t m_;
  std::vector<ScoredPair> h_;  // heap under better_pair: front() is the worst kept
};

std::vector<ScoredPair> best_of(std::vector<ScoredPair> all, size_t m) {
  std::sort(all.begin(), all.end(), better_pair);
  if (all.size() > m) all.resize(m);
  return all;
}

}  // namespace

std::vector<ScoredPair> fingerprint_join(const Fingerprints& fps, double alpha, int threads, JoinStats* stats) {
  std::vector<std::vector<ScoredPair>> out(static_cast<size_t>(std::max(1, threads)));
  join(fps, alpha, threads, stats, [&](size_t tid, DocId a, DocId b, double j) { out[tid].push_back({a, b, j}); });
  return concat_sorted(out);
}

std::vector<ScoredPair> fingerprint_join_brute_force(const Fingerprints& fps, double alpha, int threads) {
  const size_t n = fps.count();
  std::vector<std::vector<ScoredPair>> out(n);
  internal::parallel_for(n, threads, [&](size_t a, size_t) {
    for (size_t b = a + 1; b < n; ++b) {
      const double j = fingerprint_jaccard(fps[a], fps[b]);
      if (j + kSimilarityEpsilon >= alpha) out[a].push_back({static_cast<DocId>(a), static_cast<DocId>(b), j});
    }
  });
  return concat_sorted(out);
}

std::vector<ScoredPair> pairs_above(const Fingerprints& fps, double threshold, PairScore score, int threads,
                                    JoinStats* stats) {
  std::vector<std::vector<ScoredPair>> out(static_cast<size_t>(std::max(1, threads)));
  join(fps, join_threshold(score, threshold), threads, stats, [&](size_t tid, DocId a, DocId b, double j) {
    const double s = score == PairScore::FingerprintJaccard ? j : score_of(fps, score, a, b);
    if (s + kSimilarityEpsilon >= threshold) out[tid].push_back({a, b, s});
  });
  return concat_sorted(out);
}

std::vector<ScoredPair> top_pairs(const Fingerprints& fps, size_t m, PairScore score, int threads) {
  if (m == 0) return {};
  // Falling thresholds: once a join at s yields m pairs scoring >= s, the m best pairs overall
  // are among them (every pair it did not see scores below s). The last step, a threshold below
  // any possible score, sees every pair that shares a value.
  const double schedule[] = {0.9, 0.7, 0.5, 0.3, 0.1, 1e-9};
  const int t = std::max(1, threads);
  for (double s : schedule) {
    std::vector<TopHeap> heaps(static_cast<size_t>(t), TopHeap(m));
    join(fps, join_threshold(score, s), t, nullptr, [&](size_t tid, DocId a, DocId b, double j) {
      const double v = score == PairScore::FingerprintJaccard ? j : score_of(fps, score, a, b);
      if (v > 0 && v + kSimilarityEpsilon >= s) heaps[tid].offer({a, b, v});
    });
    std::vector<ScoredPair> all;
    for (auto& h : heaps) all.insert(all.end(), h.items().begin(), h.items().end());
    if (all.size() >= m || s == schedule[std::size(schedule) - 1]) return best_of(std::move(all), m);
  }
  return {};
}

std::vector<ScoredPair> top_pairs_brute_force(const Fingerprints& fps, size_t m, PairScore score) {
  TopHeap heap(m);
  for (size_t a = 0; a < fps.count(); ++a)
    for (size_t b = a + 1; b < fps.count(); ++b) {
      const double v = score_of(fps, score, static_cast<DocId>(a), static_cast<DocId>(b));
      if (v > 0) heap.offer({static_cast<DocId>(a), static_cast<DocId>(b), v});
    }
  return best_of(std::move(heap.items()), m);
}

}  // namespace neardup
