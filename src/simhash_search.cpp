// SimHash search with the planned tables: every pair within the distance (batch), and the online
// index that answers one fingerprint at a time.
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
#include "internal/simhash_detail.h"
#include "internal/radix_sort.h"
#include "kernels/dispatch.h"
#include "kernels/simhash_kernels.h"
#include "internal/option_text.h"
#include "neardup/error.h"

namespace neardup {

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

// The distinct values among the fingerprints (skipped documents left out), and the documents of
// each: docs[group_end[v - 1], group_end[v]) hold value[v].
struct DistinctValues {
  std::vector<Entry> docs;  // sorted by fingerprint
  std::vector<uint64_t> value;
  std::vector<uint32_t> group_end;
  std::span<const Entry> group(uint32_t v) const noexcept {
    const uint32_t b = v == 0 ? 0 : group_end[v - 1];
    return std::span<const Entry>(docs.data() + b, group_end[v] - b);
  }
};

DistinctValues distinct_values(std::span<const uint64_t> fps, std::span<const uint8_t> skip) {
  DistinctValues dv;
  dv.docs.reserve(fps.size());
  for (size_t d = 0; d < fps.size(); ++d)
    if (skip.empty() || !skip[d]) dv.docs.push_back({fps[d], static_cast<uint32_t>(d)});
  std::vector<Entry> tmp(dv.docs.size());
  internal::radix_sort_by_bits(dv.docs.data(), tmp.data(), dv.docs.size(), 0, 64, [](const Entry& e) { return e.key; }, 16);
  for (size_t i = 0; i < dv.docs.size(); ++i) {
    if (i == 0 || dv.docs[i].key != dv.docs[i - 1].key) {
      if (i) dv.group_end.push_back(static_cast<uint32_t>(i));
      dv.value.push_back(dv.docs[i].key);
    }
  }
  if (!dv.docs.empty()) dv.group_end.push_back(static_cast<uint32_t>(dv.docs.size()));
  return dv;
}

// One table of the plan over the distinct values: permute, sort by the matched bits, compare
// within each run. A pair is kept by the first table that matches it (its XOR avoids that
// table's mask), so it is reported once. Returns the pairs of values; adds the comparisons made.
std::vector<HammingPair> search_table(const SimHashPlan& plan, size_t t, std::span<const uint64_t> value, uint64_t& compared) {
  const SimHashPermutation perm(plan.masks[t]);
  const int m = perm.matched();
  const size_t nv = value.size();
  const std::vector<Entry> e = permuted_entries(perm, value.data(), nv, 0, 64 - m);
  std::vector<HammingPair> out;
  std::vector<uint32_t> pa, pb;
  for (size_t i = 0; i < nv;) {
    size_t j = i + 1;
    const uint64_t pre = internal::simhash_prefix(e[i].key, m);
    while (j < nv && internal::simhash_prefix(e[j].key, m) == pre) ++j;
    if (j - i > 1) {
      compared += (j - i) * (j - i - 1) / 2;
      pa.clear();
      pb.clear();
      close_pairs(e.data() + i, j - i, plan.k, pa, pb);
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
  return out;
}

}  // namespace

std::vector<HammingPair> simhash_find_all(std::span<const uint64_t> fps, const SimHashPlan& plan, int threads,
                                          std::span<const uint8_t> skip, FindAllStats* stats) {
  internal::check_hamming(plan.k);
  // Identical fingerprints first, so that each table compares distinct values only.
  const DistinctValues dv = distinct_values(fps, skip);
  const size_t tables = plan.masks.size();
  std::vector<std::vector<HammingPair>> found(tables);
  std::vector<uint64_t> compared(tables, 0);
  internal::parallel_for(tables, threads, [&](size_t t, size_t) { found[t] = search_table(plan, t, dv.value, compared[t]); });
  // Back to documents: copies pair at distance 0; a pair of values pairs all their documents.
  std::vector<HammingPair> out;
  auto add = [&](uint32_t x, uint32_t y, int d) { out.push_back({std::min(x, y), std::max(x, y), d}); };
  for (uint32_t v = 0; v < dv.value.size(); ++v) {
    const auto g = dv.group(v);
    for (size_t i = 0; i < g.size(); ++i)
      for (size_t j = i + 1; j < g.size(); ++j) add(g[i].idx, g[j].idx, 0);
  }
  for (const auto& f : found)
    for (const HammingPair& p : f)
      for (const Entry& x : dv.group(p.a))
        for (const Entry& y : dv.group(p.b)) add(x.idx, y.idx, p.distance);
  std::sort(out.begin(), out.end(), [](const HammingPair& x, const HammingPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
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
  internal::check_hamming(plan_.k);
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
    const uint64_t pre = internal::simhash_prefix(q, m);
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
