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
  if (distinct_.size() < n) {
    distinct_.resize(n);
    counts_.resize(n);
  }
  if (weights_ == SimHashWeights::Set && isa == Isa::Avx512) {
    // Buckets of eight values (one cache line, compared at once) at most half full on average;
    // zeroed per document, which costs less than the stamps it saves.
    size_t buckets = 1;
    while (8 * buckets < 2 * n) buckets <<= 1;
    if (buckets_.size() < 8 * buckets + 8) buckets_.assign(8 * buckets + 8, 0);
    auto* const table = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(buckets_.data()) + 63) & ~uintptr_t{63});
    std::memset(table, 0, 64 * buckets);
    const size_t nd = internal::simhash_distinct_avx512(shingles.data(), n, table, buckets - 1, distinct_.data());
    count(distinct_.data(), nd, sums, isa);
    return sign_bits(sums, nd);
  }
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
    count(d, nd, sums, isa);
    return sign_bits(sums, nd);
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

// ---- Permutations ----

namespace {

// Values sharing the top `matched` bits: equal after shifting the rest out.
inline uint64_t prefix_of(uint64_t permuted, int matched) noexcept {
  return matched == 0 ? 0 : permuted >> (64 - matched);
}

}  // namespace

SimHashPermutation::Runs SimHashPermutation::runs_of(uint64_t mask) noexcept {
  Runs r;
  for (int b = 0; b < 64;) {
    if (!(mask >> b & 1)) {
      ++b;
      continue;
    }
    int e = b;
    while (e < 64 && (mask >> e & 1)) ++e;
    r.shift[r.count] = static_cast<uint8_t>(b);
    r.len[r.count] = static_cast<uint8_t>(e - b);
    r.low[r.count] = e - b == 64 ? ~uint64_t{0} : (uint64_t{1} << (e - b)) - 1;
    ++r.count;
    b = e;
  }
  return r;
}

SimHashPermutation::SimHashPermutation(uint64_t mask)
    : matched_(std::popcount(mask)), in_(runs_of(mask)), out_(runs_of(~mask)) {}

// ---- Planning ----

namespace {

double choose(int n, int k) noexcept {
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

// Blocks of `bits` (a list of bit positions, low to high) into b nearly equal parts, the larger
// ones first, as masks.
std::vector<uint64_t> split(const std::vector<int>& bits, int b) {
  std::vector<uint64_t> blocks(static_cast<size_t>(b), 0);
  const int n = static_cast<int>(bits.size());
  int pos = 0;
  for (int i = 0; i < b; ++i) {
    const int size = n / b + (i < n % b ? 1 : 0);
    for (int j = 0; j < size; ++j) blocks[static_cast<size_t>(i)] |= uint64_t{1} << bits[static_cast<size_t>(pos++)];
  }
  return blocks;
}

// For every choice of `keep` of the blocks: calls fn(union of the kept, union of the others).
template <class Fn>
void for_each_choice(const std::vector<uint64_t>& blocks, int keep, Fn&& fn) {
  const int b = static_cast<int>(blocks.size());
  uint64_t all = 0;
  for (uint64_t m : blocks) all |= m;
  std::vector<int> idx(static_cast<size_t>(keep));
  for (int i = 0; i < keep; ++i) idx[static_cast<size_t>(i)] = i;
  for (;;) {
    uint64_t kept = 0;
    for (int i : idx) kept |= blocks[static_cast<size_t>(i)];
    fn(kept, all & ~kept);
    int i = keep - 1;
    while (i >= 0 && idx[static_cast<size_t>(i)] == b - keep + i) --i;
    if (i < 0) return;
    ++idx[static_cast<size_t>(i)];
    for (int j = i + 1; j < keep; ++j) idx[static_cast<size_t>(j)] = idx[static_cast<size_t>(j - 1)] + 1;
  }
}

std::vector<int> bits_of(uint64_t mask) {
  std::vector<int> bits;
  for (int b = 0; b < 64; ++b)
    if (mask >> b & 1) bits.push_back(b);
  return bits;
}

std::string sizes_of(const std::vector<uint64_t>& blocks) {
  std::string s;
  for (uint64_t m : blocks) s += (s.empty() ? "" : ",") + std::to_string(std::popcount(m));
  return s;
}

// Work estimates in units of one fingerprint compared. A query's binary search over n entries
// costs log2(n) cache misses, about 4 comparisons each; a batch table costs about 10 per
// fingerprint (permute, radix passes, scan).
void estimate(SimHashPlan& p, SimHashWorkload w) {
  const double n = static_cast<double>(p.docs);
  p.expected_candidates = 0;
  p.batch_pairs = 0;
  for (uint64_t m : p.masks) {
    const double share = std::ldexp(1.0, -std::popcount(m));
    p.expected_candidates += n * share;
    p.batch_pairs += n * n * share / 2;
  }
  p.bytes = static_cast<uint64_t>(p.masks.size()) * p.docs * 12;
  const double t = static_cast<double>(p.masks.size());
  p.cost = w == SimHashWorkload::Online ? t * 4.0 * std::max(1.0, std::log2(std::max(n, 2.0))) + p.expected_candidates
                                        : t * 10.0 * n + p.batch_pairs;
}

void check_k(int k) {
  if (k < 0 || k > 16) throw UsageError(NEARDUP_OPT("hamming") " must be between 0 and 16 (SimHash near-duplicates are within a few bits)");
}

constexpr double kMaxTables = 4096;

}  // namespace

std::string SimHashPlan::describe() const {
  std::string s;
  char line[160];
  for (size_t t = 0; t < masks.size(); ++t) {
    std::snprintf(line, sizeof line, "table %zu: %d matched bits, mask 0x%016llx\n", t, std::popcount(masks[t]),
                  static_cast<unsigned long long>(masks[t]));
    s += line;
  }
  return s;
}

SimHashPlan simhash_blocks_plan(int k, int blocks, uint64_t docs) {
  check_k(k);
  if (blocks <= k || blocks > 64) throw UsageError("a one-level SimHash plan needs more blocks than " NEARDUP_OPT("hamming") ", at most 64");
  SimHashPlan p;
  p.k = k;
  p.docs = docs;
  const auto parts = split(bits_of(~uint64_t{0}), blocks);
  for_each_choice(parts, blocks - k, [&](uint64_t kept, uint64_t) { p.masks.push_back(kept); });
  p.layout = std::to_string(blocks) + " blocks (" + sizes_of(parts) + " bits), each table matches " +
             std::to_string(blocks - k);
  estimate(p, SimHashWorkload::Online);
  return p;
}

SimHashPlan plan_simhash_tables(int k, uint64_t docs, SimHashWorkload workload, uint64_t memory_bytes) {
  check_k(k);
  SimHashPlan best;
  bool have = false;
  auto consider = [&](SimHashPlan p) {
    estimate(p, workload);
    if (memory_bytes != 0 && p.bytes > memory_bytes) return;
    if (!have || p.cost < best.cost || (p.cost == best.cost && p.masks.size() < best.masks.size())) {
      best = std::move(p);
      have = true;
    }
  };
  // One level: b blocks, every table matches b - k of them.
  for (int b = k + 1; b <= 64 && choose(b, k) <= kMaxTables; ++b) consider(simhash_blocks_plan(k, b, docs));
  // Two levels: b1 blocks matching b1 - k, then the k unmatched ones split again into b2 blocks
  // matching b2 - k.
  if (k > 0)
    for (int b1 = k + 1; b1 <= 16 && choose(b1, k) <= kMaxTables; ++b1) {
      const auto outer = split(bits_of(~uint64_t{0}), b1);
      for (int b2 = k + 1; b2 <= 16 && choose(b1, k) * choose(b2, k) <= kMaxTables; ++b2) {
        SimHashPlan p;
        p.k = k;
        p.docs = docs;
        bool fits = true;
        for_each_choice(outer, b1 - k, [&](uint64_t kept, uint64_t rest) {
          if (std::popcount(rest) < b2) {
            fits = false;
            return;
          }
          const auto inner = split(bits_of(rest), b2);
          for_each_choice(inner, b2 - k, [&](uint64_t kept2, uint64_t) { p.masks.push_back(kept | kept2); });
        });
        if (!fits) continue;
        p.layout = std::to_string(b1) + " blocks (" + sizes_of(outer) + " bits) matching " + std::to_string(b1 - k) +
                   ", the other " + std::to_string(k) + " split into " + std::to_string(b2) + " matching " +
                   std::to_string(b2 - k);
        consider(std::move(p));
      }
    }
  if (!have)
    throw UsageError("no SimHash table plan for " + option_ref("hamming", std::to_string(k)) + " fits in " +
                     std::to_string(memory_bytes) + " bytes; allow more memory or a smaller distance");
  return best;
}

// ---- Batch find-all ----

namespace {

using Entry = internal::SimHashEntry;  // a permuted fingerprint and its index

// values[0, n) permuted for a table, with indices first_idx + i, sorted by key bits [lo_bit, 64)
// (the matched bits for find-all; all of them where sorted tables are merged).
std::vector<Entry> permuted_entries(const SimHashPermutation& perm, const uint64_t* values, size_t n,
                                    uint32_t first_idx, int lo_bit) {
  std::vector<Entry> e(n), tmp(n);
  for (size_t i = 0; i < n; ++i) e[i] = {perm(values[i]), first_idx + static_cast<uint32_t>(i)};
  internal::radix_sort_by_bits(e.data(), tmp.data(), n, lo_bit, 64, [](const Entry& x) { return x.key; }, 16);
  return e;
}

void close_pairs(const Entry* e, size_t n, int k, std::vector<uint32_t>& a, std::vector<uint32_t>& b) {
  internal::kernels().simhash_close_pairs(e, n, k, a, b);
}

void close_keys(const uint64_t* keys, size_t n, uint64_t q, int k, std::vector<uint32_t>& hits) {
  internal::kernels().simhash_close_keys(keys, n, q, k, hits);
}

}  // namespace

std::vector<HammingPair> simhash_find_all(std::span<const uint64_t> fps, const SimHashPlan& plan, int threads,
                                          std::span<const uint8_t> skip, FindAllStats* stats) {
  check_k(plan.k);
  const int k = plan.k;
  // Identical fingerprints first: the distinct values, and the documents of each.
  std::vector<Entry> docs;
  docs.reserve(fps.size());
  for (size_t d = 0; d < fps.size(); ++d)
    if (skip.empty() || !skip[d]) docs.push_back({fps[d], static_cast<uint32_t>(d)});
  {
    std::vector<Entry> tmp(docs.size());
    internal::radix_sort_by_bits(docs.data(), tmp.data(), docs.size(), 0, 64, [](const Entry& e) { return e.key; }, 16);
  }
  std::vector<uint64_t> value;      // distinct values
  std::vector<uint32_t> group_end;  // docs[group_end[v-1], group_end[v]) have value[v]
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i == 0 || docs[i].key != docs[i - 1].key) {
      if (i) group_end.push_back(static_cast<uint32_t>(i));
      value.push_back(docs[i].key);
    }
  }
  if (!docs.empty()) group_end.push_back(static_cast<uint32_t>(docs.size()));
  const size_t nv = value.size();

  // Per table: permute, sort by the matched bits, compare within each run. A pair is kept by
  // the first table that matches it (its XOR avoids that table's mask), so it is reported once.
  const size_t tables = plan.masks.size();
  std::vector<std::vector<HammingPair>> found(tables);
  std::vector<uint64_t> compared(tables, 0);
  internal::parallel_for(tables, threads, [&](size_t t, size_t) {
    const SimHashPermutation perm(plan.masks[t]);
    const int m = perm.matched();
    const std::vector<Entry> e = permuted_entries(perm, value.data(), nv, 0, 64 - m);
    auto& out = found[t];
    uint64_t cmp = 0;
    std::vector<uint32_t> pa, pb;
    for (size_t i = 0; i < nv;) {
      size_t j = i + 1;
      const uint64_t pre = prefix_of(e[i].key, m);
      while (j < nv && prefix_of(e[j].key, m) == pre) ++j;
      if (j - i > 1) {
        cmp += (j - i) * (j - i - 1) / 2;
        pa.clear();
        pb.clear();
        close_pairs(e.data() + i, j - i, k, pa, pb);
        for (size_t c = 0; c < pa.size(); ++c) {
          const Entry& x = e[i + pa[c]];
          const Entry& y = e[i + pb[c]];
          const uint64_t diff = value[x.idx] ^ value[y.idx];
          bool earlier = false;
          for (size_t u = 0; u < t && !earlier; ++u) earlier = (diff & plan.masks[u]) == 0;
          if (!earlier) out.push_back({std::min(x.idx, y.idx), std::max(x.idx, y.idx), hamming_distance(x.key, y.key)});
        }
      }
      i = j;
    }
    compared[t] = cmp;
  });

  // Back to documents: copies pair at distance 0; a pair of values pairs all their documents.
  auto group = [&](uint32_t v) {
    const uint32_t b = v == 0 ? 0 : group_end[v - 1];
    return std::span<const Entry>(docs.data() + b, group_end[v] - b);
  };
  std::vector<HammingPair> out;
  auto add = [&](uint32_t x, uint32_t y, int d) {
    out.push_back({std::min(x, y), std::max(x, y), d});
  };
  for (uint32_t v = 0; v < nv; ++v) {
    const auto g = group(v);
    for (size_t i = 0; i < g.size(); ++i)
      for (size_t j = i + 1; j < g.size(); ++j) add(g[i].idx, g[j].idx, 0);
  }
  for (const auto& f : found)
    for (const HammingPair& p : f)
      for (const Entry& x : group(p.a))
        for (const Entry& y : group(p.b)) add(x.idx, y.idx, p.distance);
  std::sort(out.begin(), out.end(), [](const HammingPair& x, const HammingPair& y) {
    return x.a != y.a ? x.a < y.a : x.b < y.b;
  });
  if (stats) {
    for (uint64_t c : compared) stats->compared += c;
    stats->found += out.size();
  }
  return out;
}

std::vector<HammingPair> simhash_find_all_brute_force(std::span<const uint64_t> fps, int k,
                                                      std::span<const uint8_t> skip) {
  std::vector<HammingPair> out;
  for (size_t a = 0; a < fps.size(); ++a) {
    if (!skip.empty() && skip[a]) continue;
    for (size_t b = a + 1; b < fps.size(); ++b) {
      if (!skip.empty() && skip[b]) continue;
      const int d = hamming_distance(fps[a], fps[b]);
      if (d <= k) out.push_back({static_cast<DocId>(a), static_cast<DocId>(b), d});
    }
  }
  return out;
}

// ---- Online index ----

namespace {

// The first i in [0, n) with keys[i] >= x (n if none), keys sorted. Interpolation search, since
// a table's permuted keys are close to uniform: each probe guesses the position from the values
// at the ends of the range; a probe that does not halve the range is followed by a bisection, so
// skewed keys cost O(log n) probes at worst.
size_t interpolation_lower_bound(const uint64_t* keys, size_t n, uint64_t x) noexcept {
  size_t lo = 0, hi = n;  // keys[0, lo) < x <= keys[hi, n)
  while (hi - lo > 16) {
    const size_t before = hi - lo;
    const uint64_t a = keys[lo], b = keys[hi - 1];
    if (x <= a) return lo;
    if (x > b) return hi;
    const double f = static_cast<double>(x - a) / static_cast<double>(b - a);
    size_t pos = lo + static_cast<size_t>(f * static_cast<double>(hi - 1 - lo));
    pos = std::min(std::max(pos, lo), hi - 1);
    if (keys[pos] < x)
      lo = pos + 1;
    else
      hi = pos;
    if (hi - lo > before / 2 && hi - lo > 16) {
      const size_t mid = lo + (hi - lo) / 2;
      if (keys[mid] < x)
        lo = mid + 1;
      else
        hi = mid;
    }
  }
  return static_cast<size_t>(std::lower_bound(keys + lo, keys + hi, x) - keys);
}

}  // namespace

SimHashIndex::SimHashIndex(SimHashPlan plan) : plan_(std::move(plan)) {
  check_k(plan_.k);
  if (plan_.masks.empty()) throw UsageError("a SimHash index needs at least one table");
  for (uint64_t m : plan_.masks) tables_.push_back({.perm = SimHashPermutation(m)});
}

// Three layers, newest last: the main sorted tables (fps_[0, merged_)), a sorted delta per table
// (fps_[merged_, sorted_)), and an unsorted tail of at most kTail fingerprints (fps_[sorted_, end)).
// A full tail is sorted into the deltas (a merge of kTail entries into a delta of at most 1/16 of
// the tables); a delta past 1/16 of the tables is merged into them. Each insert so moves O(1/16)
// of the entries per table, amortised, and a query binary-searches two arrays per table and scans
// at most kTail fingerprints.
namespace {
constexpr size_t kTail = 4096;
}

void SimHashIndex::insert(uint64_t fp, DocId id) {
  fps_.push_back(fp);
  ids_.push_back(id);
  if (fps_.size() - sorted_ >= kTail) absorb_tail();
  if (sorted_ - merged_ > std::max<size_t>(kTail, merged_ / 16)) merge();
}

// Merges the fingerprints fps_[from, to) into the sorted (keys, ids) of each table.
void SimHashIndex::merge_into(size_t from, size_t to, bool into_delta) {
  const size_t fresh = to - from;
  if (fresh == 0) return;
  for (Table& t : tables_) {
    auto& keys = into_delta ? t.delta_keys : t.keys;
    auto& ids = into_delta ? t.delta_ids : t.ids;
    const std::vector<Entry> add = permuted_entries(t.perm, fps_.data() + from, fresh, static_cast<uint32_t>(from), 0);
    std::vector<uint64_t> k(keys.size() + fresh);
    std::vector<DocId> d(k.size());
    size_t i = 0, j = 0, o = 0;
    while (i < keys.size() || j < fresh) {
      if (j == fresh || (i < keys.size() && keys[i] <= add[j].key)) {
        k[o] = keys[i];
        d[o++] = ids[i++];
      } else {
        k[o] = add[j].key;
        d[o++] = ids_[add[j++].idx];
      }
    }
    keys = std::move(k);
    ids = std::move(d);
  }
}

void SimHashIndex::absorb_tail() {
  merge_into(sorted_, fps_.size(), true);
  sorted_ = fps_.size();
}

void SimHashIndex::merge() {
  absorb_tail();
  if (sorted_ == merged_) return;
  // The delta's fingerprints are fps_[merged_, sorted_): merge them into the tables afresh.
  merge_into(merged_, sorted_, false);
  for (Table& t : tables_) {
    t.delta_keys.clear();
    t.delta_ids.clear();
  }
  merged_ = sorted_;
}

std::vector<std::pair<DocId, int>> SimHashIndex::query(uint64_t fp, uint64_t* compared) const {
  std::vector<std::pair<DocId, int>> out;
  std::vector<uint32_t> hits;
  uint64_t cmp = 0;
  for (const Table& t : tables_) {
    const SimHashPermutation& perm = t.perm;
    const int m = perm.matched();
    const uint64_t q = perm(fp);
    const uint64_t pre = prefix_of(q, m);
    // The range of keys whose top m bits equal q's, in the table and in its delta.
    const uint64_t lo = m == 0 ? 0 : pre << (64 - m);
    const uint64_t hi = m == 0 ? ~uint64_t{0} : lo | (m == 64 ? 0 : (~uint64_t{0} >> m));
    for (const auto* layer : {&t.keys, &t.delta_keys}) {
      const auto& keys = *layer;
      const auto& ids = layer == &t.keys ? t.ids : t.delta_ids;
      const size_t first = interpolation_lower_bound(keys.data(), keys.size(), lo);
      size_t last = first;
      while (last < keys.size() && keys[last] <= hi) ++last;
      cmp += last - first;
      hits.clear();
      close_keys(keys.data() + first, last - first, q, plan_.k, hits);
      for (uint32_t h : hits) out.push_back({ids[first + h], hamming_distance(keys[first + h], q)});
    }
  }
  // The tail, compared whole.
  cmp += fps_.size() - sorted_;
  hits.clear();
  close_keys(fps_.data() + sorted_, fps_.size() - sorted_, fp, plan_.k, hits);
  for (uint32_t h : hits) out.push_back({ids_[sorted_ + h], hamming_distance(fps_[sorted_ + h], fp)});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (compared) *compared += cmp;
  return out;
}

}  // namespace neardup
