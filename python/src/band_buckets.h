// One band's buckets of neardup.datasketch's MinHashLSH (band_store.cpp): an open-addressing
// table with one 16-byte slot per distinct band, each slot the band's hash, the first row that
// had it (whose band bytes stand for the bucket's) and the head of a list of the later rows.
//
// A slot is a band's bytes, not only its hash: a row joins a slot only after its bytes were
// compared with the first row's, and a lookup compares the query's bytes with the first row's
// once per bucket, not once per row in it. Two bands whose 64-bit hashes collide get slots of
// their own in the same probe run. So the answers are those of datasketch's dicts of bytes,
// and a query touches one row's bytes per band it finds (a bucket of one row, the common case
// of a band seen once, needs no list at all).
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "internal/big_array.h"

namespace neardup::python {

class BandBuckets {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  /// Starts loading the home slot of `hash` into the cache.
  void prefetch(uint64_t hash) const noexcept {
    if (slots_.size() != 0) __builtin_prefetch(&slots_[home(hash)]);
  }

  /// The first slot from the home of `hash` on whose hash is `hash`, or kNone at an empty slot.
  /// `after`: the slot a previous call returned, to go on past it (its bytes differed).
  uint32_t find(uint64_t hash, uint32_t after = kNone) const noexcept {
    if (slots_.size() == 0) return kNone;
    for (size_t i = after == kNone ? home(hash) : (after + 1) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].first == kNone) return kNone;
      if (slots_[i].hash == hash) return static_cast<uint32_t>(i);
    }
  }

  /// The first row of a slot find() returned: its bytes are the bucket's.
  uint32_t first(uint32_t slot) const noexcept { return slots_[slot].first; }

  /// Calls fn(row) for every row in a slot: the first, then the later ones, newest first.
  template <class Fn>
  void for_each(uint32_t slot, Fn&& fn) const {
    const Slot& s = slots_[slot];
    fn(s.first);
    for (uint32_t e = s.more; e != kNone; e = more_[e].next) fn(more_[e].row);
  }

  /// Makes room for `more` new bands at once (a batch of known size grows the table once, not
  /// by doubling as it fills).
  void reserve(size_t more) {
    size_t cap = slots_.size() == 0 ? 64 : slots_.size();
    while ((keys_ + more) * 2 > cap) cap *= 2;
    if (cap > slots_.size()) grow_to(cap);
  }

  /// Adds `row` to the bucket of its band (hash `hash`); same(r) says whether row r's band
  /// bytes are the new row's.
  template <class Same>
  void insert(uint64_t hash, uint32_t row, Same&& same) {
    if ((keys_ + 1) * 2 > slots_.size()) grow();
    for (uint32_t slot = find(hash);; slot = find(hash, slot)) {
      if (slot == kNone) break;
      if (!same(slots_[slot].first)) continue;
      if (more_.size() >= kNone - 1) throw std::length_error("BandBuckets: too many rows");
      more_.push_back({row, slots_[slot].more});
      slots_[slot].more = static_cast<uint32_t>(more_.size() - 1);
      return;
    }
    size_t i = home(hash);
    while (slots_[i].first != kNone) i = (i + 1) & mask_;
    slots_[i] = Slot{hash, row, kNone};
    ++keys_;
  }

 private:
  struct Slot {
    uint64_t hash;
    uint32_t first;  // kNone: an empty slot
    uint32_t more;   // the later rows' list in more_, newest first
  };
  struct Entry {
    uint32_t row, next;
  };

  // The home slot from the hash's high bits, after a multiply: the hashes of bands of small
  // values are not assumed to be mixed in every bit.
  size_t home(uint64_t hash) const noexcept { return static_cast<size_t>((hash * 0x9E3779B97F4A7C15ULL) >> shift_); }

  void grow() { grow_to(slots_.size() == 0 ? 64 : slots_.size() * 2); }

  // To `cap` slots, a power of two, every taken slot placed again.
  void grow_to(size_t cap) {
    internal::BigArray<Slot> old = std::move(slots_);
    slots_ = internal::BigArray<Slot>(cap);
    std::fill(slots_.begin(), slots_.end(), Slot{0, kNone, kNone});
    mask_ = cap - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    for (const Slot& s : old) {
      if (s.first == kNone) continue;
      size_t i = home(s.hash);
      while (slots_[i].first != kNone) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  // On huge pages from 2 MiB on (big_array.h): a lookup per band in tables of megabytes would
  // otherwise miss the TLB as well as the cache.
  internal::BigArray<Slot> slots_;
  internal::GrowArray<Entry> more_;
  size_t keys_ = 0, mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace neardup::python
