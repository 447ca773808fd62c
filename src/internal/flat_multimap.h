// A flat open-addressing multimap from 64-bit hash keys to 32-bit values: linear probing over
// one 16-byte slot per distinct key (load at most 1/2), each slot heading a list of its values
// in one shared array of (value, next) entries. Many copies of one key (a document inserted a
// thousand times) cost O(1) per insert, not a probe run as long as the copies. Keys must already
// be well mixed (band keys are XXH3 outputs); the home slot is taken from the key's high bits by
// a multiply.
//
// It replaces std::unordered_multimap where inserts are hot (the index's pending bands): no node
// allocation per entry, and the slot an insert or lookup will touch can be prefetched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace neardup::internal {

class FlatMultimap {
 public:
  size_t size() const noexcept { return entries_.size(); }

  /// Starts loading the home slot of `key` into the cache (no effect on the contents).
  void prefetch(uint64_t key) const noexcept {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }

  /// Adds (key, value). O(1) expected, also when the key is already present many times.
  void insert(uint64_t key, uint32_t value) {
    if (entries_.size() >= UINT32_MAX - 1) throw std::length_error("FlatMultimap: too many entries");
    if ((keys_ + 1) * 2 > slots_.size()) grow();
    const auto e = static_cast<uint32_t>(entries_.size());
    size_t i = home(key);
    while (slots_[i].head != kNone && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].head == kNone) {
      slots_[i].key = key;
      ++keys_;
    }
    entries_.push_back({value, slots_[i].head});
    slots_[i].head = e;
  }

  /// Calls fn(value) for every entry with this key, newest first.
  template <class Fn>
  void for_each(uint64_t key, Fn&& fn) const {
    if (slots_.empty()) return;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.head == kNone) return;
      if (s.key == key) {
        for (uint32_t e = s.head; e != kNone; e = entries_[e].next) fn(entries_[e].value);
        return;
      }
    }
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // One slot per distinct key, heading a list of its entries (newest first).
  struct Slot {
    uint64_t key;
    uint32_t head;
  };
  struct Entry {
    uint32_t value, next;
  };

  size_t home(uint64_t key) const noexcept { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_); }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t cap = old.empty() ? 64 : old.size() * 2;
    slots_.assign(cap, Slot{0, kNone});
    mask_ = cap - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    for (const Slot& s : old) {
      if (s.head == kNone) continue;
      size_t i = home(s.key);
      while (slots_[i].head != kNone) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::vector<Entry> entries_;
  size_t keys_ = 0, mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace neardup::internal
