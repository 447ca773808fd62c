#include "neardup/bucket_verify.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "internal/big_array.h"
#include "internal/parallel.h"
#include "internal/pivot_delta.h"
#include "kernels/dispatch.h"
#include "internal/radix_sort.h"
#include "neardup/bottomk.h"
#include "neardup/union_find.h"

namespace neardup {

namespace {

// Each document's place in `docs` (ascending): a table over the range of docs, written only at
// their entries, since every document looked up is one of them. Buckets hold millions of
// members, and a binary search for each, several times over, cost more than the pairs it led
// to.
class Places {
 public:
  explicit Places(std::span<const DocId> docs)
      : first_(docs.empty() ? 0 : docs.front()), at_(docs.empty() ? 0 : size_t{docs.back()} - first_ + 1) {
    for (size_t i = 0; i < docs.size(); ++i) at_[docs[i] - first_] = static_cast<uint32_t>(i);
  }
  uint32_t operator()(DocId d) const noexcept { return at_[d - first_]; }

 private:
  DocId first_;
  internal::BigArray<uint32_t> at_;  // uninitialised
};

// Estimated similarities: every bucket pair (list_all), or those not yet connected.
VerifiedBuckets verify_estimated(const LshBuckets& buckets, std::span<const DocId> docs, const Scorer& score,
                                 const BucketVerification& how) {
  VerifiedBuckets r;
  if (how.list_all) {
    const std::vector<DocPair> all = bucket_pairs(buckets);
    r.verified = all.size();
    r.pairs = verify_pairs(all, score, how.threshold, how.threads);
    return r;
  }
  const auto local = [&](DocId d) { return place_in(docs, d); };
  UnionFind uf(docs.size());
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    for (size_t y = 1; y < b.size(); ++y)
      for (size_t x = 0; x < y; ++x) {
        const uint32_t lx = local(b[x]), ly = local(b[y]);
        if (uf.find(lx) == uf.find(ly)) continue;
        ++r.verified;
        const double sim = score(b[x], b[y]);
        if (sim + kSimilarityEpsilon < how.threshold) continue;
        uf.unite(lx, ly);
        r.pairs.push_back({b[x], b[y], sim});
      }
  }
  std::sort(r.pairs.begin(), r.pairs.end(), by_pair);
  return r;
}

// The index of star (a, b) in the sorted stars.
size_t star_of(std::span<const DocPair> stars, DocId a, DocId b) noexcept {
  return static_cast<size_t>(std::lower_bound(stars.begin(), stars.end(), DocPair{a, b}) - stars.begin());
}

// The buckets that need more than their stars: those whose documents past the first the stars
// left in different clusters (`uf` holds the verified stars), or every one with list_all. A small
// one's pairs are verified one by one (`small`, bucket indices); the documents of a large one go
// to the join (`joined`), and so do those of a small one that `below_star` picks
// (BucketVerification::join_below_stars: on dense licence boilerplate at J 0.5-0.8 the small
// buckets' pairs within the bound were 1.6 M, 110 k of them at t).
void buckets_left(const LshBuckets& buckets, const Places& local, UnionFind& uf, bool list_all, std::span<const uint8_t> covered,
                  const std::function<bool(std::span<const DocId>)>& below_star, std::vector<size_t>& small,
                  std::vector<DocId>& joined) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    if (!covered.empty() && covered[i]) continue;
    // Split past its first document: the first one's pairs are its stars, all verified, so
    // only two of the others in different clusters can still connect anything.
    bool split = list_all;
    const uint32_t r1 = b.size() > 2 ? uf.find(local(b[1])) : 0;
    for (size_t x = 2; x < b.size() && !split; ++x) split = uf.find(local(b[x])) != r1;
    if (!split) continue;
    if (b.size() > kDirectBucket || below_star(b))
      joined.insert(joined.end(), b.begin(), b.end());
    else
      small.push_back(i);
  }
}

// The index of each document of bucket b past the first in the sorted stars (its star from
// b[0]), into at[1..]: the stars from b[0] are one run, walked with b's documents.
void star_indices(std::span<const DocId> b, std::span<const DocPair> stars, std::vector<size_t>& at) {
  at.resize(b.size());
  size_t k = star_of(stars, b[0], b[1]);
  for (size_t x = 1; x < b.size(); ++x) {
    while (stars[k].b != b[x]) ++k;
    at[x] = k;
  }
}

// The small buckets whose documents all lie in large ones, where the join is to list every pair
// without connecting first (list_all without connect_joined): every large bucket goes to the
// join then, which lists each pair of its documents that shares a bucket (SetJoin::pairs), so
// the pairs of such a small bucket are listed there. Dense licence boilerplate is mostly this:
// a family's small buckets are the large ones' documents again (licence-crowded `pairs`: 187 k
// of the 544 k stars and small-bucket pairs were compared before, about 6% of the run's CPU).
std::vector<uint8_t> covered_buckets(const LshBuckets& buckets, const Places& local, size_t docs) {
  std::vector<uint8_t> in_large(docs, 0), covered(buckets.size(), 0);
  for (size_t i = 0; i < buckets.size(); ++i)
    if (buckets[i].size() > kDirectBucket)
      for (const DocId d : buckets[i]) in_large[local(d)] = 1;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    covered[i] = b.size() <= kDirectBucket && std::all_of(b.begin(), b.end(), [&](DocId d) { return in_large[local(d)] != 0; });
  }
  return covered;
}

// The stars' similarities (exact where they reach the threshold, or all of them with
// whole_stars), counted into `verified`. A star only covered buckets hold is not scored: -1,
// below every threshold, which lists and connects nothing.
std::vector<double> score_stars(const LshBuckets& buckets, std::span<const uint8_t> covered, std::span<const DocPair> stars,
                                const Scorer& score, const BucketVerification& how, uint64_t& verified) {
  const double floor = how.whole_stars ? 0.0 : how.threshold - kSimilarityEpsilon;
  if (covered.empty()) {
    verified += stars.size();
    return score_pairs(stars, score, floor, how.threads);
  }
  std::vector<uint8_t> needed(stars.size(), 0);
  std::vector<size_t> at;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (covered[i] || buckets[i].size() > kDirectBucket) continue;
    star_indices(buckets[i], stars, at);
    for (size_t x = 1; x < at.size(); ++x) needed[at[x]] = 1;
  }
  std::vector<DocPair> scored;
  for (size_t k = 0; k < stars.size(); ++k)
    if (needed[k]) scored.push_back(stars[k]);
  verified += scored.size();
  const std::vector<double> got = score_pairs(scored, score, floor, how.threads);
  std::vector<double> sim(stars.size(), -1.0);
  for (size_t k = 0, j = 0; k < stars.size(); ++k)
    if (needed[k]) sim[k] = got[j++];
  return sim;
}

// A bucket's documents past the first, with their stars' similarity, their cluster and their
// star's index.
struct Member {
  double sim;
  DocId doc;
  uint32_t root;
  uint32_t star;
};

// A pair of a small bucket past its first document p, a < b, with the indices of the stars
// (p, a) and (p, b): what scores it on the differences of a and b from p (score_direct).
struct DirectPair {
  DocId a, b;
  uint32_t star_a, star_b;
};

// The cluster most of `m` are in.
uint32_t largest_cluster(std::span<const Member> m, std::vector<uint32_t>& roots) {
  roots.clear();
  for (const Member& x : m) roots.push_back(x.root);
  std::sort(roots.begin(), roots.end());
  uint32_t best = roots.empty() ? 0 : roots[0];
  size_t best_run = 0;
  for (size_t i = 0; i < roots.size();) {
    size_t j = i + 1;
    while (j < roots.size() && roots[j] == roots[i]) ++j;
    if (j - i > best_run) best = roots[i], best_run = j - i;
    i = j;
  }
  return best;
}

// The pairs of m (sorted by sim) within `bound` of each other: every one with list_all, else
// those across clusters. Without list_all, only the documents outside the largest cluster look
// for partners (forward among all, backward among the largest cluster's), so that a bucket of
// one large cluster and a few others costs those few scans, not the large cluster's pairs.
void pairs_within(std::span<const Member> m, double bound, bool list_all, std::vector<uint32_t>& roots, std::vector<DirectPair>& direct) {
  const auto add = [&](const Member& x, const Member& y) {
    direct.push_back(x.doc < y.doc ? DirectPair{x.doc, y.doc, x.star, y.star} : DirectPair{y.doc, x.doc, y.star, x.star});
  };
  if (list_all) {
    for (size_t x = 0; x < m.size(); ++x)
      for (size_t y = x + 1; y < m.size() && m[y].sim - m[x].sim <= bound; ++y) add(m[x], m[y]);
    return;
  }
  const uint32_t big = largest_cluster(m, roots);
  for (size_t x = 0; x < m.size(); ++x) {
    if (m[x].root == big) continue;
    for (size_t y = x + 1; y < m.size() && m[y].sim - m[x].sim <= bound; ++y)
      if (m[y].root != m[x].root) add(m[x], m[y]);
    for (size_t y = x; y-- > 0 && m[x].sim - m[y].sim <= bound;)
      if (m[y].root == big) add(m[y], m[x]);
  }
}

// The pairs that complete the small buckets, x and y past the first document (whose pairs are
// the stars): every pair with list_all, else those the stars left in different clusters. Only
// pairs whose similarities to the bucket's first document differ by at most 1 - t can reach t:
// Jaccard distance 1 - J is a metric (Levandowsky and Winter 1971), so
// 1 - J(x, y) >= |J(0, x) - J(0, y)| (pivot filtering, as in LAESA: Mico, Oncina and Vidal
// 1994). Each bucket's documents are sorted by that similarity and paired within the bound
// (pairs_within). `star_sim` holds each star's exact similarity. On the run's threads, a run of
// buckets each (`root`: each document's cluster by its place, read only), into `direct`, not
// sorted.
//
// Listing every pair, the buckets of one first document that follow each other (the bands' buckets
// of a cluster of near-copies, ordered by first document) are paired as one: their members, once
// each, with the pairs that share no band dropped (how.share). Bucket by bucket, a pair of such a
// cluster came once per band it shares, and 1 million short documents in clusters listed 86.6 M
// pairs for 7.1 M distinct ones (1.4 GB).
void pairs_left(const LshBuckets& buckets, const Places& local, std::span<const uint32_t> root, std::span<const size_t> small,
                std::span<const DocPair> stars, std::span<const double> star_sim, const BucketVerification& how,
                std::vector<DirectPair>& direct) {
  // Beyond 1 - t by the threshold's own tolerance and a margin for the rounding of the
  // similarities compared: a pair left out is surely below t.
  const double bound = 1 - how.threshold + kSimilarityEpsilon + 1e-9;
  const bool merge = how.list_all && how.share;
  constexpr size_t kRun = 1024;
  std::vector<std::vector<DirectPair>> runs((small.size() + kRun - 1) / kRun);
  internal::parallel_for(runs.size(), how.threads, [&](size_t r, size_t) {
    std::vector<size_t> at;
    std::vector<Member> m;
    std::vector<uint32_t> roots;
    std::vector<DirectPair> merged;
    const size_t end = std::min(small.size(), (r + 1) * kRun);
    for (size_t k = r * kRun, next; k < end; k = next) {
      const DocId first = buckets[small[k]][0];
      next = k + 1;
      while (merge && next < end && buckets[small[next]][0] == first) ++next;
      m.clear();
      for (size_t j = k; j < next; ++j) {
        const auto b = buckets[small[j]];
        star_indices(b, stars, at);
        for (size_t x = 1; x < b.size(); ++x)
          m.push_back({star_sim[at[x]], b[x], how.list_all ? 0 : root[local(b[x])], static_cast<uint32_t>(at[x])});
      }
      const bool several = next > k + 1;
      if (several) {  // members of several buckets: each once (the star to `first` is one)
        std::sort(m.begin(), m.end(), [](const Member& p, const Member& q) { return p.doc < q.doc; });
        m.erase(std::unique(m.begin(), m.end(), [](const Member& p, const Member& q) { return p.doc == q.doc; }), m.end());
      }
      std::sort(m.begin(), m.end(), [](const Member& p, const Member& q) { return p.sim < q.sim; });
      merged.clear();
      pairs_within(m, bound, how.list_all, roots, several ? merged : runs[r]);
      for (const DirectPair& p : merged)  // empty unless several
        if (how.share(p.a, p.b)) runs[r].push_back(p);
    }
  });
  direct.clear();
  for (const auto& run : runs) direct.insert(direct.end(), run.begin(), run.end());
}

// The exact similarity of each star of the small buckets whose verification stopped below the
// threshold (Scorer::at_least gives only a value below it), for pairs_left's bound.
void exact_star_similarities(const LshBuckets& buckets, std::span<const size_t> small, std::span<const DocPair> stars,
                             std::vector<double>& star_sim, const Scorer& score, const BucketVerification& how) {
  std::vector<size_t> below, at;
  for (const size_t i : small) {
    star_indices(buckets[i], stars, at);
    for (size_t x = 1; x < at.size(); ++x)
      if (star_sim[at[x]] + kSimilarityEpsilon < how.threshold) below.push_back(at[x]);
  }
  std::sort(below.begin(), below.end());
  below.erase(std::unique(below.begin(), below.end()), below.end());
  std::vector<DocPair> again;
  again.reserve(below.size());
  for (const size_t k : below) again.push_back(stars[k]);
  const std::vector<double> exact = score_pairs(again, score, 0.0, how.threads);
  for (size_t j = 0; j < below.size(); ++j) star_sim[below[j]] = exact[j];
}

// The pairs of `v` not in `stars` (sorted), sorted by (a, b), each once (with the stars of the
// first bucket that gave it). On the run's threads: the pairs are cut by their first document
// into ranges, each sorted and taken from the stars' range there, on its own.
std::vector<DirectPair> distinct_minus(std::vector<DirectPair>& v, std::span<const DocPair> stars, int threads) {
  if (v.empty()) return {};
  DocId lo = v[0].a, hi = v[0].a, max_b = 0;
  for (const DirectPair& p : v) lo = std::min(lo, p.a), hi = std::max(hi, p.a), max_b = std::max(max_b, p.b);
  const size_t parts = std::min<size_t>(static_cast<size_t>(std::max(threads, 1)) * 4, v.size() / 4096 + 1);
  const uint64_t span = uint64_t{hi} - lo + 1;
  const auto part_of = [&](DocId a) { return static_cast<size_t>((uint64_t{a} - lo) * parts / span); };
  std::vector<std::vector<DirectPair>> part(parts);
  for (const DirectPair& p : v) part[part_of(p.a)].push_back(p);
  std::vector<DirectPair>().swap(v);
  const int wb = static_cast<int>(std::bit_width(max_b)), wa = static_cast<int>(std::bit_width(hi));
  const auto key = [wb](const DirectPair& p) { return static_cast<uint64_t>(p.a) << wb | p.b; };
  const auto same = [](const DirectPair& x, const DirectPair& y) { return x.a == y.a && x.b == y.b; };
  internal::parallel_for(parts, threads, [&](size_t i, size_t) {
    std::vector<DirectPair>& q = part[i];
    if (q.empty()) return;
    std::vector<DirectPair> tmp(q.size());
    internal::radix_sort_by_bits(q.data(), tmp.data(), q.size(), 0, std::max(1, wa + wb), key);  // stable
    q.erase(std::unique(q.begin(), q.end(), same), q.end());
    auto star = std::lower_bound(stars.begin(), stars.end(), DocPair{q.front().a, 0});
    tmp.clear();
    for (const DirectPair& p : q) {
      while (star != stars.end() && (star->a < p.a || (star->a == p.a && star->b < p.b))) ++star;
      if (star == stars.end() || star->a != p.a || star->b != p.b) tmp.push_back(p);
    }
    q.swap(tmp);
  });
  std::vector<DirectPair> out;
  for (const auto& p : part) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The most bytes of differences StarDeltas holds at once; the pairs a star must be in for its
// differences to be taken.
constexpr uint64_t kDeltaBytes = uint64_t{64} << 20;
constexpr int kDeltaUses = 4;
constexpr size_t kDeltaMaxSet = 16384;

// The differences of each star's second document from its first (internal/pivot_delta.h), for
// the stars `needed` marks, where they are short: a pair of a bucket is then counted on its two
// members' differences from the bucket's first document, not on a merge of their whole sets.
class StarDeltas {
 public:
  StarDeltas(std::span<const DocPair> stars, std::span<const double> star_sim, std::span<const uint8_t> needed, const ShingleSets& sets,
             size_t min_set, uint64_t max_bytes, int threads)
      : at_(stars.size()) {
    constexpr size_t kChunk = 256;
    chunks_.resize((stars.size() + kChunk - 1) / kChunk);
    std::atomic<uint64_t> bytes{0};
    internal::parallel_for(chunks_.size(), threads, [&](size_t c, size_t) {
      std::vector<ShingleHash> d, a;
      for (size_t k = c * kChunk; k < std::min(stars.size(), (c + 1) * kChunk); ++k) {
        if (!needed[k]) continue;
        const std::span<const ShingleHash> p = sets.get(stars[k].a), x = sets.get(stars[k].b);
        if (std::min(p.size(), x.size()) < min_set || std::max(p.size(), x.size()) > kDeltaMaxSet) continue;
        // Differences of up to half of x, so that a pair of two such costs at most a merge of the
        // two: known from the star's exact similarity J, as |x| + |p| - 2 |x & p| with
        // |x & p| = J (|x| + |p|) / (1 + J), so that no merge is spent on differences too long.
        const double total = static_cast<double>(x.size() + p.size());
        if (total - 2 * star_sim[k] * total / (1 + star_sim[k]) > 0.5 * static_cast<double>(x.size()) + 1) continue;
        if (!internal::differences_within(x, p, x.size() / 2, d, a)) continue;
        // Past max_bytes in all, the rest are merged whole: which ones depends on the threads'
        // timing, the similarities do not.
        if (bytes.fetch_add((d.size() + a.size()) * sizeof(ShingleHash), std::memory_order_relaxed) > max_bytes) continue;
        at_[k] = {static_cast<uint32_t>(c), chunks_[c].size(), static_cast<uint32_t>(d.size()), static_cast<uint32_t>(a.size()),
                  static_cast<uint32_t>(p.size()), true};
        chunks_[c].insert(chunks_[c].end(), d.begin(), d.end());
        chunks_[c].insert(chunks_[c].end(), a.begin(), a.end());
      }
    });
  }
  bool has(uint32_t star) const noexcept { return at_[star].ok; }
  /// J of the second documents of two stars from one first document, both with differences.
  double jaccard(uint32_t x, uint32_t y) const noexcept {
    const Entry &ex = at_[x], &ey = at_[y];
    const auto count = [](std::span<const ShingleHash> u, std::span<const ShingleHash> v) {
      return internal::kernels().set_common_at_least(u.data(), u.size(), v.data(), v.size(), 0);
    };
    const long common = internal::delta_common(removed(ex), added(ex), removed(ey), added(ey), ex.pivot, count);
    return jaccard_from_common(common, size_t{ex.pivot} - ex.removed + ex.added, size_t{ey.pivot} - ey.removed + ey.added);
  }

 private:
  struct Entry {
    uint32_t chunk = 0;
    size_t at = 0;
    uint32_t removed = 0, added = 0, pivot = 0;
    bool ok = false;
  };
  std::span<const ShingleHash> removed(const Entry& e) const noexcept { return {chunks_[e.chunk].data() + e.at, e.removed}; }
  std::span<const ShingleHash> added(const Entry& e) const noexcept { return {chunks_[e.chunk].data() + e.at + e.removed, e.added}; }
  std::vector<Entry> at_;
  std::vector<std::vector<ShingleHash>> chunks_;
};

// Verifies the small buckets' pairs: on their differences from their bucket's first document
// where both have short ones (StarDeltas; sets of how.delta_min_set hashes or more), by a merge
// otherwise. The pairs with J >= t, in the order of `direct`.
std::vector<ScoredPair> score_direct(std::span<const DirectPair> direct, std::span<const DocPair> stars, std::span<const double> star_sim,
                                     const Scorer& score, const BucketVerification& how, uint64_t& by_delta) {
  std::vector<DocPair> merged;
  std::vector<ScoredPair> out;
  const ShingleSets* sets = score.exact_sets();
  if (!sets || how.delta_min_set == SIZE_MAX) {
    for (const DirectPair& p : direct) merged.push_back({p.a, p.b});
    return verify_pairs(merged, score, how.threshold, how.threads);
  }
  // A star's differences cost a merge of its two sets: they pay where it is in several pairs.
  std::vector<uint8_t> needed(stars.size(), 0);  // the pairs each star is in, up to kDeltaUses
  for (const DirectPair& p : direct)
    for (const uint32_t k : {p.star_a, p.star_b}) needed[k] = static_cast<uint8_t>(std::min(kDeltaUses, needed[k] + 1));
  for (uint8_t& n : needed) n = n == kDeltaUses;
  const StarDeltas deltas(stars, star_sim, needed, *sets, how.delta_min_set, kDeltaBytes, how.threads);
  std::vector<uint8_t>().swap(needed);
  constexpr size_t kChunk = 4096;
  std::vector<std::vector<ScoredPair>> found((direct.size() + kChunk - 1) / kChunk);
  internal::parallel_for(found.size(), how.threads, [&](size_t c, size_t) {
    for (size_t i = c * kChunk; i < std::min(direct.size(), (c + 1) * kChunk); ++i) {
      const DirectPair& p = direct[i];
      if (!deltas.has(p.star_a) || !deltas.has(p.star_b)) continue;
      const double sim = deltas.jaccard(p.star_a, p.star_b);
      if (sim + kSimilarityEpsilon >= how.threshold) found[c].push_back({p.a, p.b, sim});
    }
  });
  for (const DirectPair& p : direct)
    if (!deltas.has(p.star_a) || !deltas.has(p.star_b)) merged.push_back({p.a, p.b});
  by_delta += direct.size() - merged.size();
  for (const auto& f : found) out.insert(out.end(), f.begin(), f.end());
  const std::vector<ScoredPair> more = verify_pairs(merged, score, how.threshold, how.threads);
  std::vector<ScoredPair> all(out.size() + more.size());
  std::merge(out.begin(), out.end(), more.begin(), more.end(), all.begin(), by_pair);
  return all;
}

}  // namespace

VerifiedBuckets verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, const Scorer& score,
                               const BucketVerification& how) {
  if (!how.join) return verify_estimated(buckets, docs, score, how);
  VerifiedBuckets r;
  std::vector<DocPair> stars = star_edges(buckets);
  const Places local(docs);
  // Listing without connecting: the join lists the pairs of the small buckets it covers.
  const std::vector<uint8_t> covered = how.list_all && !how.connect_joined ? covered_buckets(buckets, local, docs.size()) : std::vector<uint8_t>();
  std::vector<double> star_sim = score_stars(buckets, covered, stars, score, how, r.verified);
  std::vector<ScoredPair> pairs;
  for (size_t k = 0; k < stars.size(); ++k)
    if (star_sim[k] + kSimilarityEpsilon >= how.threshold) pairs.push_back({stars[k].a, stars[k].b, star_sim[k]});
  UnionFind uf(docs.size());
  for (const ScoredPair& e : pairs) uf.unite(local(e.a), local(e.b));
  std::vector<size_t> small;
  std::vector<DocId> joined;
  // A bucket of more than how.join_below_stars documents, most of them less alike than t to its
  // first.
  std::vector<size_t> at;
  const auto below_star = [&](std::span<const DocId> b) {
    if (b.size() <= how.join_below_stars) return false;
    star_indices(b, stars, at);
    size_t reached = 0;
    for (size_t x = 1; x < b.size(); ++x) reached += star_sim[at[x]] + kSimilarityEpsilon >= how.threshold;
    return 2 * reached < b.size() - 1;
  };
  buckets_left(buckets, local, uf, how.list_all, covered, below_star, small, joined);
  if (!how.whole_stars) exact_star_similarities(buckets, small, stars, star_sim, score, how);
  std::vector<uint32_t> root(how.list_all ? 0 : docs.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = uf.find(static_cast<uint32_t>(i));
  std::vector<DirectPair> direct;
  pairs_left(buckets, local, root, small, stars, star_sim, how, direct);
  direct = distinct_minus(direct, stars, how.threads);  // the stars are verified already
  r.verified += direct.size();
  if (!direct.empty()) {
    const auto more = score_direct(direct, stars, star_sim, score, how, r.by_delta);
    for (const ScoredPair& e : more) uf.unite(local(e.a), local(e.b));
    std::vector<ScoredPair> merged(pairs.size() + more.size());
    std::merge(pairs.begin(), pairs.end(), more.begin(), more.end(), merged.begin(), by_pair);
    pairs.swap(merged);
  }
  std::vector<DirectPair>().swap(direct);
  std::vector<DocPair>().swap(stars);
  if (!joined.empty()) {
    std::sort(joined.begin(), joined.end());
    joined.erase(std::unique(joined.begin(), joined.end()), joined.end());
    std::unique_ptr<SetJoin> join = how.join(joined);
    std::vector<ScoredPair> more;
    if (!how.list_all || how.connect_joined) {
      // What the stars and the small buckets' pairs connected, as each joined document's cluster.
      std::vector<uint32_t> component(joined.size());
      for (size_t i = 0; i < joined.size(); ++i) component[i] = uf.find(local(joined[i]));
      more = join->connect(component, how.share);
    }
    r.verified += join->stats().verified;
    if (how.list_all) r.join = std::move(join);
    if (!more.empty()) {
      pairs.insert(pairs.end(), more.begin(), more.end());
      std::sort(pairs.begin(), pairs.end(), by_pair);
    }
  }
  r.pairs = std::move(pairs);
  return r;
}

}  // namespace neardup
