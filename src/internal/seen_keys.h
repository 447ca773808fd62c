// A set of 64-bit keys that many threads insert into at once, telling each insert whether the key
// was there already: the first pass's way of knowing, while it sketches, that a document shares an
// LSH bucket with one sketched before it. Sharded by the key's top bits, each shard an
// open-addressing table under its own mutex (contention is rare: a document's band keys spread
// over the shards).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace neardup::internal {

class SeenKeys {
 public:
  /// Starts loading the slot where insert(key) will look first: a document's band keys each
  /// miss the cache (the tables hold millions of keys), and prefetching all of them before
  /// inserting them overlaps the misses. Reads the table without the lock: the slot may have
  /// moved by then (a prefetch of any address is harmless).
  void prefetch(uint64_t key) const noexcept {
    if (key == 0) key = 1;
    const Shard& s = shards_[key >> (64 - kShardBits)];
    const uint64_t* p = s.view.load(std::memory_order_relaxed);
    __builtin_prefetch(p + (static_cast<size_t>(key) & s.view_mask.load(std::memory_order_relaxed)), 1);
  }
  /// Inserts `key`; returns whether it was present. Key 0 is stored as 1 (0 marks free slots):
  /// a collision of two keys is at worst a document whose set is kept needlessly.
  bool insert(uint64_t key) {
    if (key == 0) key = 1;
    Shard& s = shards_[key >> (64 - kShardBits)];
    std::lock_guard<std::mutex> lock(s.mu);
    if ((s.used + 1) * 2 > s.slots.size()) grow(s);
    const size_t mask = s.slots.size() - 1;
    for (size_t i = static_cast<size_t>(key) & mask;; i = (i + 1) & mask) {
      if (s.slots[i] == key) return true;
      if (s.slots[i] == 0) {
        s.slots[i] = key;
        ++s.used;
        return false;
      }
    }
  }

 private:
  static constexpr int kShardBits = 6;
  struct Shard {
    std::mutex mu;
    Shard() { publish(); }
    std::vector<uint64_t> slots = std::vector<uint64_t>(1024, 0);
    size_t used = 0;
    // slots.data() and its mask, for prefetch() (read without the lock); set when slots change.
    std::atomic<const uint64_t*> view{nullptr};
    std::atomic<size_t> view_mask{0};
    void publish() noexcept {
      view.store(slots.data(), std::memory_order_relaxed);
      view_mask.store(slots.size() - 1, std::memory_order_relaxed);
    }
  };
  static void grow(Shard& s) {
    std::vector<uint64_t> old(s.slots.size() * 2, 0);
    old.swap(s.slots);
    const size_t mask = s.slots.size() - 1;
    for (const uint64_t k : old) {
      if (k == 0) continue;
      size_t i = static_cast<size_t>(k) & mask;
      while (s.slots[i] != 0) i = (i + 1) & mask;
      s.slots[i] = k;
    }
    s.publish();
  }
  Shard shards_[size_t{1} << kShardBits];
};

}  // namespace neardup::internal
