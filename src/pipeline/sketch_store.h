// What the pipeline keeps of each document's sketch after the first pass, by method: the band
// keys (minhash and oph with exact verification: 8 bytes per band, enough to find the buckets
// and to tell whether two documents share one), or the signature (estimated verification, which
// compares signatures); the bottom-k fingerprint; the SimHash; and whether it had no shingle.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "internal/big_array.h"
#include "neardup/bottomk.h"
#include "neardup/lsh_index.h"
#include "neardup/types.h"

namespace neardup {

struct SketchStore {
  std::unique_ptr<internal::GrowArray<SigValue>> sigs;   // documents x num_perm, row-major
  std::vector<internal::GrowArray<uint64_t>> band_keys;  // per band, per document (instead of sigs)
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
    fps = Fingerprints{};
    fps.size = sketch_size;
  }

  std::span<const SigValue> signatures() const noexcept { return sigs ? std::span<const SigValue>(*sigs) : std::span<const SigValue>(); }

  /// Whether two documents share a band: equal band keys, or equal rows of a band.
  bool share_band(DocId a, DocId b, size_t k, const LshParams& lsh) const noexcept {
    if (band_keys.empty()) return neardup::share_band(signatures().subspan(a * k, k), signatures().subspan(b * k, k), lsh);
    for (const auto& keys : band_keys)
      if (keys[a] == keys[b]) return true;
    return false;
  }

  uint64_t bytes() const noexcept {
    uint64_t b = empty.size() + simhashes.size() * sizeof(uint64_t);
    if (sigs) b += sigs->size() * sizeof(SigValue);
    for (const auto& keys : band_keys) b += keys.size() * sizeof(uint64_t);
    return b + fps.values.size() * sizeof(SigValue) + (fps.offsets.size() - 1) * sizeof(uint64_t);
  }
};

}  // namespace neardup
