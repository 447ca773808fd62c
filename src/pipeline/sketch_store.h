// What the pipeline keeps of each document's sketch after the first pass, by method: the band
// keys (minhash and oph with exact verification: 8 bytes per band, enough to find the buckets
// and to tell whether two documents share one; or their top 4 bytes, in a run of few and short
// enough documents that keys shared by chance stay few and cheap:
// RunTuning::narrow_band_keys_up_to), or the signature (estimated verification, which compares
// signatures); the bottom-k fingerprint; the SimHash; and whether it had no shingle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "internal/big_array.h"
#include "internal/spilled_columns.h"
#include "neardup/bottomk.h"
#include "neardup/lsh_index.h"
#include "neardup/types.h"
#include "neardup/union_find.h"

namespace neardup {

struct SketchStore {
  std::unique_ptr<internal::GrowArray<SigValue>> sigs;   // documents x num_perm, row-major
  std::vector<internal::GrowArray<uint64_t>> band_keys;  // per band, per document (instead of sigs)
  // Or the top half of each key (reset(bands, ..., true)), where band_keys is empty. Of n
  // documents, about 21 n^2 / 2^33 pairs share such a key in some band of 21 by chance alone:
  // 2,400 at a million (which exact verification rejects), half the memory of the full keys.
  std::vector<internal::GrowArray<uint32_t>> narrow_keys;
  // The band keys on disk instead (RunTuning::spill_band_keys), a column per band, let go after
  // the search; or, in a dedup, let go from memory after it (drop_keys). Two documents share a
  // band key exactly when some band's bucket holds both, so share_band then reads the buckets
  // instead (index_buckets; by_buckets set): for each document in one (in_docs, ascending), the
  // buckets that hold it (bucket_of[bucket_at[i], bucket_at[i + 1]), ascending): 4 bytes per
  // bucket member, where the keys took 4 or 8 per band of every document. A dedup verified in
  // groups with its keys spilled indexes each group's buckets in turn (index_group,
  // index_per_group).
  std::unique_ptr<internal::SpilledColumns> spilled;
  bool by_buckets = false;
  bool index_due = false;  // by_buckets, the buckets not yet indexed (index_buckets)
  bool index_per_group = false;
  std::vector<DocId> in_docs;
  std::vector<uint32_t> bucket_at, bucket_of;
  Fingerprints fps;
  std::vector<uint64_t> simhashes;
  // 1: no shingle (never paired); kCopy: a copy of an earlier document's text, verified through
  // that one (RunTuning::collapse_copies). Either keeps the document out of the LSH buckets.
  static constexpr uint8_t kCopy = 2;
  std::vector<uint8_t> empty;

  /// Ready for a first pass that keeps `bands` band keys per document (0: signatures), their
  /// top halves only if `narrow`, of about `expected` documents (0: not known).
  void reset(size_t bands, int sketch_size, bool narrow = false, size_t expected = 0) {
    sigs = std::make_unique<internal::GrowArray<SigValue>>();
    band_keys.clear();
    narrow_keys.clear();
    for (size_t b = 0; b < bands; ++b)
      if (narrow)
        narrow_keys.emplace_back(internal::Access::Sequential).expect(expected);
      else
        band_keys.emplace_back(internal::Access::Sequential).expect(expected);
    staged_.clear();
    spilled.reset();
    by_buckets = false;
    index_due = false;
    index_per_group = false;
    in_docs.clear();
    bucket_at.clear();
    bucket_of.clear();
    fps = Fingerprints{};
    fps.size = sketch_size;
  }

  /// Before the first pass (after reset, with full keys): the band keys go to files in `dir`
  /// instead of memory, a column per band. IoError naming `dir` if they cannot be made.
  void spill_keys_to(const std::string& dir) {
    spilled = std::make_unique<internal::SpilledColumns>(dir, band_keys.size());
    by_buckets = true;
  }
  /// Appends a document's band keys (one per band), to memory or to the spilled columns, once
  /// kStagedDocs documents' keys are staged or finish_keys() is called.
  void push_keys(const uint64_t* keys) {
    staged_.insert(staged_.end(), keys, keys + kept_bands());
    if (staged_.size() == kStagedDocs * kept_bands()) flush_keys();
  }
  /// After the last push_keys, before the keys are read.
  void finish_keys() { flush_keys(); }

  std::span<const SigValue> signatures() const noexcept { return sigs ? std::span<const SigValue>(*sigs) : std::span<const SigValue>(); }
  /// Whether band keys are kept (full or narrow), rather than signatures.
  bool has_keys() const noexcept { return !band_keys.empty() || !narrow_keys.empty(); }

  /// Whether two documents share a band: equal band keys, or equal rows of a band.
  bool share_band(DocId a, DocId b, size_t k, const LshParams& lsh) const noexcept {
    if (by_buckets) {
      const auto buckets = [&](DocId d) -> std::span<const uint32_t> {
        const size_t i = place_in(in_docs, d);
        if (i == in_docs.size() || in_docs[i] != d) return {};
        return std::span<const uint32_t>(bucket_of).subspan(bucket_at[i], bucket_at[i + 1] - bucket_at[i]);
      };
      const auto x = buckets(a), y = buckets(b);
      for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
        if (x[i] == y[j]) return true;
        x[i] < y[j] ? ++i : ++j;
      }
      return false;
    }
    if (!has_keys()) return neardup::share_band(signatures().subspan(a * k, k), signatures().subspan(b * k, k), lsh);
    for (const auto& keys : narrow_keys)
      if (keys[a] == keys[b]) return true;
    for (const auto& keys : band_keys)
      if (keys[a] == keys[b]) return true;
    return false;
  }

  /// The band keys per document while they are held in memory (share_band compares them), else 0.
  size_t bands_held() const noexcept { return by_buckets ? 0 : kept_bands(); }
  /// The band keys of `docs` as rows of bands_held() keys (a narrow key widened), row-major in
  /// `rows`: what share_band compares, a band at a time.
  void band_rows(std::span<const DocId> docs, std::span<uint64_t> rows) const noexcept {
    const size_t bands = bands_held();
    for (size_t b = 0; b < narrow_keys.size(); ++b)
      for (size_t i = 0; i < docs.size(); ++i) rows[i * bands + b] = narrow_keys[b][docs[i]];
    for (size_t b = 0; b < band_keys.size(); ++b)
      for (size_t i = 0; i < docs.size(); ++i) rows[i * bands + b] = band_keys[b][docs[i]];
  }

  /// After the LSH search: the band keys held in memory are let go, and share_band reads the
  /// buckets instead, once they are indexed (index_due). A dedup does so: from here on it asks
  /// share_band only of the pairs of a join's large buckets, and the keys (84 MB for a million
  /// documents with narrow keys) are the largest array it holds, freed for verification to
  /// reuse: 1 million short documents in clusters, peak 187 against 264 MiB (ABBA,
  /// BENCHMARKS.md). Pairs mode keeps them: its joins ask share_band of every candidate.
  void drop_keys() {
    std::vector<internal::GrowArray<uint32_t>>().swap(narrow_keys);
    std::vector<internal::GrowArray<uint64_t>>().swap(band_keys);
    by_buckets = true;
    index_due = true;
  }

  /// With the band keys spilled or dropped: indexes the LSH buckets (each distinct list of
  /// documents that share a band key) by document, for share_band. Buckets of n documents; the
  /// stars from an original to the copies of its text among them (Pipeline's add_copy_buckets)
  /// change no answer, share_band asking of a copy's original.
  void index_buckets(const LshBuckets& buckets, size_t n) {
    index_due = false;
    std::vector<uint32_t> place(n, 0);  // a document's place in in_docs
    for (const DocId d : buckets.members) place[d] = 1;
    in_docs.clear();
    for (DocId d = 0; d < n; ++d)
      if (place[d]) {
        place[d] = static_cast<uint32_t>(in_docs.size());
        in_docs.push_back(d);
      }
    index_members(buckets, [&](DocId d) { return place[d]; });
  }
  /// The same for the buckets of one verification group, whose documents (ascending, each in a
  /// bucket) are `docs`: a group's components hold every bucket of their documents, so share_band
  /// answers for any two of them, and the index takes the group's memory, not the run's.
  void index_group(const LshBuckets& group, std::span<const DocId> docs) {
    in_docs.assign(docs.begin(), docs.end());
    index_members(group, [&](DocId d) { return place_in(in_docs, d); });
  }

 private:
  // Keys come a document at a time and are kept band by band. Written so, each document's keys
  // would go to 21 arrays at once, more write streams than the hardware prefetchers follow: each
  // new cache line of each array waits for memory, which took a third of the first pass's
  // reading thread on a million short documents. Staged, each band's keys are written as a run.
  static constexpr size_t kStagedDocs = 256;
  std::vector<uint64_t> staged_;  // documents x bands, row-major
  size_t kept_bands() const noexcept { return std::max(narrow_keys.size(), band_keys.size()); }
  void flush_keys() {
    if (staged_.empty()) return;
    const size_t bands = kept_bands(), docs = staged_.size() / bands;
    // Band `band`'s staged keys as Key (a narrow key: the top half) appended to `to`.
    const auto append_column = [&]<class Key>(internal::GrowArray<Key>& to, size_t band) {
      Key column[kStagedDocs];
      for (size_t i = 0; i < docs; ++i) column[i] = static_cast<Key>(staged_[i * bands + band] >> (64 - 8 * sizeof(Key)));
      to.append(column, docs);
    };
    for (size_t band = 0; band < bands; ++band)
      if (!narrow_keys.empty())
        append_column(narrow_keys[band], band);
      else if (spilled)
        for (size_t i = 0; i < docs; ++i) spilled->push(band, staged_[i * bands + band]);
      else
        append_column(band_keys[band], band);
    staged_.clear();
  }

  // bucket_at and bucket_of for in_docs (ascending: every document of the buckets), place(d)
  // being d's place in in_docs.
  template <class Place>
  void index_members(const LshBuckets& buckets, Place&& place) {
    bucket_at.assign(in_docs.size() + 1, 0);
    for (const DocId d : buckets.members) ++bucket_at[place(d) + 1];
    for (size_t i = 0; i < in_docs.size(); ++i) bucket_at[i + 1] += bucket_at[i];
    bucket_of.assign(bucket_at.back(), 0);
    std::vector<uint32_t> next(bucket_at.begin(), bucket_at.end() - 1);
    for (size_t i = 0; i < buckets.size(); ++i)  // in order of bucket: each document's ascending
      for (const DocId d : buckets[i]) bucket_of[next[place(d)]++] = static_cast<uint32_t>(i);
  }

 public:
  uint64_t bytes() const noexcept {
    uint64_t b = empty.size() + simhashes.size() * sizeof(uint64_t);
    if (sigs) b += sigs->size() * sizeof(SigValue);
    for (const auto& keys : band_keys) b += keys.size() * sizeof(uint64_t);
    for (const auto& keys : narrow_keys) b += keys.size() * sizeof(uint32_t);
    b += in_docs.size() * sizeof(DocId) + (bucket_at.size() + bucket_of.size()) * sizeof(uint32_t);
    return b + fps.values.size() * sizeof(SigValue) + (fps.offsets.size() - 1) * sizeof(uint64_t);
  }
};

}  // namespace neardup
