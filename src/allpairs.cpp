#include "neardup/allpairs.h"

#include <algorithm>
#include <cmath>
#include <span>
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

// The global order of the prefix filter is rarest first: by document frequency, then value.
// A value found in one document only (most of them) can never give a candidate, so only the
// shared values get ranks: each document keeps its count of unshared values, which come first in
// the order, and the ranks of its shared values, ascending. One radix sort of (value, document)
// keys gives the frequencies; walking the shared values in rank order and appending each rank to
// its documents writes every list already sorted.
struct SharedRanks {
  std::vector<uint64_t> offsets;  // document d's ranks are ranks[offsets[d], offsets[d + 1])
  std::vector<uint32_t> ranks;
  std::vector<uint32_t> unshared;  // per document: values no other document has
  size_t num_ranks = 0;
  std::span<const uint32_t> operator[](size_t d) const noexcept {
    return {ranks.data() + offsets[d], static_cast<size_t>(offsets[d + 1] - offsets[d])};
  }
};

SharedRanks rank_shared_values(const Fingerprints& fps, int threads) {
  const size_t n = fps.count();
  std::vector<uint64_t> keys(fps.values.size());
  internal::parallel_for((n + 1023) / 1024, threads, [&](size_t chunk, size_t) {
    for (size_t d = chunk * 1024; d < std::min(n, (chunk + 1) * 1024); ++d)
      for (uint64_t i = fps.offsets[d]; i < fps.offsets[d + 1]; ++i)
        keys[i] = (static_cast<uint64_t>(fps.values[i]) << 32) | d;
  });
  internal::radix_sort_u64_by_high32(keys, threads);  // by value
  // Runs of one value: keep those of two documents or more. Found in parallel over parts of
  // the keys that start at a run boundary.
  const size_t total = keys.size();
  const size_t parts = static_cast<size_t>(std::max(1, threads));
  std::vector<size_t> cut(parts + 1, total);
  cut[0] = 0;
  for (size_t p = 1; p < parts; ++p) {
    size_t i = std::max(cut[p - 1], total * p / parts);
    while (i > 0 && i < total && (keys[i] >> 32) == (keys[i - 1] >> 32)) ++i;
    cut[p] = i;
  }
  std::vector<std::vector<uint64_t>> part_start(parts);
  std::vector<std::vector<uint32_t>> part_len(parts);
  internal::parallel_for(parts, threads, [&](size_t p, size_t) {
    for (size_t i = cut[p]; i < cut[p + 1];) {
      size_t j = i + 1;
      while (j < total && (keys[j] >> 32) == (keys[i] >> 32)) ++j;
      if (j - i > 1) {
        part_start[p].push_back(i);
        part_len[p].push_back(static_cast<uint32_t>(j - i));
      }
      i = j;
    }
  });
  std::vector<uint64_t> run_start;
  std::vector<uint32_t> run_len;
  for (size_t p = 0; p < parts; ++p) {
    run_start.insert(run_start.end(), part_start[p].begin(), part_start[p].end());
    run_len.insert(run_len.end(), part_len[p].begin(), part_len[p].end());
  }
  const size_t runs = run_start.size();
  // Ranks: by frequency, then value (runs are in value order): a counting sort.
  std::vector<uint64_t> start(n + 2, 0);
  for (size_t r = 0; r < runs; ++r) ++start[run_len[r] + 1];
  for (size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
  // The documents of the shared values in rank order: each run goes to its frequency's slice
  // (a scatter in value order, so one stream per frequency), with its rank.
  std::vector<uint64_t> entry_start(n + 2, 0);  // by frequency: first entry of the slice
  for (size_t f = 2; f <= n + 1; ++f) entry_start[f] = entry_start[f - 1] + (start[f] - start[f - 1]) * (f - 1);
  std::vector<uint32_t> shared(n, 0);
  std::vector<uint64_t> entries(entry_start[n + 1]);  // rank << 32 | document
  for (size_t r = 0; r < runs; ++r) {
    const uint32_t len = run_len[r];
    const uint64_t rank = start[len]++;
    uint64_t* dst = entries.data() + entry_start[len];
    entry_start[len] += len;
    for (uint64_t i = run_start[r], e = i + len; i < e; ++i) {
      const uint32_t doc = static_cast<uint32_t>(keys[i]);
      *dst++ = (rank << 32) | doc;
      ++shared[doc];
    }
  }

  SharedRanks out;
  out.num_ranks = runs;
  out.offsets.resize(n + 1);
  out.unshared.resize(n);
  out.offsets[0] = 0;
  for (size_t d = 0; d < n; ++d) {
    out.offsets[d + 1] = out.offsets[d] + shared[d];
    out.unshared[d] = static_cast<uint32_t>(fps.offsets[d + 1] - fps.offsets[d]) - shared[d];
  }
  out.ranks.resize(out.offsets[n]);
  std::vector<uint64_t> cursor(out.offsets.begin(), out.offsets.end() - 1);
  for (uint64_t e : entries) out.ranks[cursor[e & 0xFFFFFFFFu]++] = static_cast<uint32_t>(e >> 32);
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
  const SharedRanks ranked = rank_shared_values(fps, threads);
  // The prefix of x is its first |x| - ceil(alpha |x|) + 1 values in the global order; its
  // unshared values come first, so the part that can meet another document is the first
  // prefix - unshared shared ones.
  auto probe_len = [&](size_t d) -> size_t {
    const size_t len = fps.offsets[d + 1] - fps.offsets[d];
    if (len == 0) return 0;
    const size_t prefix = len - min_overlap(alpha, len) + 1;
    return prefix <= ranked.unshared[d] ? 0 : std::min<size_t>(prefix - ranked.unshared[d], ranked[d].size());
  };

  // Inverted index of every probed prefix (CSR by rank; each list in document order).
  const size_t num_ranks = ranked.num_ranks;
  std::vector<uint64_t> head(num_ranks + 1, 0);
  std::vector<uint32_t> plen(n);
  for (size_t d = 0; d < n; ++d) {
    plen[d] = static_cast<uint32_t>(probe_len(d));
    const auto fp = ranked[d];
    for (size_t i = 0; i < plen[d]; ++i) ++head[fp[i] + 1];
  }
  for (size_t r = 1; r <= num_ranks; ++r) head[r] += head[r - 1];
  std::vector<DocId> postings(head[num_ranks]);
  std::vector<uint32_t> position(head[num_ranks]);  // of the value in the document, in the order
  {
    std::vector<uint64_t> fill(head.begin(), head.end() - 1);
    for (size_t d = 0; d < n; ++d) {
      const auto fp = ranked[d];
      for (size_t i = 0; i < plen[d]; ++i) {
        position[fill[fp[i]]] = ranked.unshared[d] + static_cast<uint32_t>(i);
        postings[fill[fp[i]]++] = static_cast<DocId>(d);
      }
    }
  }

  // Fingerprint lengths in one small array: the probe reads one per posting.
  std::vector<uint32_t> length(n);
  for (size_t d = 0; d < n; ++d) length[d] = static_cast<uint32_t>(fps.offsets[d + 1] - fps.offsets[d]);
  const int t = std::max(1, threads);
  std::vector<std::vector<DocId>> seen(static_cast<size_t>(t));
  std::vector<JoinStats> per(static_cast<size_t>(t));
  // The merge may stop as soon as the result is certainly below alpha - eps.
  const double abort_at = alpha - kSimilarityEpsilon;
  // J >= a needs an overlap of at least a / (1 + a) (|x| + |y|); rounding only lowers it.
  const double overlap_factor = abort_at / (1.0 + abort_at);
  constexpr size_t kChunk = 256;
  internal::parallel_for((n + kChunk - 1) / kChunk, t, [&](size_t chunk, size_t tid) {
    auto& mark = seen[tid];
    if (mark.empty()) mark.assign(n, 0xFFFFFFFFu);
    JoinStats& st = per[tid];
    std::vector<DocId> cand;
    const size_t end = std::min(n, (chunk + 1) * kChunk);
    for (size_t x = chunk * kChunk; x < end; ++x) {
      if (plen[x] == 0) continue;
      const auto rx = ranked[x];
      const size_t lx = fps.offsets[x + 1] - fps.offsets[x];
      const size_t min_len = min_overlap(alpha, lx);  // |y| >= alpha * |x|
      cand.clear();
      for (size_t i = 0; i < plen[x]; ++i) {
        const size_t px = ranked.unshared[x] + i;
        for (uint64_t k = head[rx[i]]; k < head[rx[i] + 1]; ++k) {
          const DocId y = postings[k];
          const size_t ly = length[y];
          // Each pair once: from the longer document, or from the later of two equally long.
          if (ly > lx || (ly == lx && y >= x) || ly < min_len || mark[y] == x) continue;
          mark[y] = static_cast<DocId>(x);
          // Positional filter (PPJoin): values before the first common one precede it in both
          // documents (one global order), so they would have met earlier; this is the first
          // common value, and only the values after it on either side can add to the overlap.
          const size_t py = position[k];
          const size_t bound = 1 + std::min(lx - px - 1, ly - py - 1);
          if (static_cast<double>(bound) < overlap_factor * static_cast<double>(lx + ly) - 1e-9) {
            ++st.pruned;
            continue;
          }
          cand.push_back(y);
        }
      }
      st.candidates += cand.size();
      const auto fx = fps[x];
      for (DocId y : cand) {
        const double j = fingerprint_jaccard_fast(fx, fps[y], abort_at);
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
      stats->pruned += s.pruned;
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
