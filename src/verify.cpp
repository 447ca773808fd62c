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

Scorer Scorer::exact(const ShingleSets& sets) noexcept {
  Scorer s(Kind::Exact);
  s.sets_ = &sets;
  return s;
}

Scorer Scorer::signature_estimate(std::span<const SigValue> sigs, size_t k) noexcept {
  Scorer s(Kind::Signature);
  s.sigs_ = sigs;
  s.k_ = k;
  return s;
}

Scorer Scorer::bottomk_estimate(const Fingerprints& fingerprints) noexcept {
  Scorer s(Kind::BottomK);
  s.fingerprints_ = &fingerprints;
  return s;
}

Scorer Scorer::simhash_estimate(std::span<const uint64_t> simhashes) noexcept {
  Scorer s(Kind::SimHash);
  s.simhashes_ = simhashes;
  return s;
}

double Scorer::operator()(DocId a, DocId b) const noexcept {
  switch (kind_) {
    case Kind::Exact: return jaccard(sets_->get(a), sets_->get(b));
    case Kind::SimHash: return simhash_similarity(hamming_distance(simhashes_[a], simhashes_[b]));
    case Kind::BottomK: return neardup::bottomk_estimate((*fingerprints_)[a], (*fingerprints_)[b], fingerprints_->size);
    case Kind::Signature: break;
  }
  return estimate_jaccard(sigs_.subspan(a * k_, k_), sigs_.subspan(b * k_, k_));
}

double Scorer::at_least(DocId a, DocId b, double floor) const noexcept {
  if (kind_ == Kind::Exact) return jaccard_at_least(sets_->get(a), sets_->get(b), floor);
  return (*this)(a, b);
}

std::vector<ScoredPair> verify_pairs(std::span<const DocPair> candidates, const Scorer& scorer, double threshold,
                                     int threads) {
  constexpr size_t kChunk = 4096;
  const size_t chunks = (candidates.size() + kChunk - 1) / kChunk;
  std::vector<std::vector<ScoredPair>> out(chunks);
  internal::parallel_for(chunks, threads, [&](size_t c, size_t) {
    const size_t end = std::min(candidates.size(), (c + 1) * kChunk);
    for (size_t i = c * kChunk; i < end; ++i) {
      const double s = scorer.at_least(candidates[i].a, candidates[i].b, threshold - kSimilarityEpsilon);
      if (s + kSimilarityEpsilon >= threshold) out[c].push_back({candidates[i].a, candidates[i].b, s});
    }
  });
  std::vector<ScoredPair> all;
  for (auto& v : out) all.insert(all.end(), v.begin(), v.end());
  return all;
}

}  // namespace neardup
