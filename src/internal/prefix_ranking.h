// The global order of the prefix filter, shared by its two joins: AllPairs over bottom-k
// fingerprints (allpairs.cpp, 32-bit values) and the exact join over shingle sets (setjoin.cpp,
// 64-bit values).
//
// The prefix filter (Chaudhuri, Ganti, Kaushik, ICDE 2006; Bayardo, Ma, Srikant, WWW 2007) orders
// every value rarest first: a pair with enough overlap shares a value among the first few of
// either set, and rare values there make short candidate lists. A value found in one set only
// (most of them) can never give a candidate, so only the shared values get ranks: each set keeps
// its count of unshared values, which come first in the order, and the ranks of its shared
// values, ascending. Ranks go by document frequency, then by value.
//
// How: every (value, set) entry goes to a bucket by the value's top bits, in set order, a slice
// of the buckets at a time; each bucket, small enough for the cache, is sorted by value (sets
// stay ascending within a value) and its runs of one value are listed, with their sets, while it
// is there; a counting sort by frequency numbers the runs; each set's ranks are then appended in
// rank order, so every list comes out sorted.
#pragma once

#include <algorithm>
#include <bit>
#include <functional>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "internal/big_array.h"
#include "internal/bucket_sort.h"
#include "internal/parallel.h"
#include "internal/radix_sort.h"
#include "neardup/error.h"

namespace neardup::internal {

struct SharedRanks {
  std::vector<uint32_t> len;       // per set: its values
  std::vector<uint32_t> unshared;  // per set: values no other set holds
  std::vector<uint64_t> offsets;   // set d's ranks are ranks[offsets[d], offsets[d + 1])
  BigArray<uint32_t> ranks;
  size_t num_ranks = 0;
  std::span<const uint32_t> operator[](size_t d) const noexcept {
    return {ranks.data() + offsets[d], static_cast<size_t>(offsets[d + 1] - offsets[d])};
  }
};

namespace ranking_detail {

// The (value, set) entries of each kind of value, and how a bucket of them is sorted. Each is
// used as an object (the packed one carries its width).
template <class Value>
struct Entries;

// 32-bit values: (value << 32 | set) in one 64-bit key, a bucket sorted by one stable radix sort
// of the value's bits below the bucket's.
template <>
struct Entries<uint32_t> {
  using Entry = uint64_t;
  static Entry make(uint32_t v, size_t set) noexcept { return (uint64_t{v} << 32) | set; }
  static uint64_t value(Entry e) noexcept { return e >> 32; }
  static size_t set(Entry e) noexcept { return static_cast<uint32_t>(e); }
  static void sort(Entry* e, size_t len, int msd_bits, std::vector<Entry>& scratch) {
    if (len < 2) return;
    if (scratch.size() < len) scratch.resize(len);
    radix_sort_u64_bits(e, scratch.data(), len, 32, 64 - msd_bits);
  }
};

// A bucket of entries whose key_of(entry) holds the value in its bits below hi (the bits above
// being the bucket's), ordered by (value, set): a stable LSD radix sort of the 33 bits below hi
// (the entries come in set order), then the rare runs equal in those bits but not in the whole
// value sorted by `less`; small buckets by comparison.
template <class Entry, class KeyOf, class Less>
void sort_bucket(Entry* e, size_t len, int hi, std::vector<Entry>& scratch, KeyOf key_of, Less less) {
  if (len < 2) return;
  if (len < 256) {
    std::sort(e, e + len, less);
    return;
  }
  if (scratch.size() < len) scratch.resize(len);
  const int lo = std::max(0, hi - 33);
  radix_sort_by_bits(e, scratch.data(), len, lo, hi, key_of, 11);
  if (lo == 0) return;
  for (size_t i = 0; i < len;) {
    size_t j = i + 1;
    bool mixed = false;
    while (j < len && (key_of(e[j]) >> lo) == (key_of(e[i]) >> lo)) {
      mixed |= key_of(e[j]) != key_of(e[i]);
      ++j;
    }
    if (mixed) std::sort(e + i, e + j, less);
    i = j;
  }
}

// 64-bit values: 16 bytes per entry.
template <>
struct Entries<uint64_t> {
  struct Entry {
    uint64_t value;
    uint64_t set;
  };
  static Entry make(uint64_t v, size_t set) noexcept { return {v, set}; }
  static uint64_t value(const Entry& e) noexcept { return e.value; }
  static size_t set(const Entry& e) noexcept { return e.set; }
  static void sort(Entry* e, size_t len, int msd_bits, std::vector<Entry>& scratch) {
    sort_bucket(e, len, 64 - msd_bits, scratch, [](const Entry& x) { return x.value; },
                [](const Entry& x, const Entry& y) { return x.value != y.value ? x.value < y.value : x.set < y.set; });
  }
};

// 64-bit values of at most 2^msd_bits sets, each entry in 8 bytes: the value's bits below the
// bucket's (its top msd_bits are the bucket's), then the set, in one key, whose order within a
// bucket is that of (value, set). Half the memory of the 16-byte entries, which a join of dense
// boilerplate writes for every shingle of every member into pages touched for the first time
// (31,000 licence files: 41.8 M shingles over 18 joins).
struct PackedEntries {
  using Entry = uint64_t;
  int set_bits;  // the bucket's bits: msd_bits
  Entry make(uint64_t v, size_t set) const noexcept { return (v << set_bits) | set; }
  uint64_t value(Entry e) const noexcept { return e >> set_bits; }  // within one bucket
  size_t set(Entry e) const noexcept { return static_cast<size_t>(e & ((uint64_t{1} << set_bits) - 1)); }
  // One pass by the top bits and insertion (bucket_sort_top_bits), not three LSD passes of 11
  // bits, each counting and summing 2,048 digits for a bucket of a few hundred entries, nor
  // std::sort, which branches on every comparison: BM_RankSharedValues (20,000 sets in 40
  // families) 499-619 ms against 831-845 ms, and on the dense licence mix's `pairs` 2.2% of the
  // CPU samples against 4.3-4.7% (BENCHMARKS.md).
  void sort(Entry* e, size_t len, int, std::vector<Entry>& scratch) const { bucket_sort_top_bits(e, len, scratch); }
};

// A value that two or more sets hold: its sets are run_sets[start, start + len), ascending.
struct Run {
  uint64_t start;
  uint64_t len;
};

// The entries of every set counted by bucket (the top msd_bits of the value), by parts of the
// sets: at[p][b] = where part p's entries of bucket b start among all entries, bucket by bucket
// and part by part within a bucket, so that sets stay ascending within a bucket. start[b]:
// where bucket b starts (start[buckets] = all entries). values[d]: set d's values, looked up once.
template <class Value, class ValuesOf>
std::vector<uint64_t> place_buckets(size_t n, const ValuesOf& values_of, int msd_bits, size_t parts, int threads,
                                    std::vector<std::vector<uint64_t>>& at, std::vector<const Value*>& values) {
  const size_t buckets = size_t{1} << msd_bits;
  const int shift = static_cast<int>(8 * sizeof(Value)) - msd_bits;
  at.assign(parts, std::vector<uint64_t>(buckets, 0));
  values.assign(n, nullptr);
  parallel_for(parts, threads, [&](size_t p, size_t) {
    const auto [lo, hi] = part_range(n, p, parts);
    for (size_t d = lo; d < hi; ++d) {
      const auto v = values_of(d);
      values[d] = v.data();
      for (const Value x : v) ++at[p][x >> shift];
    }
  });
  std::vector<uint64_t> start(buckets + 1, 0);
  uint64_t sum = 0;
  for (size_t b = 0; b < buckets; ++b) {
    start[b] = sum;
    for (size_t p = 0; p < parts; ++p) {
      const uint64_t here = at[p][b];
      at[p][b] = sum;
      sum += here;
    }
  }
  start[buckets] = sum;
  return start;
}

// The buckets [b0, b1) as a slice: each set's entries of those buckets, from its values at
// next[d] on (its values are ascending, so a slice's are the next ones), written to
// entries[at - base], base = start[b0]; next[d] moves past them. A slice reads a short run of
// each set: the next set's is asked for ahead.
template <class Value, class E>
void fill_slice(std::span<const Value* const> values, std::span<const uint32_t> len, int msd_bits, size_t b1, uint64_t base,
                size_t parts, int threads, const E& codec, std::vector<std::vector<uint64_t>>& at, std::vector<uint32_t>& next,
                typename E::Entry* entries) {
  const size_t n = values.size();
  const int shift = static_cast<int>(8 * sizeof(Value)) - msd_bits;
  parallel_for(parts, threads, [&](size_t p, size_t) {
    const auto [lo, hi] = part_range(n, p, parts);
    auto& f = at[p];
    for (size_t d = lo; d < hi; ++d) {
      if (d + 1 < hi && values[d + 1] != nullptr) __builtin_prefetch(values[d + 1] + next[d + 1]);
      const Value* v = values[d];
      size_t i = next[d];
      for (; i < len[d] && (v[i] >> shift) < b1; ++i) entries[f[v[i] >> shift]++ - base] = codec.make(v[i], d);
      next[d] = static_cast<uint32_t>(i);
    }
  });
}

// The slice's buckets [b0, b1) (its entries from start[b0]) each sorted and its runs of one value
// listed in bucket_runs[b] (in value order), their sets written to run_sets at the runs' places
// among all entries; counts each set's shared values into `shared` (one count per thread,
// summed later).
template <class E, class SetIndex>
void slice_runs(typename E::Entry* entries, const std::vector<uint64_t>& start, size_t b0, size_t b1, int msd_bits, size_t n,
                int threads, const E& codec, std::vector<std::vector<Run>>& bucket_runs, SetIndex* run_sets,
                std::vector<std::vector<uint32_t>>& shared, std::vector<std::vector<typename E::Entry>>& scratch) {
  parallel_for(b1 - b0, threads, [&](size_t k, size_t tid) {
    const size_t b = b0 + k;
    auto& counts = shared[tid];
    if (counts.empty()) counts.assign(n, 0);
    const uint64_t lo = start[b], len = start[b + 1] - lo;
    auto* e = entries + (lo - start[b0]);
    codec.sort(e, len, msd_bits, scratch[tid]);
    for (size_t i = 0; i < len;) {
      size_t j = i + 1;
      while (j < len && codec.value(e[j]) == codec.value(e[i])) ++j;
      if (j - i > 1) {
        bucket_runs[b].push_back({lo + i, j - i});
        for (size_t q = i; q < j; ++q) {
          const size_t d = codec.set(e[q]);
          run_sets[lo + q] = static_cast<SetIndex>(d);
          ++counts[d];
        }
      }
      i = j;
    }
  });
}

// The runs in rank order: by frequency, then value (the runs are in value order), by a counting
// sort. Frees the per-bucket lists as it goes.
inline std::vector<Run> runs_by_rank(std::vector<std::vector<Run>>& bucket_runs) {
  uint64_t max_freq = 2;
  size_t runs = 0;
  for (const auto& br : bucket_runs) {
    runs += br.size();
    for (const Run& r : br) max_freq = std::max(max_freq, r.len);
  }
  if (runs >= UINT32_MAX) throw UsageError("more than 2^32 distinct shared values; split the input");
  std::vector<uint64_t> next_rank(max_freq + 2, 0);
  for (const auto& br : bucket_runs)
    for (const Run& r : br) ++next_rank[r.len + 1];
  for (size_t f = 1; f < next_rank.size(); ++f) next_rank[f] += next_rank[f - 1];
  std::vector<Run> run_at_rank(runs);
  for (auto& br : bucket_runs) {
    for (const Run& r : br) run_at_rank[next_rank[r.len]++] = r;
    std::vector<Run>().swap(br);
  }
  return run_at_rank;
}

// rank_shared_values with the entries of `codec`, over `total` values in all (out.len filled).
// The entries are made and sorted a slice of the buckets at a time, about slice_entries each,
// in one buffer: of a run of one value only its sets are kept, 4 bytes each at their entries'
// places (an entry takes 8 or 16), and a slice's scatter reaches its few thousand buckets, not
// all 2^msd_bits. A join of dense licence boilerplate (11.8 M shingles) wrote all its entries
// into pages touched for the first time, its peak.
template <class Value, class E, class ValuesOf>
void rank_with(SharedRanks& out, size_t n, uint64_t total, const ValuesOf& values_of, int msd_bits, int threads, const E& codec,
               size_t slice_entries) {
  const size_t parts = std::clamp<size_t>(static_cast<size_t>(std::max(1, threads)), 1, n);
  const size_t t = static_cast<size_t>(std::max(1, threads));
  std::vector<std::vector<uint64_t>> at;
  std::vector<const Value*> values;
  const std::vector<uint64_t> start = place_buckets<Value>(n, values_of, msd_bits, parts, threads, at, values);
  const size_t buckets = start.size() - 1;
  // The slices: runs of whole buckets of about slice_entries (a larger bucket alone).
  std::vector<size_t> cut{0};
  uint64_t largest = 0;
  for (size_t b = 0; b < buckets; ++b)
    if (start[b + 1] - start[cut.back()] >= slice_entries || b + 1 == buckets) {
      largest = std::max(largest, start[b + 1] - start[cut.back()]);
      cut.push_back(b + 1);
    }
  // Packed entries number at most 2^16 sets: 2 bytes each here, half of what larger joins take
  // (the dense licence mix's join of 11.8 M shingles: 24 MB instead of 47, touched for the first
  // time while the next group is read).
  using SetIndex = std::conditional_t<std::is_same_v<E, PackedEntries>, uint16_t, uint32_t>;
  BigArray<SetIndex> run_sets(total);
  std::vector<std::vector<Run>> bucket_runs(buckets);
  std::vector<std::vector<uint32_t>> shared_by_thread(t);
  {
    BigArray<typename E::Entry> entries(largest);
    std::vector<std::vector<typename E::Entry>> scratch(t);
    std::vector<uint32_t> next(n, 0);
    for (size_t c = 0; c + 1 < cut.size(); ++c) {
      const size_t b0 = cut[c], b1 = cut[c + 1];
      fill_slice<Value>(values, out.len, msd_bits, b1, start[b0], parts, threads, codec, at, next, entries.data());
      slice_runs(entries.data(), start, b0, b1, msd_bits, n, threads, codec, bucket_runs, run_sets.data(), shared_by_thread, scratch);
    }
  }
  const std::vector<Run> run_at_rank = runs_by_rank(bucket_runs);
  const size_t runs = run_at_rank.size();
  out.num_ranks = runs;
  for (size_t d = 0; d < n; ++d) {
    uint32_t shared = 0;
    for (const auto& s : shared_by_thread)
      if (!s.empty()) shared += s[d];
    out.offsets[d + 1] = out.offsets[d] + shared;
    out.unshared[d] = out.len[d] - shared;
  }
  std::vector<std::vector<uint32_t>>().swap(shared_by_thread);
  // Each set's ranks ascending: the runs in rank order, appended to their sets, by parts of the
  // sets.
  out.ranks = BigArray<uint32_t>(out.offsets[n]);
  parallel_for(parts, threads, [&](size_t p, size_t) {
    const auto [lo, hi] = part_range(n, p, parts);
    std::vector<uint64_t> cursor(out.offsets.begin() + static_cast<ptrdiff_t>(lo), out.offsets.begin() + static_cast<ptrdiff_t>(hi));
    for (size_t r = 0; r < runs; ++r) {
      const Run& run = run_at_rank[r];
      for (uint64_t i = run.start; i < run.start + run.len; ++i) {
        const size_t d = run_sets[i];
        if (d >= lo && d < hi) out.ranks[cursor[d - lo]++] = static_cast<uint32_t>(r);
      }
    }
  });
}

// The most bucket bits of packed entries (PackedEntries): joins of up to 2^16 sets, 65,536
// buckets at most.
inline constexpr int kMaxPackedBits = 16;
static_assert(kMaxPackedBits <= 16, "rank_with numbers the sets of packed entries in 16 bits");

}  // namespace ranking_detail

/// Entries made and sorted at a time while ranking (rank_with): 16 MB of packed entries.
inline constexpr size_t kRankSliceEntries = size_t{1} << 21;

/// The ranks of the shared values of n sets; values_of(d) is set d's values (Value: uint32_t or
/// uint64_t), sorted and distinct, in memory that stays put until this returns. `slice_entries`: see rank_with (tests make it small).
template <class Value, class ValuesOf>
SharedRanks rank_shared_values(size_t n, const ValuesOf& values_of, int threads, size_t slice_entries = kRankSliceEntries) {
  using namespace ranking_detail;
  SharedRanks out;
  out.len.resize(n);
  out.unshared.resize(n);
  out.offsets.assign(n + 1, 0);
  uint64_t total = 0;
  for (size_t d = 0; d < n; ++d) {
    const size_t l = values_of(d).size();
    if (l >= UINT32_MAX) throw UsageError("a document has more than 2^32 shingles");
    out.len[d] = static_cast<uint32_t>(l);
    total += l;
  }
  if (total == 0) return out;
  // More buckets for more entries, so that each stays small enough for the cache.
  const int msd_bits = total >= (uint64_t{1} << 22) ? 12 : 8;
  if constexpr (sizeof(Value) == 8) {
    // As many bucket bits as the sets' numbers take, where that is few enough: 8-byte entries.
    const int packed_bits = std::max(msd_bits, static_cast<int>(std::bit_width(n - 1)));
    if (packed_bits <= kMaxPackedBits) {
      rank_with<Value>(out, n, total, values_of, packed_bits, threads, PackedEntries{packed_bits}, slice_entries);
      return out;
    }
  }
  rank_with<Value>(out, n, total, values_of, msd_bits, threads, Entries<Value>{}, slice_entries);
  return out;
}

}  // namespace neardup::internal
