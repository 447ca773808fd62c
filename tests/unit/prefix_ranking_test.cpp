// The prefix filter's order (internal/prefix_ranking.h) against brute force, for both kinds of
// values: 32-bit fingerprint values and 64-bit shingle hashes, with values shared by many sets,
// values equal in their top or low bits, empty sets, and enough entries for the larger buckets.
#include "internal/prefix_ranking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

using namespace neardup;

namespace {

// Sorted, distinct random sets over a pool that makes values shared by 2 to hundreds of sets,
// some values alike in their top bits (one bucket) or in all but the lowest bit.
template <class Value>
std::vector<std::vector<Value>> random_sets(uint64_t seed, size_t n, size_t max_len) {
  std::mt19937_64 rng(seed);
  std::vector<Value> pool(4000);
  const int bits = 8 * static_cast<int>(sizeof(Value));
  for (size_t i = 0; i < pool.size(); ++i) {
    const uint64_t r = rng();
    pool[i] = static_cast<Value>(i % 5 == 0 ? (uint64_t{0xAB} << (bits - 8)) | (r >> 8 >> (64 - bits)) : i % 7 == 0 ? (pool[i - 1] ^ 1) : r);
  }
  std::vector<std::vector<Value>> sets(n);
  for (auto& s : sets) {
    const size_t len = rng() % 9 == 0 ? 0 : rng() % max_len;
    for (size_t k = 0; k < len; ++k) s.push_back(rng() % 3 == 0 ? static_cast<Value>(rng()) : pool[rng() % (1 + rng() % pool.size())]);
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  return sets;
}

template <class Value>
void expect_brute_force(const std::vector<std::vector<Value>>& sets, int threads, size_t slice = internal::kRankSliceEntries) {
  // Every value's frequency by sorting them all; the shared ones in rank order.
  std::vector<Value> all;
  for (const auto& s : sets) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  std::vector<std::pair<uint64_t, Value>> shared;  // (frequency, value): the rank order
  for (size_t i = 0; i < all.size();) {
    size_t j = i + 1;
    while (j < all.size() && all[j] == all[i]) ++j;
    if (j - i >= 2) shared.push_back({j - i, all[i]});
    i = j;
  }
  std::sort(shared.begin(), shared.end());
  std::vector<std::pair<Value, uint32_t>> rank;  // value -> rank, by value
  for (size_t r = 0; r < shared.size(); ++r) rank.push_back({shared[r].second, static_cast<uint32_t>(r)});
  std::sort(rank.begin(), rank.end());
  auto rank_of = [&](Value v) -> const std::pair<Value, uint32_t>* {
    const auto it = std::lower_bound(rank.begin(), rank.end(), std::make_pair(v, uint32_t{0}));
    return it != rank.end() && it->first == v ? &*it : nullptr;
  };

  const internal::SharedRanks got =
      internal::rank_shared_values<Value>(sets.size(), [&](size_t d) { return std::span<const Value>(sets[d]); }, threads, slice);
  ASSERT_EQ(got.num_ranks, shared.size());
  for (size_t d = 0; d < sets.size(); ++d) {
    std::vector<uint32_t> want;
    for (const Value v : sets[d])
      if (const auto* r = rank_of(v)) want.push_back(r->second);
    std::sort(want.begin(), want.end());
    const auto ranks = got[d];
    ASSERT_EQ(std::vector<uint32_t>(ranks.begin(), ranks.end()), want) << "set " << d;
    EXPECT_EQ(got.len[d], sets[d].size());
    EXPECT_EQ(got.unshared[d], sets[d].size() - want.size());
  }
}

}  // namespace

TEST(PrefixRanking, FingerprintValuesMatchBruteForce) {
  for (const int threads : {1, 3}) expect_brute_force(random_sets<uint32_t>(11, 3000, 200), threads);
}

TEST(PrefixRanking, ShingleHashesMatchBruteForce) {
  for (const int threads : {1, 3}) expect_brute_force(random_sets<uint64_t>(12, 3000, 200), threads);
}

// Over 2^22 entries: more buckets (12 top bits), and large buckets through the radix sort.
TEST(PrefixRanking, ManyEntriesMatchBruteForce) {
  const auto wide = random_sets<uint64_t>(13, 10000, 1000);
  const auto narrow = random_sets<uint32_t>(14, 10000, 1000);
  size_t total = 0;
  for (const auto& s : wide) total += s.size();
  ASSERT_GE(total, size_t{1} << 22) << "too few entries for the larger buckets";
  expect_brute_force(wide, 2);
  expect_brute_force(narrow, 2);
}

// The entries made a slice of the buckets at a time: slices of one bucket each (the smallest),
// of a few buckets, and buckets larger than a slice, for every kind of entry.
TEST(PrefixRanking, SlicesOfTheBucketsMatchBruteForce) {
  for (const size_t slice : {size_t{1}, size_t{777}, size_t{20000}}) {
    expect_brute_force(random_sets<uint32_t>(31, 2000, 200), 2, slice);
    expect_brute_force(random_sets<uint64_t>(32, 2000, 200), 3, slice);
    expect_brute_force(random_sets<uint64_t>(33, 70000, 12), 2, slice);  // 16-byte entries
  }
}

// Shingle hashes of up to 2^16 sets go into 8-byte entries (the value's bits below its bucket's,
// then the set); more sets keep 16-byte ones. Both sides of the bound.
TEST(PrefixRanking, SetsPastThePackedBoundMatchBruteForce) {
  for (const size_t n : {size_t{1} << 16, (size_t{1} << 16) + 1, size_t{70000}}) expect_brute_force(random_sets<uint64_t>(n, n, 12), 2);
}

// A bucket's packed keys sorted as std::sort sorts them: spread keys around the sizes where the
// insertion pass gives way, and keys whose top bits agree in runs (one value held by many sets,
// in set order), two runs interleaved in one sub-bucket, and a run already in order.
TEST(PrefixRanking, BucketKeysSortLikeStdSort) {
  std::mt19937_64 rng(21);
  std::vector<uint64_t> scratch;
  const auto check = [&](std::vector<uint64_t> keys) {
    std::vector<uint64_t> want = keys;
    std::sort(want.begin(), want.end());
    internal::bucket_sort_top_bits(keys.data(), keys.size(), scratch);
    ASSERT_EQ(keys, want) << keys.size() << " keys";
  };
  for (const size_t n : {0, 1, 2, 31, 32, 33, 64, 400, 5000}) {
    std::vector<uint64_t> keys(n);
    for (uint64_t& k : keys) k = rng();
    check(keys);
  }
  // Two values, each held by 3,000 sets (the set in the low 16 bits), interleaved set by set,
  // with spread keys around them; then one value's run alone.
  std::vector<uint64_t> runs;
  const uint64_t a = rng() << 16, b = a ^ (uint64_t{1} << 20);
  for (uint64_t set = 0; set < 3000; ++set) {
    runs.push_back(b | set);
    runs.push_back(a | set);
    if (set % 10 == 0) runs.push_back(rng());
  }
  check(runs);
  std::vector<uint64_t> one;
  for (uint64_t set = 0; set < 3000; ++set) one.push_back(a | set);
  for (int i = 0; i < 40; ++i) one.push_back(rng() | (uint64_t{1} << 63));
  check(one);
}

TEST(PrefixRanking, NoValues) {
  const std::vector<std::vector<uint64_t>> none(4);
  const internal::SharedRanks got = internal::rank_shared_values<uint64_t>(none.size(), [&](size_t d) { return std::span<const uint64_t>(none[d]); }, 2);
  EXPECT_EQ(got.num_ranks, 0u);
  EXPECT_EQ(got.len, std::vector<uint32_t>(4, 0));
}
