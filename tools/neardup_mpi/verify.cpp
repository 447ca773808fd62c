// Each bucket verified on the rank that owns it, by the procedure one process uses
// (bucket_verify.h), over the payloads fetched from the ranks that read its documents.
#include "run.h"
#include "internal/free_heap.h"

namespace neardup::mpi {

// NEARDUP_MPI_TEST_SMALL_GROUPS=1 (tests/mpi/run.sh): groups of 4 KB of text and batches of 64
// documents, so that a small corpus takes the paths of many groups and batches.
static bool small_groups_for_tests() {
  static const bool small = [] {
    const char* v = std::getenv("NEARDUP_MPI_TEST_SMALL_GROUPS");
    return v && std::strcmp(v, "1") == 0;
  }();
  return small;
}

Scorer Run::scorer(const Payloads& pl) const {
  if (spec_.verify == VerifyMode::Exact) return Scorer::exact(pl.sets);
  return Scorer::signature_estimate(pl.sigs, static_cast<size_t>(spec_.num_perm));
}

// Buckets are verified a group of candidate components at a time, each group's payloads fetched,
// used and let go before the next: a rank holds the sets of one group, as one process holds
// those of one group of components, and a component is whole in one group, so each document's
// set is fetched once. A group ends once its components' texts (Buckets::text) reach
// kGroupTextBytes (their sets take about as many bytes), so a rank's memory does not grow with
// its share of the candidates; a component larger than that is a group of its own.
std::vector<size_t> Run::group_ends(const Buckets& buckets) {
  const auto& items = buckets.lists;
  const uint64_t kGroupTextBytes = small_groups_for_tests() ? 4096 : uint64_t{8} << 20;
  std::vector<size_t> ends;
  uint64_t bytes = 0;
  size_t c = 0;  // the component of list i (buckets.text's order)
  for (size_t i = 0; i < items.size(); ++i) {
    if (i == 0 || buckets.component[i] != buckets.component[i - 1]) bytes += buckets.text[c++];
    const bool component_ends = i + 1 == items.size() || buckets.component[i + 1] != buckets.component[i];
    if (component_ends && (bytes >= kGroupTextBytes || i + 1 == items.size())) {
      ends.push_back(i + 1);
      bytes = 0;
    }
  }
  return ends;
}

// The groups are fetched a batch at a time: one exchange brings what the owners send of the
// batch's documents. Where no set travels (each is read by the rank that verifies it, or
// verification compares signatures), what comes is small (band keys or a signature, an id), so a
// batch takes groups up to kBatchDocs documents, and its groups are verified one after the other
// without waiting on the other ranks: a rank whose groups hold more text in one place than
// another's does not hold the others back at every group, only at the end of a batch. Where sets
// travel, a batch is one group, so that a rank holds the sets of one group at a time.
void Run::in_groups(const Buckets& buckets, const std::function<void(std::span<const std::vector<DocId>>, const Payloads&)>& use) {
  const size_t kBatchDocs = small_groups_for_tests() ? 64 : size_t{1} << 17;
  const std::span<const std::vector<DocId>> items(buckets.lists);
  const std::vector<size_t> ends = group_ends(buckets);
  const auto group_begin = [&](size_t g) { return g == 0 ? 0 : ends[g - 1]; };
  const bool sets_travel = spec_.verify == VerifyMode::Exact && c_.all_reduce(every_set_at_position() ? 1 : 0, MPI_MIN) == 0;
  std::vector<size_t> batch_ends;  // in groups
  size_t members = 0;              // of the batch's buckets, a document counted in each
  for (size_t g = 0; g < ends.size(); ++g) {
    for (size_t b = group_begin(g); b < ends[g]; ++b) members += items[b].size();
    if (sets_travel || members >= kBatchDocs || g + 1 == ends.size()) {
      batch_ends.push_back(g + 1);
      members = 0;
    }
  }
  const auto docs_of = [&](size_t from, size_t to) {  // of buckets [from, to), sorted and distinct
    std::vector<DocId> docs;
    for (size_t b = from; b < to; ++b) docs.insert(docs.end(), items[b].begin(), items[b].end());
    std::sort(docs.begin(), docs.end());
    docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
    return docs;
  };
  const uint64_t rounds = c_.all_reduce(static_cast<uint64_t>(batch_ends.size()), MPI_MAX);
  for (size_t r = 0; r < rounds; ++r) {  // every rank takes part in every round
    const size_t first = r == 0 || batch_ends.empty() ? 0 : batch_ends[std::min(r, batch_ends.size()) - 1];
    const size_t last = r < batch_ends.size() ? batch_ends[r] : first;  // groups [first, last)
    const size_t from = first < last ? group_begin(first) : 0, to = first < last ? ends[last - 1] : 0;
    Payloads batch = fetch(docs_of(from, to), dedup_);
    if (r + 1 == rounds) {  // no rank asks for this rank's band keys or signatures again
      local_.sketches.band_keys.clear();
      local_.sketches.sigs.reset();
      local_.key_columns.clear();
      local_.sketches.spilled.reset();
    } else if (local_.sketches.spilled) {  // the pages of spilled keys read for the payloads
      local_.sketches.spilled->drop_pages();
    }
    steps_.agree([&] {
      for (size_t g = first; g < last; ++g) {
        {
          Payloads pl = last - first == 1 ? std::move(batch) : batch.subset(docs_of(group_begin(g), ends[g]));
          read_sets_at(pl);
          use(items.subspan(group_begin(g), ends[g] - group_begin(g)), pl);
        }  // the group's sets let go before the heap is trimmed
        internal::release_free_memory_past(internal::kMaxFreeHeapBytes);
      }
    });
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
