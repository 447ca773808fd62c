#include "neardup/allpairs.h"
#include "internal/testing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>

#include "internal/big_array.h"
#include "internal/parallel.h"
#include "internal/prefix_ranking.h"
#include "internal/radix_sort.h"
#include "neardup/error.h"
#include "neardup/verify.h"

namespace neardup {
namespace {

// The smallest overlap a set of `len` values needs with any partner at Jaccard >= alpha:
// ceil(alpha * len), computed so that rounding can only make it smaller (a longer, safe prefix),
// and at most len (alpha may exceed 1 by the similarity epsilon).
size_t min_overlap(double alpha, size_t len) noexcept {
  const double x = alpha * static_cast<double>(len) - 1e-9;
  return x <= 0 ? 1 : std::min(len, static_cast<size_t>(std::ceil(x)));
}

using internal::SharedRanks;
using internal::part_range;

// The prefix filter's order over the fingerprints' values (internal/prefix_ranking.h).
SharedRanks rank_shared_values(const Fingerprints& fps, int threads) {
  return internal::rank_shared_values<SigValue>(fps.count(), [&](size_t d) { return fps[d]; }, threads);
}

// Prefix lengths, in shared values. Each pair is found from its longer document x (from the
// later one when both are equally long), probing with x's prefix: its first
// |x| - ceil(alpha |x|) + 1 values in the global order, which hold a common value with every y of
// J >= alpha. The index holds each y's shorter prefix of |y| - ceil(2 alpha / (1 + alpha) |y|) + 1
// values: with |x| >= |y|, J >= alpha needs an overlap of alpha / (1 + alpha) (|x| + |y|) >=
// 2 alpha / (1 + alpha) |y|. Unshared values come first in the order and meet nothing, so both
// prefixes are counted in shared values after them.
struct PrefixLengths {
  std::vector<uint32_t> probe, index;
};

PrefixLengths prefix_lengths(const Fingerprints& fps, const SharedRanks& ranked, double alpha) {
  const size_t n = fps.count();
  auto shared_prefix = [&](size_t d, double need) -> uint32_t {
    const size_t len = fps.offsets[d + 1] - fps.offsets[d];
    if (len == 0) return 0;
    const size_t prefix = len - min_overlap(need, len) + 1;
    const size_t unshared = ranked.unshared[d];
    return prefix <= unshared ? 0 : static_cast<uint32_t>(std::min<size_t>(prefix - unshared, ranked[d].size()));
  };
  PrefixLengths out;
  out.probe.resize(n);
  out.index.resize(n);
  for (size_t d = 0; d < n; ++d) {
    out.probe[d] = shared_prefix(d, alpha);
    out.index[d] = shared_prefix(d, 2.0 * alpha / (1.0 + alpha));
  }
  return out;
}

// The inverted index of the indexed prefixes (CSR by rank), each list ordered by (length,
// document), so that the partners a probe may pair with (alpha |x| <= |y|, and (|y|, y) <
// (|x|, x)) form one range of it. Built in parallel over parts of the ranks: each part walks
// the documents in that order and keeps its own ranks.
struct Posting {
  DocId doc;
  uint32_t len;   // of the document's fingerprint
  uint32_t pos;   // of the value among the document's ranks
  uint32_t rest;  // the document's shared values after it
};

struct PrefixIndex {
  std::vector<uint64_t> head;  // num_ranks + 1
  internal::BigArray<Posting> postings;
  std::span<const Posting> list(uint32_t rank) const noexcept {
    return {postings.data() + head[rank], static_cast<size_t>(head[rank + 1] - head[rank])};
  }
};

std::vector<uint32_t> documents_by_length(const Fingerprints& fps) {
  const size_t n = fps.count();
  size_t max_len = 0;
  for (size_t d = 0; d < n; ++d) max_len = std::max<size_t>(max_len, fps.offsets[d + 1] - fps.offsets[d]);
  std::vector<uint32_t> first(max_len + 2, 0);
  for (size_t d = 0; d < n; ++d) ++first[fps.offsets[d + 1] - fps.offsets[d] + 1];
  for (size_t l = 1; l < first.size(); ++l) first[l] += first[l - 1];
  std::vector<uint32_t> by_length(n);
  for (size_t d = 0; d < n; ++d) by_length[first[fps.offsets[d + 1] - fps.offsets[d]]++] = static_cast<uint32_t>(d);
  return by_length;
}

PrefixIndex build_prefix_index(const Fingerprints& fps, const SharedRanks& ranked, std::span<const uint32_t> ilen, int threads) {
  const size_t num_ranks = ranked.num_ranks;
  const size_t t = static_cast<size_t>(std::max(1, threads));
  const std::vector<uint32_t> by_length = documents_by_length(fps);
  auto for_indexed = [&](size_t p, auto&& fn) {
    const auto [lo, hi] = part_range(num_ranks, p, t);
    for (const uint32_t d : by_length) {
      const auto fp = ranked[d];
      for (size_t i = 0; i < ilen[d] && fp[i] < hi; ++i)  // each list is ascending
        if (fp[i] >= lo) fn(d, i, fp[i]);
    }
  };
  PrefixIndex idx;
  idx.head.assign(num_ranks + 1, 0);
  internal::parallel_for(t, threads, [&](size_t p, size_t) {
    for_indexed(p, [&](size_t, size_t, uint32_t r) { ++idx.head[r + 1]; });
  });
  for (size_t r = 1; r <= num_ranks; ++r) idx.head[r] += idx.head[r - 1];
  idx.postings = internal::BigArray<Posting>(idx.head[num_ranks]);
  internal::parallel_for(t, threads, [&](size_t p, size_t) {
    const auto range = part_range(num_ranks, p, t);
    const size_t lo = range.first;  // a plain variable: lambdas may not capture structured bindings (clang 14)
    std::vector<uint64_t> fill(idx.head.begin() + static_cast<ptrdiff_t>(lo), idx.head.begin() + static_cast<ptrdiff_t>(range.second));
    for_indexed(p, [&](size_t d, size_t i, uint32_t r) {
      const auto len = static_cast<uint32_t>(fps.offsets[d + 1] - fps.offsets[d]);
      const auto rest = static_cast<uint32_t>(ranked[d].size() - i - 1);
      idx.postings[fill[r - lo]++] = {static_cast<DocId>(d), len, static_cast<uint32_t>(i), rest};
    });
  });
  return idx;
}

// A partner y of a probing document x, met at their first common value:
// ranked[x][ix] == ranked[y][iy].
struct Candidate {
  DocId y;
  uint32_t len;
  uint32_t ix, iy;
};

// The probe of one document x: every partner in the index lists of x's prefix, once (`mark`
// remembers the last x that met each y), that passes the positional filter (PPJoin): values
// before the first common one precede it in both documents (one global order), so only the
// shared values after it on either side can add to the overlap.
void probe(size_t x, const Fingerprints& fps, const SharedRanks& ranked, const PrefixIndex& idx, uint32_t plen, double alpha,
           double overlap_factor, std::vector<DocId>& mark, std::vector<Candidate>& cand, JoinStats& st) {
  const auto rx = ranked[x];
  const auto lx = static_cast<uint32_t>(fps.offsets[x + 1] - fps.offsets[x]);
  const size_t sx = rx.size();
  const auto min_len = static_cast<uint32_t>(min_overlap(alpha, lx));  // |y| >= alpha * |x|
  cand.clear();
  for (size_t i = 0; i < plen; ++i) {
    const std::span<const Posting> list = idx.list(rx[i]);
    // The partners: min_len <= |y|, and (|y|, y) < (|x|, x).
    const auto k0 = std::partition_point(list.begin(), list.end(), [&](const Posting& p) { return p.len < min_len; });
    const auto stop = std::partition_point(k0, list.end(), [&](const Posting& p) { return p.len < lx || (p.len == lx && p.doc < x); });
    for (auto k = k0; k < stop; ++k) {
      const DocId y = k->doc;
      if (mark[y] == x) continue;
      mark[y] = static_cast<DocId>(x);
      const size_t bound = 1 + std::min<size_t>(sx - i - 1, k->rest);
      if (static_cast<double>(bound) < overlap_factor * static_cast<double>(lx + k->len) - 1e-9) {
        ++st.pruned;
        continue;
      }
      cand.push_back({y, k->len, static_cast<uint32_t>(i), k->pos});
    }
  }
  st.candidates += cand.size();
}

// Verification in rank space: the common values are shared ones, so |x n y| is the overlap of
// the two rank lists, which starts with the first common value found by the probe; only the
// ranks after it are merged. The values passed before it (the unshared ones and the shared ones
// before the first common value, on both sides) count towards the abort.
template <class Sink>
void verify_probe(size_t x, const Fingerprints& fps, const SharedRanks& ranked, std::span<const Candidate> cand, double alpha,
                  double abort_at, JoinStats& st, size_t tid, Sink& sink) {
  const auto rx = ranked[x];
  const auto lx = static_cast<uint32_t>(fps.offsets[x + 1] - fps.offsets[x]);
  const size_t sx = rx.size();
  for (const Candidate& c : cand) {
    const auto ry = ranked[c.y];
    const size_t ly = c.len;
    const long passed = static_cast<long>((lx - sx + c.ix) + (ly - ry.size() + c.iy));
    const long rest = count_common_abort(rx.subspan(c.ix + 1), ry.subspan(c.iy + 1), fingerprint_abort_bound(abort_at, lx, ly) - passed);
    const double j = rest < 0 ? kAborted : jaccard_from_common(rest + 1, lx, ly);
    if (j < abort_at) {
      ++st.aborted;
      continue;
    }
    if (j + kSimilarityEpsilon < alpha) continue;
    ++st.results;
    const DocId a = std::min<DocId>(static_cast<DocId>(x), c.y), b = std::max<DocId>(static_cast<DocId>(x), c.y);
    sink(tid, a, b, j);
  }
}

// The join: sink(thread, a, b, fingerprint_jaccard) for every pair with J + eps >= alpha.
template <class Sink>
void join(const Fingerprints& fps, double alpha, int threads, JoinStats* stats, Sink&& sink) {
  if (!(alpha > 0.0 && alpha <= 1.0 + kSimilarityEpsilon)) throw UsageError("join threshold must be in (0, 1]");
  const size_t n = fps.count();
  if (n < 2) return;
  NEARDUP_ASSERT(n < 0xFFFFFFFFull);
  const SharedRanks ranked = rank_shared_values(fps, threads);
  const PrefixLengths plen = prefix_lengths(fps, ranked, alpha);
  const PrefixIndex idx = build_prefix_index(fps, ranked, plen.index, threads);
  const size_t t = static_cast<size_t>(std::max(1, threads));
  std::vector<std::vector<DocId>> seen(t);
  std::vector<std::vector<Candidate>> cands(t);
  std::vector<JoinStats> per(t);
  // The merge may stop as soon as the result is certainly below alpha - eps; J >= a needs an
  // overlap of at least a / (1 + a) (|x| + |y|), and rounding only lowers it.
  const double abort_at = alpha - kSimilarityEpsilon;
  const double overlap_factor = abort_at / (1.0 + abort_at);
  constexpr size_t kChunk = 256;
  internal::parallel_for((n + kChunk - 1) / kChunk, threads, [&](size_t chunk, size_t tid) {
    auto& mark = seen[tid];
    if (mark.empty()) mark.assign(n, 0xFFFFFFFFu);
    for (size_t x = chunk * kChunk; x < std::min(n, (chunk + 1) * kChunk); ++x) {
      if (plen.probe[x] == 0) continue;
      probe(x, fps, ranked, idx, plen.probe[x], alpha, overlap_factor, mark, cands[tid], per[tid]);
      verify_probe(x, fps, ranked, cands[tid], alpha, abort_at, per[tid], tid, sink);
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
  std::sort(all.begin(), all.end(), by_pair);
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

// A bounded min-heap of the best pairs under better_pair (Bayardo, Ma and Srikant, WWW 2007, keep such a cache of the best pairs).
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
