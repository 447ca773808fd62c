#include "neardup/bucket_verify.h"

#include <algorithm>
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

// The pairs that complete the buckets the verified `pairs` left split (every pair with
// list_all), not yet verified (`stars`), and the documents of the large ones, for the join.
void rest_of_buckets(const LshBuckets& buckets, std::span<const DocId> docs, std::span<const ScoredPair> pairs, bool list_all,
                     std::vector<DocPair>& direct, std::vector<DocId>& joined) {
  const auto local = [&](DocId d) { return place_in(docs, d); };
  UnionFind uf(docs.size());
  for (const ScoredPair& e : pairs) uf.unite(local(e.a), local(e.b));
  std::vector<uint32_t> root;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    root.resize(b.size());
    bool split = false;
    for (size_t x = 0; x < b.size(); ++x) {
      root[x] = uf.find(local(b[x]));
      split |= root[x] != root[0];
    }
    if (!split && !list_all) continue;
    if (b.size() > kDirectBucket) {
      joined.insert(joined.end(), b.begin(), b.end());
      continue;
    }
    for (size_t y = 2; y < b.size(); ++y)  // the pairs with b[0] are stars
      for (size_t x = 1; x < y; ++x)
        if (list_all || root[x] != root[y]) direct.push_back({b[x], b[y]});
  }
}

}  // namespace

VerifiedBuckets verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, const Scorer& score,
                               const BucketVerification& how) {
  if (!how.join) return verify_estimated(buckets, docs, score, how);
  VerifiedBuckets r;
  std::vector<DocPair> stars = star_edges(buckets);
  std::vector<ScoredPair> pairs = verify_pairs(stars, score, how.threshold, how.threads);
  r.verified = stars.size();
  std::vector<DocPair> direct;
  std::vector<DocId> joined;
  rest_of_buckets(buckets, docs, pairs, how.list_all, direct, joined);
  internal::sort_unique_pairs(direct);
  {  // stars already verified
    std::vector<DocPair> rest;
    std::set_difference(direct.begin(), direct.end(), stars.begin(), stars.end(), std::back_inserter(rest));
    direct.swap(rest);
  }
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
