// Each bucket verified on the rank that owns it, by the procedure one process uses
// (bucket_verify.h), over the payloads fetched from the ranks that read its documents.
#include "run.h"

namespace neardup::mpi {

Scorer Run::scorer(const Payloads& pl) const {
  if (spec_.verify == VerifyMode::Exact) return Scorer::exact(pl.sets);
  return Scorer::signature_estimate(pl.sigs, static_cast<size_t>(spec_.num_perm));
}

// This rank's buckets (global numbers), verified in the payloads' numbers (pl.index): dedup gets
// the pairs that connect what the buckets connect, pairs every pair with similarity >= t.
// Returns them in global numbers.
std::vector<ScoredPair> Run::verify_buckets(const std::vector<std::vector<DocId>>& buckets, const Payloads& pl) {
  LshBuckets local;
  for (const auto& b : buckets) {
    for (const DocId d : b) local.members.push_back(static_cast<DocId>(pl.index(d)));
    local.offsets.push_back(local.members.size());
  }
  std::vector<DocId> docs(pl.docs.size());
  std::iota(docs.begin(), docs.end(), DocId{0});
  const size_t k = static_cast<size_t>(spec_.num_perm);
  BucketVerification how;
  how.threshold = spec_.threshold;
  how.threads = threads_;
  how.list_all = !dedup_;
  how.num_docs = docs.size();
  how.share = [&](DocId a, DocId b) {
    const std::span<const SigValue> sigs(pl.sigs);
    return share_band(sigs.subspan(a * k, k), sigs.subspan(b * k, k), spec_.lsh);
  };
  if (spec_.verify == VerifyMode::Exact)
    how.join = [&](std::span<const DocId> over) {
      return std::make_unique<SetJoin>(over, [&](DocId d) { return pl.sets.get(d); }, spec_.threshold, threads_);
    };
  VerifiedBuckets v = neardup::verify_buckets(local, docs, scorer(pl), how);
  candidates_ += v.verified;
  std::vector<ScoredPair> out;
  out.reserve(v.pairs.size());
  auto to_global = [&](std::span<const ScoredPair> found) {
    for (const ScoredPair& p : found) out.push_back({pl.docs[p.a], pl.docs[p.b], p.similarity});
  };
  to_global(v.pairs);
  // Pairs: those of the large buckets too (send_pairs drops the ones listed twice).
  if (v.join) v.join->pairs(how.share, to_global);
  return out;
}

}  // namespace neardup::mpi
