// Dropping the entries whose key no other entry has, before a sort that looks for equal keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "internal/big_array.h"
#include "internal/radix_sort.h"

namespace neardup::internal {

/// Which of m keys (hashes: their top bits are spread) may occur twice: a key's top bits pick a
/// bit of a table `seen` (set at its first sight) and of `twice` (set at a later one); a key whose
/// `twice` bit stays clear is one no other key has. The tables have 8 to 16 bits per key (at most
/// 2^27), so an unrelated key shares a unique one's bit for about 1 key in 8 to 16; a key that
/// does occur twice always may_repeat. The two tables are interleaved, a word of each side by
/// side, so that adding a key touches one cache line: with a million keys or more they outgrow
/// the caches, and the misses are what the counting costs. `words` is scratch, reused by a
/// caller that starts again.
struct RepeatedKeyBits {
  /// start() for about m keys with tables of at most 2^max_bits bits each, add() each key, and
  /// may_repeat() once all are added.
  void start(size_t m, int max_bits, std::vector<uint64_t>& words) {
    int bits = 16;
    while (bits < max_bits && (size_t{1} << bits) < m * 8) ++bits;
    words.assign((size_t{1} << bits) / 32, 0);
    shift = 64 - bits;
    table = words.data();
  }
  void add(uint64_t key) noexcept {
    uint64_t* w = word_of(key);
    const uint64_t bit = uint64_t{1} << (key >> shift & 63);
    w[1] |= w[0] & bit;
    w[0] |= bit;
  }
  bool may_repeat(uint64_t key) const noexcept { return word_of(key)[1] >> (key >> shift & 63) & 1; }
  /// Asks for the key's words ahead of add() or may_repeat().
  void prefetch(uint64_t key) const noexcept { __builtin_prefetch(word_of(key), 1); }

 private:
  uint64_t* word_of(uint64_t key) const noexcept { return table + 2 * (key >> shift >> 6); }
  int shift = 64;
  uint64_t* table = nullptr;  // words: per 64 slots, the `seen` word, then the `twice` word
};

/// Calls fn(key, item) for each (key, item) that each() gives, kAhead keys after asking for the
/// key's words (RepeatedKeyBits::prefetch), so that the misses of a table larger than the caches
/// overlap instead of following each other. Returns how many keys each() gave.
template <class Item, class Each, class Fn>
size_t each_key_ahead(Each& each, const RepeatedKeyBits& bits, Fn&& fn) {
  constexpr size_t kAhead = 16;
  uint64_t keys[kAhead];
  Item items[kAhead] = {};
  size_t k = 0;
  each([&](uint64_t key, const Item& item) {
    bits.prefetch(key);
    if (k >= kAhead) fn(keys[k % kAhead], items[k % kAhead]);
    keys[k % kAhead] = key;
    items[k++ % kAhead] = item;
  });
  for (size_t i = k > kAhead ? k - kAhead : 0; i < k; ++i) fn(keys[i % kAhead], items[i % kAhead]);
  return k;
}

/// For keys cheap to produce twice (stored, read again from disk, hashed again): each(fn) calls
/// fn(key, item) for every key, in the same order each time; the first time counts the keys
/// (RepeatedKeyBits, tables of at most 2^max_bits bits for about m keys), the second calls
/// keep(key, item) for those that may repeat, in order, so that the entries of unique keys are
/// never written. Returns how many keys each() gave.
template <class Item, class Each, class Keep>
size_t for_each_repeated_key(size_t m, int max_bits, Each&& each, Keep&& keep, std::vector<uint64_t>& words) {
  RepeatedKeyBits bits;
  bits.start(m, max_bits, words);
  const size_t all = each_key_ahead<Item>(each, bits, [&](uint64_t key, const Item&) { bits.add(key); });
  each_key_ahead<Item>(each, bits, [&](uint64_t key, const Item& item) {
    if (bits.may_repeat(key)) keep(key, item);
  });
  return all;
}

/// Keeps, in order, only the entries of e[0, m) whose key (key_of(entry)) may occur twice
/// (RepeatedKeyBits). Where most keys are unique (the band keys of a copy-free corpus, record
/// ids), the sort that finds equal keys then orders the few that remain instead of every entry.
/// Returns how many remain.
template <class T, class KeyOf>
size_t keep_repeated_keys(T* e, size_t m, KeyOf&& key_of, std::vector<uint64_t>& words) {
  size_t kept = 0;  // at most i when e[i] is kept, i below the entries read since: they move down in place
  for_each_repeated_key<size_t>(
      m, 27, [&](auto&& fn) { for (size_t i = 0; i < m; ++i) fn(key_of(e[i]), i); }, [&](uint64_t, size_t i) { e[kept++] = e[i]; }, words);
  return kept;
}

/// keep_repeated_keys for a few thousand entries, whose bit tables (2^16 bits each for up to
/// 8,192 entries: 16 KiB in all) stay in the cache: no prefetching, and no branch on what is
/// kept. Keys whose top bits are all equal (one part of a sort by them) are given shifted past
/// those bits, so that the tables' slots come from the bits that differ.
template <class T, class KeyOf>
size_t keep_repeated_keys_in_cache(T* e, size_t m, KeyOf&& key_of, std::vector<uint64_t>& words) {
  RepeatedKeyBits bits;
  bits.start(m, 20, words);
  for (size_t i = 0; i < m; ++i) bits.add(key_of(e[i]));
  size_t kept = 0;
  for (size_t i = 0; i < m; ++i) {
    const T x = e[i];
    e[kept] = x;
    kept += bits.may_repeat(key_of(x));
  }
  return kept;
}

/// The entries of e[0, m) whose key may repeat (keep_repeated_keys), sorted by key, entries with
/// one key in their order before: e[0, returned) holds them. Equal keys found this way take O(m)
/// time and, for the sort, a copy of the entries that remain (mapped, let go at once: a vector
/// would leave glibc's heap larger for the rest of the run). The keys being hashes, the sort is
/// of their top halves (radix_sort_hashes): 1 million short documents' text hashes that may
/// repeat (325,000) in 2 passes instead of 4.
template <class T, class KeyOf>
size_t sort_repeated_keys(T* e, size_t m, KeyOf&& key_of) {
  std::vector<uint64_t> words;
  m = keep_repeated_keys(e, m, key_of, words);
  std::vector<uint64_t>().swap(words);
  BigArray<T> tmp(m);
  radix_sort_hashes(e, tmp.data(), m, key_of, [](size_t, size_t) {}, m >= 200000 ? 16 : 11);
  return m;
}

}  // namespace neardup::internal
