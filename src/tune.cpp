#include "neardup/tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "internal/parallel.h"
#include "internal/sorted_merge.h"
#include "neardup/error.h"

namespace neardup {

namespace {

std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

LshChoice score(const LshParams& p, const LshTarget& t) {
  LshChoice c;
  c.params = p;
  c.p_low = lsh_probability(t.low, p.bands, p.rows);
  c.p_high = lsh_probability(t.high, p.bands, p.rows);
  c.met = c.p_high >= t.high_min && c.p_low <= t.low_max;
  c.s_low = lsh_similarity_at(t.low_max, p.bands, p.rows);
  c.s_high = lsh_similarity_at(t.high_min, p.bands, p.rows);
  c.threshold = std::pow(1.0 / p.bands, 1.0 / p.rows);
  return c;
}

// True if a is the better choice (the rule in tune.h).
bool better(const LshChoice& a, const LshChoice& b, const LshTarget& t) {
  const bool ra = a.p_high >= t.high_min, rb = b.p_high >= t.high_min;
  if (ra != rb) return ra;
  if (!ra && a.p_high != b.p_high) return a.p_high > b.p_high;
  if (a.p_low != b.p_low) return a.p_low < b.p_low;
  const long ua = static_cast<long>(a.params.bands) * a.params.rows, ub = static_cast<long>(b.params.bands) * b.params.rows;
  if (ua != ub) return ua < ub;
  return a.params.bands < b.params.bands;
}

void check_num_perm(int num_perm) {
  if (num_perm < 1 || num_perm > 65536)
    throw UsageError("number of permutations must be between 1 and 65536, got " + std::to_string(num_perm));
}

}  // namespace

void LshTarget::check() const {
  if (!(low >= 0.0 && low < high && high <= 1.0))
    throw UsageError("the low similarity (" + fmt(low) + ") must be below the high one (" + fmt(high) + "), both in [0, 1]");
  if (!(low_max > 0.0 && low_max < 1.0))
    throw UsageError("the false-positive probability must be in (0, 1), got " + fmt(low_max));
  if (!(high_min > 0.0 && high_min < 1.0))
    throw UsageError("the recall probability must be in (0, 1), got " + fmt(high_min));
}

double lsh_similarity_at(double p, int bands, int rows) {
  if (!(p > 0.0 && p < 1.0)) throw UsageError("probability must be in (0, 1), got " + fmt(p));
  double lo = 0.0, hi = 1.0;  // P(lo) < p <= P(hi); P is increasing in s
  for (int i = 0; i < 200 && hi - lo > 1e-12; ++i) {
    const double mid = 0.5 * (lo + hi);
    (lsh_probability(mid, bands, rows) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

std::vector<LshChoice> lsh_tune_all(int num_perm, const LshTarget& target) {
  check_num_perm(num_perm);
  target.check();
  std::vector<LshChoice> out;
  for (int r = 1; r <= num_perm; ++r)
    for (int b = 1; b * r <= num_perm; ++b) out.push_back(score({b, r}, target));
  return out;
}

LshChoice lsh_tune(int num_perm, const LshTarget& target) {
  check_num_perm(num_perm);
  target.check();
  // For a given r, P grows with b: the recall holds from some b on, and the fewest such bands
  // give the least P(low). So only the smallest recall-meeting b of each r, and the largest b
  // when none meets it, can win; all (b, r) are still compared, the cost is small (P log P).
  LshChoice best = score({1, 1}, target);
  for (int r = 1; r <= num_perm; ++r)
    for (int b = 1; b * r <= num_perm; ++b) {
      const LshChoice c = score({b, r}, target);
      if (better(c, best, target)) best = c;
    }
  return best;
}

int lsh_min_num_perm(const LshTarget& target, int limit) {
  target.check();
  // For each r, the fewest bands reaching the recall (b grows until P(high) >= high_min); the
  // target is met with r rows only if that b keeps P(low) low enough, since more bands only
  // raise P(low). The answer is the least b * r over such r.
  int best = 0;
  for (int r = 1; r <= limit; ++r) {
    const double q = std::pow(target.high, r);
    if (q <= 0.0) break;  // high^r underflows: no b can reach the recall
    // b >= log(1 - high_min) / log(1 - q), adjusted by direct evaluation against rounding.
    double est = std::log1p(-target.high_min) / std::log1p(-q);
    if (!(est < static_cast<double>(limit) + 1.0)) continue;
    int b = std::max(1, static_cast<int>(std::ceil(est)) - 1);
    while (lsh_probability(target.high, b, r) < target.high_min) ++b;
    while (b > 1 && lsh_probability(target.high, b - 1, r) >= target.high_min) --b;
    if (static_cast<long>(b) * r > limit) continue;
    if (lsh_probability(target.low, b, r) <= target.low_max && (best == 0 || b * r < best)) best = b * r;
  }
  return best;
}

LshChoice lsh_tune_threshold(double threshold, int num_perm, double min_recall) {
  if (!(threshold > 0.0 && threshold <= 1.0)) throw UsageError("threshold must be in (0, 1], got " + fmt(threshold));
  check_num_perm(num_perm);
  LshParams p{num_perm, 1};
  for (int r = num_perm; r >= 1; --r) {
    const int b = num_perm / r;
    if (lsh_probability(threshold, b, r) >= min_recall) {
      p = {b, r};
      break;
    }
  }
  LshChoice c;
  c.params = p;
  c.p_high = lsh_probability(threshold, p.bands, p.rows);
  c.met = c.p_high >= min_recall;
  c.s_high = min_recall > 0.0 && min_recall < 1.0 ? lsh_similarity_at(min_recall, p.bands, p.rows) : threshold;
  c.threshold = std::pow(1.0 / p.bands, 1.0 / p.rows);
  return c;
}

void SimilaritySample::add_all_pairs(std::span<const std::vector<uint64_t>> sets, int threads) {
  const size_t n = sets.size();
  std::vector<std::vector<uint64_t>> per_row(n);
  std::vector<std::vector<double>> per_row_sum(n);
  std::vector<uint64_t> per_row_zero(n, 0);
  internal::parallel_for(n, internal::resolve_threads(threads), [&](size_t i, size_t) {
    auto& h = per_row[i];
    auto& hs = per_row_sum[i];
    h.assign(kBins, 0);
    hs.assign(kBins, 0.0);
    for (size_t j = i + 1; j < n; ++j) {
      const auto& a = sets[i];
      const auto& b = sets[j];
      double s = 0.0;
      if (!a.empty() && !b.empty()) {
        const auto inter = static_cast<double>(internal::count_common(a.data(), a.size(), b.data(), b.size()));
        s = inter / (static_cast<double>(a.size() + b.size()) - inter);
      }
      if (s == 0.0) {
        ++per_row_zero[i];
        continue;
      }
      const size_t k = std::min<size_t>(kBins - 1, static_cast<size_t>(s * kBins));
      ++h[k];
      hs[k] += s;
    }
  });
  for (size_t i = 0; i < n; ++i) {
    for (int k = 0; k < kBins; ++k) {
      bins[k] += per_row[i][k];
      sums[k] += per_row_sum[i][k];
    }
    disjoint += per_row_zero[i];
  }
  sample_docs += n;
}

// The bin holding similarity t (pairs in it count as at least t: bins are 0.001 wide).
int SimilaritySample::first_bin(double t) noexcept {
  return std::clamp(static_cast<int>(t * kBins), 0, kBins - 1);
}

double SimilaritySample::predicted_candidates(const LshParams& p) const noexcept {
  const uint64_t sp = sample_pairs();
  if (sp == 0) return 0.0;
  double sum = 0.0;
  for (int k = 0; k < kBins; ++k)
    if (bins[k]) sum += static_cast<double>(bins[k]) * lsh_probability(sums[k] / static_cast<double>(bins[k]), p.bands, p.rows);
  const double n = static_cast<double>(corpus_docs);
  return sum / static_cast<double>(sp) * n * (n - 1) / 2.0;
}

double SimilaritySample::expected_recall(const LshParams& p, double t) const noexcept {
  double sum = 0.0, count = 0.0;
  for (int k = first_bin(t); k < kBins; ++k) {
    count += static_cast<double>(bins[k]);
    if (bins[k]) sum += static_cast<double>(bins[k]) * lsh_probability(sums[k] / static_cast<double>(bins[k]), p.bands, p.rows);
  }
  return count > 0 ? sum / count : -1.0;
}

uint64_t SimilaritySample::pairs_at_least(double t) const noexcept {
  uint64_t c = 0;
  for (int k = first_bin(t); k < kBins; ++k) c += bins[k];
  return c;
}

}  // namespace neardup
