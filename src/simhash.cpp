// SimHash fingerprints (Charikar 2002): the sign of the weighted bit tallies of the shingles.
#include "neardup/simhash.h"
#include "internal/testing.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <limits>

#include "internal/parallel.h"
#include "internal/radix_sort.h"
#include "kernels/dispatch.h"
#include "kernels/simhash_kernels.h"
#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/shingle.h"

namespace neardup {

const char* simhash_weights_name(SimHashWeights w) noexcept {
  switch (w) {
    case SimHashWeights::Set: return "set";
    case SimHashWeights::LogTf: return "logtf";
    default: return "tf";
  }
}

namespace {

// round(256 (1 + ln tf)), capped so that the kernels' 32-bit lanes cannot overflow; counts below
// 256 (nearly all) come from a table.
uint32_t logtf_weight_of(uint64_t tf) noexcept {
  const double w = std::nearbyint(256.0 * (1.0 + std::log(static_cast<double>(tf))));
  return static_cast<uint32_t>(std::min<double>(w, internal::kMaxSimHashWeight));
}

uint32_t logtf_weight(uint64_t tf) noexcept {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint64_t c = 1; c < t.size(); ++c) t[c] = logtf_weight_of(c);
    return t;
  }();
  return tf < table.size() ? table[tf] : logtf_weight_of(tf);
}

// Bit b is set when the tally 2 * sums[b] - total is positive.
uint64_t sign_bits(const uint64_t sums[64], uint64_t total) noexcept {
  uint64_t out = 0;
  for (int b = 0; b < 64; ++b)
    if (2 * sums[b] > total) out |= uint64_t{1} << b;
  return out;
}

void count(const uint64_t* h, size_t n, uint64_t sums[64], Isa isa) noexcept {
  internal::kernels(isa).simhash_count(h, n, sums);
}

void weigh(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64], Isa isa) noexcept {
  internal::kernels(isa).simhash_weigh(h, w, n, sums);
}

}  // namespace

// The slot of x in the table: its own, or the first free one on its probe sequence. The
// stale-or-equal test is one branch, taken only on a collision with another value (rare at a
// load of at most one half), so whether x is new never costs a misprediction.
inline size_t SimHasher::probe(const Slot* t, size_t mask, uint32_t gen, ShingleHash x) noexcept {
  size_t i = static_cast<size_t>(x ^ (x >> 29)) & mask;  // shingle hashes are mixed already
  for (;;) {
    // Non-zero exactly when the slot is current and holds another value (one branch: GCC splits
    // a logical AND of the two tests into two).
    const uint64_t other = (t[i].key ^ x) & (uint64_t{0} - static_cast<uint64_t>(t[i].stamp == gen));
    if (__builtin_expect(other == 0, 1)) return i;
    i = (i + 1) & mask;
  }
}

uint64_t SimHasher::hash(std::span<const ShingleHash> shingles, Isa isa) {
  uint64_t sums[64] = {};
  if (shingles.empty()) return 0;
  if (weights_ == SimHashWeights::Tf) {
    count(shingles.data(), shingles.size(), sums, isa);
    return sign_bits(sums, shingles.size());
  }
  const size_t n = shingles.size();
  if (n > kTableShingles) return hash_sorted(shingles, isa);
  if (distinct_.size() < n) {
    distinct_.resize(n);
    counts_.resize(n);
  }
#if NEARDUP_X86_KERNELS
  if (weights_ == SimHashWeights::Set && isa == Isa::Avx512) {
    // Buckets of eight values (one cache line, compared at once) at most half full on average;
    // zeroed per document, which costs less than the stamps it saves.
    size_t buckets = 1;
    while (8 * buckets < 2 * n) buckets <<= 1;
    if (buckets_.size() < 8 * buckets + 8) buckets_.assign(8 * buckets + 8, 0);
    auto* const table = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(buckets_.data()) + 63) & ~uintptr_t{63});
    std::memset(table, 0, 64 * buckets);
    const size_t nd = internal::simhash_distinct_avx512(shingles.data(), n, table, buckets - 1, distinct_.data());
    return of_set(std::span<const ShingleHash>(distinct_.data(), nd), isa);
  }
#endif
  // Distinct values (and their counts): a linear-probing table of at least four times the size,
  // much cheaper than sorting (the sums do not depend on the order). Slots carry the number of the
  // document that filled them, so the table is never cleared between documents. A slot is one
  // 16-byte entry (one cache line touched per probe), and the first probe decides without a
  // branch whether the value is new: only a collision with another value takes a branch, rare at
  // a load of at most one quarter.
  size_t cap = 16;
  while (cap < 4 * n) cap <<= 1;
  if (table_.size() < cap) {
    table_.assign(cap, Slot{});
    generation_ = 0;
  }
  if (++generation_ == 0) {  // wrapped: clear once every 2^32 documents
    std::fill(table_.begin(), table_.end(), Slot{});
    generation_ = 1;
  }
  const size_t mask = cap - 1;
  const uint32_t gen = generation_;
  Slot* const t = table_.data();
  ShingleHash* const d = distinct_.data();
  uint32_t* const c = counts_.data();
  size_t nd = 0;
  if (weights_ == SimHashWeights::Set) {
    const ShingleHash* xs = shingles.data();
    for (size_t j = 0; j < n; ++j) {
      const ShingleHash x = xs[j];
      size_t i = probe(t, mask, gen, x);
      const bool fresh = t[i].stamp != gen;
      t[i].key = x;
      t[i].stamp = gen;
      d[nd] = x;
      nd += fresh;
    }
    return of_set(std::span<const ShingleHash>(d, nd), isa);
  }
  for (const ShingleHash x : shingles) {
    size_t i = probe(t, mask, gen, x);
    const bool fresh = t[i].stamp != gen;
    const uint32_t s = fresh ? static_cast<uint32_t>(nd) : t[i].slot;
    c[s] = (fresh ? 0 : c[s]) + 1;
    t[i] = Slot{x, gen, s};
    d[nd] = x;
    nd += fresh;
  }
  weight_.resize(nd);
  uint64_t total = 0;
  for (size_t j = 0; j < nd; ++j) {
    weight_[j] = logtf_weight(c[j]);
    total += weight_[j];
  }
  weigh(d, weight_.data(), nd, sums, isa);
  return sign_bits(sums, total);
}

size_t SimHasher::kept_scratch_bytes(SimHashWeights weights) noexcept {
  if (weights == SimHashWeights::Tf) return 0;
  // The probing table (four slots per shingle), the distinct values, their counts and weights.
  return kTableShingles * (4 * sizeof(Slot) + sizeof(ShingleHash) + 2 * sizeof(uint32_t));
}

uint64_t SimHasher::of_set(std::span<const ShingleHash> set, Isa isa) const {
  if (weights_ != SimHashWeights::Set) throw UsageError("SimHasher::of_set() needs set weights");
  SimHashTally tally;
  tally.add(set, isa);
  return tally.simhash();
}

void SimHashTally::add(std::span<const ShingleHash> part, Isa isa) noexcept {
  if (part.empty()) return;
  count(part.data(), part.size(), sums_, isa);
  size_ += part.size();
}

void SimHashTally::add(const SimHashTally& other) noexcept {
  for (int b = 0; b < 64; ++b) sums_[b] += other.sums_[b];
  size_ += other.size_;
}

uint64_t SimHashTally::simhash() const noexcept { return size_ == 0 ? 0 : sign_bits(sums_, size_); }

// A long document's distinct shingles by sorting them: 16 bytes of scratch per shingle, for the
// time of the call, where the tables above take 64-76 (and are kept for the next document): on a
// corpus with texts of 25 MB the run's peak fell from 683 to 356 MB. The sums do not depend on
// the order.
uint64_t SimHasher::hash_sorted(std::span<const ShingleHash> shingles, Isa isa) {
  if (weights_ == SimHashWeights::Set) return of_set(sorted_set(shingles), isa);
  uint64_t sums[64] = {};
  const size_t n = shingles.size();
  std::vector<ShingleHash> v(shingles.begin(), shingles.end()), tmp(n);
  internal::radix_sort_u64_bits(v.data(), tmp.data(), n, 0, 64);
  std::vector<ShingleHash>().swap(tmp);
  // The distinct values at the front of v, their weights (log tf) alongside.
  std::vector<uint32_t> w;
  uint64_t total = 0;
  size_t nd = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && v[j] == v[i]) ++j;
    v[nd++] = v[i];
    w.push_back(logtf_weight(j - i));
    total += w.back();
    i = j;
  }
  weigh(v.data(), w.data(), nd, sums, isa);
  return sign_bits(sums, total);
}

uint64_t simhash_reference(std::span<const ShingleHash> shingles, SimHashWeights weights) {
  std::vector<ShingleHash> values(shingles.begin(), shingles.end());
  std::vector<int64_t> w(values.size(), 1);
  if (weights != SimHashWeights::Tf) {
    std::sort(values.begin(), values.end());
    std::vector<ShingleHash> distinct;
    w.clear();
    for (size_t i = 0; i < values.size();) {
      size_t j = i;
      while (j < values.size() && values[j] == values[i]) ++j;
      distinct.push_back(values[i]);
      w.push_back(weights == SimHashWeights::Set ? 1 : static_cast<int64_t>(logtf_weight(j - i)));
      i = j;
    }
    values = std::move(distinct);
  }
  int64_t tally[64] = {};
  for (size_t i = 0; i < values.size(); ++i)
    for (int b = 0; b < 64; ++b) tally[b] += (values[i] >> b & 1) ? w[i] : -w[i];
  uint64_t out = 0;
  for (int b = 0; b < 64; ++b)
    if (tally[b] > 0) out |= uint64_t{1} << b;
  return out;
}

}  // namespace neardup
