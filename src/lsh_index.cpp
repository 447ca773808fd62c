#include "neardup/lsh_index.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "internal/hash.h"
#include "internal/parallel.h"
#include "neardup/error.h"
#include "neardup/tune.h"

namespace neardup {

double lsh_probability(double s, int bands, int rows) noexcept {
  return 1.0 - std::pow(1.0 - std::pow(s, rows), bands);
}

LshParams choose_lsh_params(double threshold, int num_perm) { return lsh_tune_threshold(threshold, num_perm).params; }

uint64_t band_key(std::span<const SigValue> band_values, int band, uint64_t seed) noexcept {
  return internal::hash_bytes(band_values.data(), band_values.size_bytes(), seed + static_cast<uint64_t>(band));
}

bool share_band(std::span<const SigValue> a, std::span<const SigValue> b, const LshParams& p) noexcept {
  for (int band = 0; band < p.bands; ++band) {
    const size_t off = static_cast<size_t>(band) * p.rows;
    if (std::equal(a.begin() + off, a.begin() + off + p.rows, b.begin() + off)) return true;
  }
  return false;
}

std::vector<DocPair> lsh_candidates(std::span<const SigValue> sigs, size_t k, std::span<const uint8_t> skip,
                                    const LshParams& params, uint64_t seed, int threads, CandidateStats* stats) {
  if (params.bands < 1 || params.rows < 1 || static_cast<size_t>(params.bands) * params.rows > k)
    throw UsageError("LSH needs bands x rows <= permutations, got " + std::to_string(params.bands) + "x" +
                     std::to_string(params.rows) + " for " + std::to_string(k));
  const size_t n = k == 0 ? 0 : sigs.size() / k;
  std::vector<std::vector<DocPair>> per_band(params.bands);
  std::vector<uint64_t> largest(params.bands, 0), entries(params.bands, 0);

  internal::parallel_for(static_cast<size_t>(params.bands), threads, [&](size_t band, size_t) {
    struct Entry {
      uint64_t key;
      DocId doc;
    };
    std::vector<Entry> e;
    e.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!skip.empty() && skip[i]) continue;
      e.push_back({signature_band_key(sigs.subspan(i * k, k), static_cast<int>(band), params, seed), static_cast<DocId>(i)});
    }
    std::sort(e.begin(), e.end(), [](const Entry& x, const Entry& y) {
      return x.key != y.key ? x.key < y.key : x.doc < y.doc;
    });
    std::vector<DocPair>& out = per_band[band];
    for (size_t i = 0; i < e.size();) {
      size_t j = i + 1;
      while (j < e.size() && e[j].key == e[i].key) ++j;
      for (size_t m = i + 1; m < j; ++m) out.push_back({e[i].doc, e[m].doc});
      largest[band] = std::max<uint64_t>(largest[band], j - i);
      i = j;
    }
    entries[band] = e.size();
  });

  size_t total = 0;
  for (const auto& v : per_band) total += v.size();
  std::vector<DocPair> all;
  all.reserve(total);
  for (auto& v : per_band) {
    all.insert(all.end(), v.begin(), v.end());
    std::vector<DocPair>().swap(v);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (stats) {
    stats->largest_bucket = *std::max_element(largest.begin(), largest.end());
    stats->bucket_entries = 0;
    for (uint64_t x : entries) stats->bucket_entries += x;
  }
  return all;
}

}  // namespace neardup
