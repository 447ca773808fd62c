// Each bucket verified on the rank that owns it, by the procedure one process uses
// (bucket_verify.h), over the payloads fetched from the ranks that read its documents.
#include "run.h"

namespace neardup::mpi {

Scorer Run::scorer(const Payloads& pl) const {
  if (spec_.verify == VerifyMode::Exact) return Scorer::exact(pl.sets);
  return Scorer::signature_estimate(pl.sigs, static_cast<size_t>(spec_.num_perm));
}

// Buckets are verified a group of candidate components at a time, each group's payloads fetched,
// used and let go before the next: a rank holds the sets of one group, as one process holds
// those of one group of components, and a component is whole in one group, so each document's
// set is fetched once. A group ends once the texts of its distinct documents reach
// kGroupTextBytes (their sets take about as many bytes), so a rank's memory does not grow with
// its share of the candidates; a component larger than that is a group of its own.
std::vector<size_t> Run::group_ends(const Buckets& buckets) {
  const auto& items = buckets.lists;
  constexpr uint64_t kGroupTextBytes = uint64_t{8} << 20;
  std::vector<DocId> members;
  for (const auto& b : items) members.insert(members.end(), b.begin(), b.end());
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  std::vector<std::string> storage;
  auto told = ask_owners(members, [&](std::span<const DocId> want, Packer& p) {
    for (const DocId d : want) p.put(local_.lengths[d - local_.base]);
  }, storage);
  std::vector<uint32_t> length(members.size());
  for (size_t i = 0; i < members.size(); ++i) length[i] = told[static_cast<size_t>(owner_of(bases_, members[i]))].get<uint32_t>();
  std::vector<size_t> ends;
  std::vector<uint32_t> in_group(members.size(), UINT32_MAX);  // the last group that counted a member
  uint64_t bytes = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto g = static_cast<uint32_t>(ends.size());
    for (const DocId d : items[i]) {
      const size_t m = place_in(members, d);
      if (in_group[m] != g) bytes += length[m];
      in_group[m] = g;
    }
    const bool component_ends = i + 1 == items.size() || buckets.component[i + 1] != buckets.component[i];
    if (component_ends && (bytes >= kGroupTextBytes || i + 1 == items.size())) {
      ends.push_back(i + 1);
      bytes = 0;
    }
  }
  return ends;
}

void Run::in_groups(const Buckets& buckets, const std::function<void(std::span<const std::vector<DocId>>, const Payloads&)>& use) {
  const std::span<const std::vector<DocId>> items(buckets.lists);
  const std::vector<size_t> ends = group_ends(buckets);
  const uint64_t rounds = c_.all_reduce(static_cast<uint64_t>(ends.size()), MPI_MAX);
  for (size_t g = 0; g < rounds; ++g) {  // every rank takes part in every round
    const size_t begin = g == 0 || ends.empty() ? 0 : ends[std::min(g, ends.size()) - 1];
    const size_t end = g < ends.size() ? ends[g] : begin;
    const auto group = items.subspan(begin, end - begin);
    std::vector<DocId> docs;
    for (const auto& b : group) docs.insert(docs.end(), b.begin(), b.end());
    const Payloads pl = fetch(std::move(docs), dedup_);
    steps_.agree([&] { use(group, pl); });
    release_free_memory_past_bound();
  }
}

// This rank's buckets (global numbers), verified in the payloads' numbers (pl.index): dedup gets
// the pairs that connect what the buckets connect, pairs every pair with similarity >= t.
// Returns them in global numbers.
std::vector<ScoredPair> Run::verify_buckets(std::span<const std::vector<DocId>> buckets, const Payloads& pl) {
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
  const size_t bands = static_cast<size_t>(spec_.lsh.bands);
  how.share = [&](DocId a, DocId b) {
    if (spec_.verify == VerifyMode::Estimate) {
      const std::span<const SigValue> sigs(pl.sigs);
      return share_band(sigs.subspan(a * k, k), sigs.subspan(b * k, k), spec_.lsh);
    }
    for (size_t band = 0; band < bands; ++band)  // as one process compares them (Pipeline::share_band)
      if (pl.band_keys[a * bands + band] == pl.band_keys[b * bands + band]) return true;
    return false;
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
