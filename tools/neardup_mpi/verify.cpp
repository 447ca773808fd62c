// Each bucket verified on the rank that owns it.
#include "run.h"

namespace neardup::mpi {

Scorer Run::scorer(const Payloads& pl) const {
  if (spec_.verify == VerifyMode::Exact) return Scorer::exact(pl.sets);
  return Scorer::signature_estimate(pl.sigs, static_cast<size_t>(spec_.num_perm));
}

// Verifies this rank's buckets (payloads in pl, numbered by pl.index), as one process does:
// dedup connects every pair of a bucket with similarity >= t (star edges first; then, in a
// bucket the stars left split, the pairs across its parts: pair by pair in a small bucket, by the
// exact join in a large one); pairs lists every such pair (the join for large buckets). The join
// keeps only pairs that share a band, so it adds no pair that LSH would not have proposed.
// Estimated similarities have no sets to join: large buckets are compared pair by pair.
// Returns the edges (dedup) or pairs, in global numbers.
std::vector<ScoredPair> Run::verify_buckets(const std::vector<std::vector<DocId>>& buckets, const Payloads& pl) {
  const Scorer score = scorer(pl);
  const double t = spec_.threshold;
  const bool exact = spec_.verify == VerifyMode::Exact;
  const size_t k = static_cast<size_t>(spec_.num_perm);
  constexpr size_t kDirect = 64;  // larger buckets: the join (exact), or one pair at a time
  auto local = [&](DocId d) { return static_cast<DocId>(pl.index(d)); };
  const PairFilter share = [&](DocId a, DocId b) {
    return share_band(std::span<const SigValue>(pl.sigs).subspan(a * k, k), std::span<const SigValue>(pl.sigs).subspan(b * k, k), spec_.lsh);
  };
  auto join_over = [&](const std::vector<const std::vector<DocId>*>& large) {
    std::vector<DocId> docs;
    for (const auto* b : large)
      for (const DocId d : *b) docs.push_back(local(d));
    std::sort(docs.begin(), docs.end());
    docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
    return std::make_unique<SetJoin>(docs, [&](DocId d) { return pl.sets.get(d); }, t, threads_);
  };
  std::vector<ScoredPair> out;
  auto to_global = [&](const std::vector<ScoredPair>& v) {
    for (const ScoredPair& p : v) out.push_back({pl.docs[p.a], pl.docs[p.b], p.similarity});
  };
  std::vector<DocPair> pairs;
  std::vector<const std::vector<DocId>*> large;
  if (!dedup_) {
    for (const auto& b : buckets) {
      if (exact && b.size() > kDirect) {
        large.push_back(&b);
        continue;
      }
      for (size_t y = 1; y < b.size(); ++y)
        for (size_t x = 0; x < y; ++x) pairs.push_back({local(b[x]), local(b[y])});
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    candidates_ += pairs.size();
    std::vector<ScoredPair> found = verify_pairs(pairs, score, t, threads_);
    if (!large.empty()) {
      const auto join = join_over(large);
      std::vector<ScoredPair> more = join->all_pairs(share);
      candidates_ += join->stats().verified;
      found.insert(found.end(), more.begin(), more.end());
    }
    to_global(found);
    return out;
  }
  for (const auto& b : buckets)
    for (size_t y = 1; y < b.size(); ++y) pairs.push_back({local(b[0]), local(b[y])});
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  candidates_ += pairs.size();
  UnionFind uf(pl.docs.size());
  std::vector<ScoredPair> edges;
  auto take = [&](const ScoredPair& e) {
    if (uf.unite(e.a, e.b)) edges.push_back(e);
  };
  for (const ScoredPair& e : verify_pairs(pairs, score, t, threads_)) take(e);
  std::vector<DocPair> direct;
  for (const auto& b : buckets) {
    bool split = false;
    for (const DocId d : b) split |= uf.find(local(d)) != uf.find(local(b[0]));
    if (!split) continue;
    if (b.size() <= kDirect) {
      for (size_t y = 2; y < b.size(); ++y)  // the pairs with b[0] are stars
        for (size_t x = 1; x < y; ++x)
          if (uf.find(local(b[x])) != uf.find(local(b[y]))) direct.push_back({local(b[x]), local(b[y])});
    } else if (exact) {
      large.push_back(&b);
    } else {
      for (size_t y = 1; y < b.size(); ++y)
        for (size_t x = 0; x < y; ++x) {
          const DocId lx = local(b[x]), ly = local(b[y]);
          if (uf.find(lx) == uf.find(ly)) continue;
          ++candidates_;
          const double sim = score(lx, ly);
          if (sim + kSimilarityEpsilon >= t) take({lx, ly, sim});
        }
    }
  }
  std::sort(direct.begin(), direct.end());
  direct.erase(std::unique(direct.begin(), direct.end()), direct.end());
  candidates_ += direct.size();
  for (const ScoredPair& e : verify_pairs(direct, score, t, threads_)) take(e);
  if (!large.empty()) {
    const auto join = join_over(large);
    for (const ScoredPair& e : join->connect(pl.docs.size(), edges, share)) take(e);
    candidates_ += join->stats().verified;
  }
  to_global(edges);
  return out;
}

}  // namespace neardup::mpi
