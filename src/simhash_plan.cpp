// SimHash table plans (Manku, Jain and Das Sarma, WWW 2007): the permutations that bring the
// bits a table matches to the top, and the choice of tables for a distance and a collection.
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

// ---- Permutations ----

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

constexpr double kMaxTables = 4096;

}  // namespace

void internal::check_hamming(int k) {
  if (k < 0 || k > 16) throw UsageError(NEARDUP_OPT("hamming") " must be between 0 and 16 (SimHash near-duplicates are within a few bits)");
}

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
  internal::check_hamming(k);
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
  internal::check_hamming(k);
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

}  // namespace neardup
