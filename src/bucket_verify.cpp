#include "neardup/bucket_verify.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "internal/radix_sort.h"
#include "neardup/union_find.h"

namespace neardup {

namespace {

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

// The buckets that need more than their stars: those the stars left split (`uf` holds the
// verified stars), or every one with list_all. A small one's pairs are verified one by one
// (`small`, bucket indices); the documents of a large one go to the join (`joined`).
void buckets_left(const LshBuckets& buckets, std::span<const DocId> docs, UnionFind& uf, bool list_all,
                  std::vector<size_t>& small, std::vector<DocId>& joined) {
  const auto local = [&](DocId d) { return place_in(docs, d); };
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    bool split = list_all;
    const uint32_t r0 = uf.find(local(b[0]));
    for (size_t x = 1; x < b.size() && !split; ++x) split = uf.find(local(b[x])) != r0;
    if (!split) continue;
    if (b.size() > kDirectBucket)
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

// The pairs that complete the small buckets, x and y past the first document (whose pairs are
// the stars): every pair with list_all, else those the stars left in different clusters. Only
// pairs whose similarities to the bucket's first document differ by at most 1 - t can reach t:
// Jaccard distance 1 - J is a metric (Levandowsky and Winter 1971), so
// 1 - J(x, y) >= |J(0, x) - J(0, y)| (pivot filtering, as in LAESA: Mico, Oncina and Vidal
// 1994). Each bucket's documents are sorted by that similarity, and each is paired with those
// that follow it within the bound. `star_sim` holds each star's exact similarity.
void pairs_left(const LshBuckets& buckets, std::span<const DocId> docs, UnionFind& uf, std::span<const size_t> small,
                std::span<const DocPair> stars, std::span<const double> star_sim, const BucketVerification& how,
                std::vector<DocPair>& direct) {
  const auto local = [&](DocId d) { return place_in(docs, d); };
  // Beyond 1 - t by the threshold's own tolerance and a margin for the rounding of the
  // similarities compared: a pair left out is surely below t.
  const double bound = 1 - how.threshold + kSimilarityEpsilon + 1e-9;
  struct Member {
    double sim;
    DocId doc;
    uint32_t root;
  };
  std::vector<size_t> at;
  std::vector<Member> m;
  for (const size_t i : small) {
    const auto b = buckets[i];
    star_indices(b, stars, at);
    m.clear();
    for (size_t x = 1; x < b.size(); ++x) m.push_back({star_sim[at[x]], b[x], how.list_all ? 0 : uf.find(local(b[x]))});
    std::sort(m.begin(), m.end(), [](const Member& p, const Member& q) { return p.sim < q.sim; });
    for (size_t x = 0; x < m.size(); ++x)
      for (size_t y = x + 1; y < m.size() && m[y].sim - m[x].sim <= bound; ++y)
        if (how.list_all || m[x].root != m[y].root) direct.push_back({std::min(m[x].doc, m[y].doc), std::max(m[x].doc, m[y].doc)});
  }
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

// The sorted pairs of `a` not in `b` (sorted).
std::vector<DocPair> minus(const std::vector<DocPair>& a, std::span<const DocPair> b) {
  std::vector<DocPair> rest;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(rest));
  return rest;
}

}  // namespace

VerifiedBuckets verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, const Scorer& score,
                               const BucketVerification& how) {
  if (!how.join) return verify_estimated(buckets, docs, score, how);
  VerifiedBuckets r;
  std::vector<DocPair> stars = star_edges(buckets);
  std::vector<double> star_sim = score_pairs(stars, score, how.threshold - kSimilarityEpsilon, how.threads);
  std::vector<ScoredPair> pairs;
  for (size_t k = 0; k < stars.size(); ++k)
    if (star_sim[k] + kSimilarityEpsilon >= how.threshold) pairs.push_back({stars[k].a, stars[k].b, star_sim[k]});
  r.verified = stars.size();
  UnionFind uf(docs.size());
  for (const ScoredPair& e : pairs) uf.unite(place_in(docs, e.a), place_in(docs, e.b));
  std::vector<size_t> small;
  std::vector<DocId> joined;
  buckets_left(buckets, docs, uf, how.list_all, small, joined);
  exact_star_similarities(buckets, small, stars, star_sim, score, how);
  std::vector<DocPair> direct;
  pairs_left(buckets, docs, uf, small, stars, star_sim, how, direct);
  internal::sort_unique_pairs(direct);
  direct = minus(direct, stars);  // already verified
  r.verified += direct.size();
  if (!direct.empty()) {
    const auto more = verify_pairs(direct, score, how.threshold, how.threads);
    std::vector<ScoredPair> merged(pairs.size() + more.size());
    std::merge(pairs.begin(), pairs.end(), more.begin(), more.end(), merged.begin(), by_pair);
    pairs.swap(merged);
  }
  std::vector<DocPair>().swap(direct);
  std::vector<DocPair>().swap(stars);
  if (!joined.empty()) {
    std::sort(joined.begin(), joined.end());
    joined.erase(std::unique(joined.begin(), joined.end()), joined.end());
    std::unique_ptr<SetJoin> join = how.join(joined);
    const std::vector<ScoredPair> more = join->connect(how.num_docs, pairs, how.share);
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
