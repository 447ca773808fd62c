#include "neardup/bottomk.h"
#include "internal/testing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "internal/bucket_sort.h"
#include "internal/sorted_merge.h"
#include "kernels/dispatch.h"
#include "kernels/jaccard_kernels.h"
#include "neardup/error.h"

namespace neardup {
namespace {

void check_size(int n) {
  if (n < 1 || n > 65536) throw UsageError("sketch size must be between 1 and 65536, got " + std::to_string(n));
}

}  // namespace

// ---- BottomKSelector ----

BottomKSelector::BottomKSelector(int size) : n_(size) {
  check_size(size);
  cap_ = std::max<size_t>(64, 4 * static_cast<size_t>(size));
  buf_.resize(cap_ + 1);
}

void BottomKSelector::reset() noexcept {
  len_ = 0;
  compact_len_ = kNever;
  thr_ = 0xFFFFFFFFu;
  full_ = false;
  has_max_ = false;
}

void BottomKSelector::compact() noexcept {
  // Every buffered value is below thr_ (or is the one 0xFFFFFFFF that finish() adds): sort them
  // by bucket (they are hashes, spread evenly below thr_), keep the first N distinct.
  const size_t n = static_cast<size_t>(n_);
  SigValue* b = buf_.data();
  internal::bucket_sort_u32(b, len_, static_cast<uint64_t>(thr_) + 1, scratch_);
  size_t kept = 0;
  for (size_t i = 0; i < len_ && kept < n; ++i)
    if (kept == 0 || b[i] != b[kept - 1]) b[kept++] = b[i];
  len_ = kept;
  compact_len_ = kept;
  if (kept == n) {
    // From now on only values below the N-th smallest can enter; it is itself kept, so an equal
    // value later is a repeat.
    thr_ = b[n - 1];
    full_ = true;
    has_max_ = false;
  }
}

void BottomKSelector::add_value(SigValue v) noexcept {
  // Branch-free: the value is always written, and kept only if it is under the threshold.
  buf_[len_] = v;
  len_ += (v < thr_);
  if (v == 0xFFFFFFFFu && !full_) has_max_ = true;
  if (len_ == cap_) compact();
}

void BottomKSelector::add(std::span<const ShingleHash> shingles) noexcept {
  // A fresh selector given a whole document of m > N shingles guesses the threshold: the number
  // of m uniform values under g = (N + 4 sqrt(N) + 16) / m of the range is about N + 4 sqrt(N)
  // + 16, and fewer than N with probability under 1e-4, so one short sort ends the pass. If
  // repeats leave fewer than N distinct values under the guess, values above it were needed:
  // the pass runs again with the guess doubled, and finally with no guess.
  const size_t m = shingles.size();
  const bool fresh = len_ == 0 && !full_ && !has_max_;
  if (fresh && m > static_cast<size_t>(n_)) {
    const double nn = n_;
    double guess = (nn + 4.0 * std::sqrt(nn) + 16.0) / static_cast<double>(m) * 4294967296.0;
    while (guess < 4294967295.0) {
      thr_ = static_cast<SigValue>(guess);
      add_all(shingles);
      compact();
      if (full_) return;
      reset();
      guess *= 2.0;
    }
  }
  add_all(shingles);
}

void BottomKSelector::add_all(std::span<const ShingleHash> shingles) noexcept {
  // add_value's loop with the state in registers: a value under the threshold is written and
  // kept without a branch; the rare cases (a full buffer, the value 0xFFFFFFFF) leave the loop.
  SigValue* buf = buf_.data();
  size_t len = len_;
  SigValue thr = thr_;
  for (ShingleHash s : shingles) {
    const SigValue v = bottomk_value(s);
    buf[len] = v;
    len += (v < thr);
    if (len == cap_ || v == 0xFFFFFFFFu) [[unlikely]] {
      len_ = len - (v < thr);
      add_value(v);
      len = len_;
      thr = thr_;
    }
  }
  len_ = len;
}

void BottomKSelector::finish(std::vector<SigValue>& out) {
  if (has_max_ && !full_) buf_[len_++] = 0xFFFFFFFFu;  // the one value the threshold test drops
  if (len_ != compact_len_) compact();  // nothing came in since the last compaction: it stands
  out.assign(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(len_));
  reset();
}

// ---- BottomKHeapTable ----

BottomKHeapTable::BottomKHeapTable(int size) : n_(size) {
  check_size(size);
  size_t slots = 1;
  while (slots < 4 * static_cast<size_t>(size)) slots <<= 1;
  table_.assign(slots, kEmpty);
  mask_ = static_cast<uint32_t>(slots - 1);
  heap_.reserve(static_cast<size_t>(size));
}

void BottomKHeapTable::reset() noexcept {
  heap_.clear();
  std::fill(table_.begin(), table_.end(), kEmpty);
  used_ = 0;
  has_max_ = false;
}

bool BottomKHeapTable::table_insert(SigValue v) noexcept {
  // Values are hashes already: their low bits pick the slot.
  for (uint32_t slot = v & mask_;; slot = (slot + 1) & mask_) {
    if (table_[slot] == v) return false;
    if (table_[slot] == kEmpty) {
      table_[slot] = v;
      ++used_;
      return true;
    }
  }
}

void BottomKHeapTable::rebuild() noexcept {
  std::fill(table_.begin(), table_.end(), kEmpty);
  used_ = 0;
  for (SigValue v : heap_)
    if (v != kEmpty) table_insert(v);
}

void BottomKHeapTable::add_value(SigValue v) noexcept {
  const bool filling = heap_.size() < static_cast<size_t>(n_);
  if (v == kEmpty) {  // the table's empty marker: tracked by a flag, and only ever the largest value
    if (filling && !has_max_) {
      has_max_ = true;
      heap_.push_back(v);
      std::push_heap(heap_.begin(), heap_.end());
    }
    return;
  }
  if (!filling && v >= heap_.front()) return;
  if (!table_insert(v)) return;
  if (!filling) {
    std::pop_heap(heap_.begin(), heap_.end());
    if (heap_.back() == kEmpty) has_max_ = false;
    heap_.back() = v;
  } else {
    heap_.push_back(v);
  }
  std::push_heap(heap_.begin(), heap_.end());
  if (used_ >= 2 * static_cast<size_t>(n_)) rebuild();
}

void BottomKHeapTable::add(std::span<const ShingleHash> shingles) noexcept {
  for (ShingleHash s : shingles) add_value(bottomk_value(s));
}

void BottomKHeapTable::finish(std::vector<SigValue>& out) {
  out.assign(heap_.begin(), heap_.end());
  std::sort(out.begin(), out.end());
  reset();
}

std::vector<SigValue> bottomk_fingerprint(std::span<const ShingleHash> shingles, int size) {
  BottomKSelector sel(size);
  sel.add(shingles);
  std::vector<SigValue> out;
  sel.finish(out);
  return out;
}

// ---- Comparisons ----

namespace {

// The contract of the abort variants: the value if it reaches alpha, else kAborted. The merge
// may finish without aborting on a pair below alpha; normalising makes every variant agree.
double at_least(double j, double alpha) noexcept { return j < alpha ? kAborted : j; }

}  // namespace

long fingerprint_abort_bound(double alpha, size_t la, size_t lb) noexcept {
  return static_cast<long>(std::ceil((1.0 - alpha) / (1.0 + alpha) * static_cast<double>(la + lb)));
}

double fingerprint_jaccard(std::span<const SigValue> a, std::span<const SigValue> b) noexcept {
  return jaccard_from_common(internal::count_common(a.data(), a.size(), b.data(), b.size()), a.size(), b.size());
}

double fingerprint_jaccard_abort(std::span<const SigValue> a, std::span<const SigValue> b, double alpha) noexcept {
  const long smax = fingerprint_abort_bound(alpha, a.size(), b.size());
  size_t i = 0, j = 0;
  long common = 0, s = 0;
  while (i < a.size() && j < b.size()) {
    internal::merge_step(a.data(), b.data(), i, j, common, s);
    if (s > smax) return kAborted;
  }
  return at_least(jaccard_from_common(common, a.size(), b.size()), alpha);
}

double fingerprint_jaccard_fast(std::span<const SigValue> a, std::span<const SigValue> b, double alpha,
                                Isa isa) noexcept {
  const long smax = fingerprint_abort_bound(alpha, a.size(), b.size());
  const long common = internal::kernels(isa).jaccard_block(a.data(), a.size(), b.data(), b.size(), smax);
  if (common < 0) return kAborted;
  return at_least(jaccard_from_common(common, a.size(), b.size()), alpha);
}

double fingerprint_jaccard_fast(std::span<const SigValue> a, std::span<const SigValue> b, double alpha) noexcept {
  // The 8-wide walk wins on AVX-512 machines too (BENCHMARKS.md: 16-value blocks hold a common
  // value more often, so fewer of them are skipped, and each test costs 16 rotations).
  const long smax = fingerprint_abort_bound(alpha, a.size(), b.size());
  const long common = internal::kernels().jaccard_walk(a.data(), a.size(), b.data(), b.size(), smax);
  if (common < 0) return kAborted;
  return at_least(jaccard_from_common(common, a.size(), b.size()), alpha);
}

long count_common_abort(std::span<const SigValue> a, std::span<const SigValue> b, long smax) noexcept {
  if (smax < 0) return -1;
  return internal::kernels().jaccard_walk(a.data(), a.size(), b.data(), b.size(), smax);
}

double bottomk_estimate(std::span<const SigValue> a, std::span<const SigValue> b, int n) noexcept {
  const size_t limit = static_cast<size_t>(n);
  size_t i = 0, j = 0, seen = 0, both = 0;
  while (seen < limit && (i < a.size() || j < b.size())) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ++both, ++i, ++j;
    } else if (j >= b.size() || (i < a.size() && a[i] < b[j])) {
      ++i;
    } else {
      ++j;
    }
    ++seen;
  }
  return seen == 0 ? 0.0 : static_cast<double>(both) / static_cast<double>(seen);
}

namespace {
double three_sigma(double j, int n) noexcept { return 3.0 * std::sqrt(j * (1.0 - j) / static_cast<double>(n)); }
}  // namespace

double bottomk_screen_threshold(double j, int n) noexcept {
  j = std::clamp(j, 0.0, 1.0);
  // J - 3 sigma(J) falls, then rises (it is increasing above J = 1/2): a fine grid over [j, 1]
  // finds its least value.
  double best = j - three_sigma(j, n);
  constexpr int kSteps = 1000;
  for (int i = 1; i <= kSteps; ++i) {
    const double x = j + (1.0 - j) * i / kSteps;
    best = std::min(best, x - three_sigma(x, n));
  }
  return std::max(best, 0.01);
}

double bottomk_lower_bound(double e, int n) noexcept {
  // f(J) = J + 3 sigma(J) rises from f(0) = 0, then may fall towards f(1) = 1, but stays >= e on
  // [first crossing, e] since f(e) >= e: "f(J) >= e" is monotone on [0, e], so bisect.
  e = std::clamp(e, 0.0, 1.0);
  double lo = 0.0, hi = e;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid + three_sigma(mid, n) >= e)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

double bottomk_candidate_threshold(double t, int n) noexcept {
  return std::min(t, bottomk_screen_threshold(std::min(1.0, t + 0.05), n));
}

}  // namespace neardup
