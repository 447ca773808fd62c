// What the pipeline keeps of each document's sketch after the first pass, by method: the band
// keys (minhash and oph with exact verification: 8 bytes per band, enough to find the buckets
// and to tell whether two documents share one), or the signature (estimated verification, which
// compares signatures); the bottom-k fingerprint; the SimHash; and whether it had no shingle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "internal/big_array.h"
#include "internal/radix_sort.h"
#include "internal/spilled_columns.h"
#include "neardup/bottomk.h"
#include "neardup/lsh_index.h"
#include "neardup/types.h"

namespace neardup {

struct SketchStore {
  std::unique_ptr<internal::GrowArray<SigValue>> sigs;   // documents x num_perm, row-major
  std::vector<internal::GrowArray<uint64_t>> band_keys;  // per band, per document (instead of sigs)
  // The band keys on disk instead (RunTuning::spill_band_keys), a column per band; after the
  // search, the keys of the documents in buckets (keyed_docs, ascending; keyed: a row per
  // document of its keys' ranks among theirs, band by band: 4 bytes, and equal where the keys
  // are), which share_band reads: a document in no bucket shares no band.
  std::unique_ptr<internal::SpilledColumns> spilled;
  bool keys_spilled = false;
  std::vector<DocId> keyed_docs;
  std::vector<uint32_t> keyed;
  Fingerprints fps;
  std::vector<uint64_t> simhashes;
  // 1: no shingle (never paired); kCopy: a copy of an earlier document's text, verified through
  // that one (RunTuning::collapse_copies). Either keeps the document out of the LSH buckets.
  static constexpr uint8_t kCopy = 2;
  std::vector<uint8_t> empty;

  /// Ready for a first pass that keeps `bands` band keys per document (0: signatures).
  void reset(size_t bands, int sketch_size) {
    sigs = std::make_unique<internal::GrowArray<SigValue>>();
    band_keys.clear();
    band_keys.resize(bands);
    spilled.reset();
    keys_spilled = false;
    keyed_docs.clear();
    keyed.clear();
    fps = Fingerprints{};
    fps.size = sketch_size;
  }

  std::span<const SigValue> signatures() const noexcept { return sigs ? std::span<const SigValue>(*sigs) : std::span<const SigValue>(); }

  /// Whether two documents share a band: equal band keys, or equal rows of a band.
  bool share_band(DocId a, DocId b, size_t k, const LshParams& lsh) const noexcept {
    if (band_keys.empty()) return neardup::share_band(signatures().subspan(a * k, k), signatures().subspan(b * k, k), lsh);
    if (keys_spilled) {
      const size_t bands = band_keys.size();
      const auto row = [&](DocId d) -> const uint32_t* {
        const auto it = std::lower_bound(keyed_docs.begin(), keyed_docs.end(), d);
        return it != keyed_docs.end() && *it == d ? keyed.data() + static_cast<size_t>(it - keyed_docs.begin()) * bands : nullptr;
      };
      const uint32_t *x = row(a), *y = row(b);
      if (!x || !y) return false;
      for (size_t band = 0; band < bands; ++band)
        if (x[band] == y[band]) return true;
      return false;
    }
    for (const auto& keys : band_keys)
      if (keys[a] == keys[b]) return true;
    return false;
  }

  /// With the band keys spilled: reads back the keys of `docs` (ascending, distinct) for
  /// share_band, each band's file read only in the chunks that hold one of them, and keeps their
  /// ranks (a band's keys sorted: 8 bytes of keys become 4 for the documents in buckets, half of
  /// a crowded corpus).
  void load_keys_of(std::span<const DocId> docs) {
    const size_t bands = band_keys.size();
    keyed_docs.assign(docs.begin(), docs.end());
    keyed.assign(docs.size() * bands, 0);
    constexpr size_t kChunk = 8192;
    std::vector<uint64_t> chunk(kChunk);
    struct Keyed {
      uint64_t key;
      uint64_t at;  // in docs
    };
    std::vector<Keyed> band(docs.size()), tmp(docs.size());
    for (size_t b = 0; b < bands; ++b) {
      uint64_t begin = UINT64_MAX;
      for (size_t i = 0; i < docs.size(); ++i) {
        if (begin == UINT64_MAX || docs[i] >= begin + kChunk) {
          begin = docs[i] / kChunk * kChunk;
          spilled->read(b, begin, static_cast<size_t>(std::min<uint64_t>(kChunk, spilled->rows() - begin)), chunk.data());
        }
        band[i] = {chunk[docs[i] - begin], i};
      }
      // By the keys' top 32 bits (two passes, not four: keys are hashes), then the rare run of
      // several keys with those bits by whole keys.
      internal::radix_sort_by_bits(band.data(), tmp.data(), band.size(), 32, 64, [](const Keyed& k) { return k.key; }, 16);
      for (size_t i = 0; i < band.size();) {
        size_t j = i + 1;
        bool mixed = false;
        for (; j < band.size() && (band[j].key >> 32) == (band[i].key >> 32); ++j) mixed |= band[j].key != band[i].key;
        if (mixed) std::sort(band.begin() + static_cast<ptrdiff_t>(i), band.begin() + static_cast<ptrdiff_t>(j), [](const Keyed& x, const Keyed& y) { return x.key < y.key; });
        i = j;
      }
      uint32_t rank = 0;
      for (size_t i = 0; i < band.size(); ++i) {
        if (i > 0 && band[i].key != band[i - 1].key) ++rank;
        keyed[band[i].at * bands + b] = rank;
      }
    }
  }

  uint64_t bytes() const noexcept {
    uint64_t b = empty.size() + simhashes.size() * sizeof(uint64_t);
    if (sigs) b += sigs->size() * sizeof(SigValue);
    for (const auto& keys : band_keys) b += keys.size() * sizeof(uint64_t);
    b += keyed_docs.size() * sizeof(DocId) + keyed.size() * sizeof(uint32_t);
    return b + fps.values.size() * sizeof(SigValue) + (fps.offsets.size() - 1) * sizeof(uint64_t);
  }
};

}  // namespace neardup
