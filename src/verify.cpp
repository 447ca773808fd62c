#include "neardup/verify.h"

#include "internal/parallel.h"
#include "neardup/error.h"
#include "neardup/minhash.h"
#include "neardup/simhash.h"

namespace neardup {

void ShingleSets::set(DocId doc, std::vector<ShingleHash> set) {
  NEARDUP_ASSERT(doc < slot_.size());
  total_ += set.size();
  if (slot_[doc] == kNone) {
    slot_[doc] = static_cast<uint32_t>(sets_.size());
    sets_.push_back(std::move(set));
  } else {
    total_ -= sets_[slot_[doc]].size();
    sets_[slot_[doc]] = std::move(set);
  }
}

std::span<const ShingleHash> ShingleSets::get(DocId doc) const noexcept {
  if (!has(doc)) return {};
  return sets_[slot_[doc]];
}

double Scorer::operator()(DocId a, DocId b) const noexcept {
  if (mode == VerifyMode::Exact) return jaccard(sets->get(a), sets->get(b));
  if (!simhashes.empty()) return simhash_similarity(hamming_distance(simhashes[a], simhashes[b]));
  if (fingerprints) return bottomk_estimate((*fingerprints)[a], (*fingerprints)[b], fingerprints->size);
  return estimate_jaccard(sigs.subspan(a * k, k), sigs.subspan(b * k, k));
}

std::vector<ScoredPair> verify_pairs(std::span<const DocPair> candidates, const Scorer& scorer, double threshold,
                                     int threads) {
  constexpr size_t kChunk = 4096;
  const size_t chunks = (candidates.size() + kChunk - 1) / kChunk;
  std::vector<std::vector<ScoredPair>> out(chunks);
  internal::parallel_for(chunks, threads, [&](size_t c, size_t) {
    const size_t end = std::min(candidates.size(), (c + 1) * kChunk);
    for (size_t i = c * kChunk; i < end; ++i) {
      const double s = scorer(candidates[i].a, candidates[i].b);
      if (s + kSimilarityEpsilon >= threshold) out[c].push_back({candidates[i].a, candidates[i].b, s});
    }
  });
  std::vector<ScoredPair> all;
  for (auto& v : out) all.insert(all.end(), v.begin(), v.end());
  return all;
}

}  // namespace neardup
