#include "neardup/verify.h"

#include <algorithm>

#include "internal/parallel.h"
#include "internal/sorted_merge.h"
#include "neardup/error.h"
#include "neardup/minhash.h"
#include "neardup/simhash.h"

namespace neardup {

namespace {

// Identical sets have equal digests; the digest picks the stored copy that is then compared in
// full, so it need only spread distinct sets (of uniform 64-bit hashes) well, and be quick.
uint64_t set_digest(std::span<const ShingleHash> set) noexcept {
  uint64_t sum = 0, mix = 0;
  for (const ShingleHash h : set) {
    sum += h;
    mix ^= h * 0x9E3779B97F4A7C15ull;
  }
  return (sum ^ (mix >> 29) ^ (set.size() * 0xBF58476D1CE4E5B9ull)) * 0x94D049BB133111EBull;
}

}  // namespace

bool ShingleSets::use_sparse_slots() {
  if (live_ > 0) return false;
  std::vector<uint32_t>().swap(slot_);
  sparse_ = true;
  table_.assign(16, kFree);
  in_table_ = 0;
  return true;
}

void ShingleSets::assign(DocId doc, uint32_t slot) {
  if (!sparse_) {
    if (doc >= slot_.size()) slot_.resize(static_cast<size_t>(doc) + 1, kNone);
    slot_[doc] = slot;
    return;
  }
  if ((in_table_ + 1) * 2 > table_.size()) {
    std::vector<uint64_t> old(table_.size() * 2, kFree);
    old.swap(table_);
    for (const uint64_t e : old)
      if (e != kFree) {
        size_t i = sparse_home(static_cast<DocId>(e >> 32));
        while (table_[i] != kFree) i = (i + 1) & (table_.size() - 1);
        table_[i] = e;
      }
  }
  size_t i = sparse_home(doc);
  while (table_[i] != kFree && (table_[i] >> 32) != doc) i = (i + 1) & (table_.size() - 1);
  in_table_ += table_[i] == kFree;
  table_[i] = uint64_t{doc} << 32 | slot;
}

uint32_t ShingleSets::sparse_slot(DocId doc) const noexcept {
  for (size_t i = sparse_home(doc);; i = (i + 1) & (table_.size() - 1)) {
    if (table_[i] == kFree) return kNone;
    if ((table_[i] >> 32) == doc) return static_cast<uint32_t>(table_[i]);
  }
}

// Knuth's deletion for linear probing (TAOCP 6.4, algorithm R): each later entry of the run
// that its home allows moves into the hole.
void ShingleSets::sparse_erase(DocId doc) noexcept {
  const size_t mask = table_.size() - 1;
  size_t i = sparse_home(doc);
  while ((table_[i] >> 32) != doc) i = (i + 1) & mask;  // present: the caller found its slot
  for (size_t j = (i + 1) & mask; table_[j] != kFree; j = (j + 1) & mask) {
    const size_t home = sparse_home(static_cast<DocId>(table_[j] >> 32));
    // Moves when its home is not cyclically within (i, j].
    if (((j - home) & mask) >= ((j - i) & mask)) {
      table_[i] = table_[j];
      i = j;
    }
  }
  table_[i] = kFree;
  --in_table_;
}

void ShingleSets::set(DocId doc, std::vector<ShingleHash> set) {
  forget(doc);
  const bool shareable = set.size() >= kShareMin;
  const uint64_t digest = shareable ? set_digest(set) : 0;
  if (shareable) {
    const auto it = by_digest_.find(digest);
    if (it != by_digest_.end() && sets_[it->second] == set) {
      assign(doc, it->second);
      ++users_[it->second];
      ++shared_docs_;
      return;  // `set` is let go here
    }
  }
  const auto slot = static_cast<uint32_t>(sets_.size());
  assign(doc, slot);
  total_ += set.size();
  sets_.push_back(std::move(set));
  users_.push_back(1);
  digests_.push_back(digest);
  ++live_;
  // A digest taken by a different set keeps that one: this set is not found for sharing.
  if (shareable) by_digest_.emplace(digest, slot);
}

void ShingleSets::share(DocId doc, DocId from) {
  if (!has(from) || doc == from) throw UsageError("ShingleSets::share: the document to share with has no set");
  forget(doc);
  const uint32_t slot = slot_of(from);
  assign(doc, slot);
  ++users_[slot];
  ++shared_docs_;
}

// A slot one fewer document uses; its copy is let go with the last.
void ShingleSets::drop(uint32_t slot) noexcept {
  if (--users_[slot] > 0) {
    --shared_docs_;
    return;
  }
  std::vector<ShingleHash>& set = sets_[slot];
  if (set.size() >= kShareMin) {
    const auto it = by_digest_.find(digests_[slot]);
    if (it != by_digest_.end() && it->second == slot) by_digest_.erase(it);
  }
  total_ -= set.size();
  std::vector<ShingleHash>().swap(set);
  // The last set let go: the slots start again from the first. A verification in groups stores
  // and lets go each group's sets in turn, and slots never reused would grow with every set of
  // the run (28 B each: 370 MB for the 13 million sets read again of 50 million short
  // documents), where their count is now the largest group's.
  if (--live_ == 0) {
    sets_.clear();
    users_.clear();
    digests_.clear();
    by_digest_.clear();
  }
}

void ShingleSets::forget(DocId doc) noexcept {
  const uint32_t slot = slot_of(doc);
  if (slot == kNone) return;
  if (sparse_)
    sparse_erase(doc);
  else
    slot_[doc] = kNone;
  drop(slot);
}

void ShingleSets::keep_only(std::span<const uint8_t> needed) {
  if (sparse_) {
    std::vector<DocId> gone;
    for (const uint64_t e : table_)
      if (const auto d = static_cast<DocId>(e >> 32); e != kFree && (d >= needed.size() || !needed[d])) gone.push_back(d);
    release(gone);
    return;
  }
  for (size_t d = 0; d < slot_.size(); ++d)
    if (d >= needed.size() || !needed[d]) forget(static_cast<DocId>(d));
  slot_.resize(needed.size(), kNone);
}

void ShingleSets::release(std::span<const DocId> docs) {
  for (const DocId d : docs) forget(d);
}

std::span<const ShingleHash> ShingleSets::get(DocId doc) const noexcept { return set_in(slot_of(doc)); }

void ShingleSets::get_pairs(std::span<const DocPair> pairs, SetPair* out) const {
  constexpr size_t kSlotAhead = 16, kSetAhead = 8;
  const auto prefetch_slot = [&](DocId doc) {
    if (sparse_) __builtin_prefetch(&table_[sparse_home(doc)]);
    else if (doc < slot_.size()) __builtin_prefetch(&slot_[doc]);
  };
  thread_local std::vector<uint32_t> slots;
  slots.resize(2 * pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i + kSlotAhead < pairs.size()) prefetch_slot(pairs[i + kSlotAhead].a), prefetch_slot(pairs[i + kSlotAhead].b);
    slots[2 * i] = slot_of(pairs[i].a);
    slots[2 * i + 1] = slot_of(pairs[i].b);
  }
  const auto prefetch_set = [&](uint32_t slot) {
    if (slot != kNone) __builtin_prefetch(&sets_[slot]);
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i + kSetAhead < pairs.size()) prefetch_set(slots[2 * (i + kSetAhead)]), prefetch_set(slots[2 * (i + kSetAhead) + 1]);
    out[i] = {set_in(slots[2 * i]), set_in(slots[2 * i + 1])};
  }
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

namespace {

constexpr size_t kScoreChunk = 4096;

// Scores the candidates of each chunk of kScoreChunk (in parallel over the chunks), calling
// use(chunk, i, similarity or a value below floor). Exact scoring first looks up the chunk's sets
// with ShingleSets::get_pairs, all of them before any merge: the lookups of different pairs do
// not wait on each other, so their cache misses overlap, where looked up pair by pair they were
// 10% of a dedup of 1M short texts (CPU 5.16 s against 5.395 on a Zen 3 machine). Out of the
// cache, the exact merge of a pair of sets of 100-2,000 hashes at t = 0.8 then waits on memory for
// most of its time: the start of the pair two ahead is prefetched, 1.1-1.2x (BM_SetCommon).
template <class Use>
void score_chunks(std::span<const DocPair> candidates, const Scorer& scorer, double floor, int threads, Use&& use) {
  constexpr size_t kAhead = 2;
  const size_t chunks = (candidates.size() + kScoreChunk - 1) / kScoreChunk;
  const ShingleSets* sets = scorer.exact_sets();
  internal::parallel_for(chunks, threads, [&](size_t c, size_t) {
    const size_t begin = c * kScoreChunk, end = std::min(candidates.size(), (c + 1) * kScoreChunk);
    if (!sets) {
      for (size_t i = begin; i < end; ++i) use(c, i, scorer.at_least(candidates[i].a, candidates[i].b, floor));
      return;
    }
    thread_local std::vector<ShingleSets::SetPair> pair_sets;
    pair_sets.resize(end - begin);
    sets->get_pairs(candidates.subspan(begin, end - begin), pair_sets.data());
    for (size_t i = begin; i < end; ++i) {
      if (i + kAhead < end) {
        const auto& [x, y] = pair_sets[i + kAhead - begin];
        internal::prefetch_merge_start(x.data(), x.size());
        internal::prefetch_merge_start(y.data(), y.size());
      }
      const auto& [x, y] = pair_sets[i - begin];
      use(c, i, jaccard_at_least(x, y, floor));
    }
  });
}

}  // namespace

std::vector<double> score_pairs(std::span<const DocPair> candidates, const Scorer& scorer, double floor, int threads) {
  std::vector<double> out(candidates.size());
  score_chunks(candidates, scorer, floor, threads, [&](size_t, size_t i, double s) { out[i] = s; });
  return out;
}

std::vector<ScoredPair> verify_pairs(std::span<const DocPair> candidates, const Scorer& scorer, double threshold,
                                     int threads) {
  std::vector<std::vector<ScoredPair>> out((candidates.size() + kScoreChunk - 1) / kScoreChunk);
  score_chunks(candidates, scorer, threshold - kSimilarityEpsilon, threads, [&](size_t c, size_t i, double s) {
    if (s + kSimilarityEpsilon >= threshold) out[c].push_back({candidates[i].a, candidates[i].b, s});
  });
  std::vector<ScoredPair> all;
  for (auto& v : out) all.insert(all.end(), v.begin(), v.end());
  return all;
}

}  // namespace neardup
