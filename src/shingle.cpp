#include "neardup/shingle.h"

#include <algorithm>
#include <array>
#include <bit>

#include "internal/scratch.h"
#include "internal/hash.h"
#include "internal/hash_partition.h"
#include "internal/parallel.h"
#include "internal/realloc_buffer.h"
#include "internal/sorted_merge.h"
#include "kernels/dispatch.h"
#include "kernels/shingle_kernels.h"
#include "internal/option_text.h"
#include "neardup/cpu.h"
#include "neardup/error.h"
#include "neardup/text.h"

namespace neardup {

uint64_t combine_tokens(std::span<const uint64_t> token_hashes, uint64_t seed) noexcept {
  uint64_t y = 0;
  for (size_t j = 0; j < token_hashes.size(); ++j) y ^= std::rotl(token_hashes[j], static_cast<int>((j * kShingleRotation) & 63));
  return internal::fmix64(y ^ seed ^ (token_hashes.size() * internal::kGolden));
}

namespace {

// combine_tokens for every window of k tokens (n >= k), with the kernel of the CPU.
void combine_all(const uint64_t* t, size_t n, size_t k, uint64_t seed, ShingleHash* out) noexcept {
  const uint64_t c = seed ^ (k * internal::kGolden);
  internal::kernels().combine_shingles(t, n, k, c, out);
}

}  // namespace

Shingler::Shingler(const ShingleOptions& options)
    : options_(options),
      // Word hashes use the seed itself; the combination a derived one, so that a 1-token shingle
      // is not its token hash.
      token_seed_(options.seed),
      combine_seed_(internal::fmix64(options.seed + 0x5348494E474C45ULL)) {
  if (options.k < 1 || options.k > 64)
    throw UsageError("shingle size must be between 1 and 64, got " + std::to_string(options.k));
  if (options.word_break == WordBreak::Icu) {
    if (options.kind != ShingleKind::Words) throw UsageError("ICU word break applies to word shingles, not " NEARDUP_OPT("chars"));
    icu_ = std::make_unique<IcuWordBreaker>();
  }
}

template <class Out>
void Shingler::shingles_to(std::string_view text, Out& out) {
  out.clear();
  tokens_.clear();
  if (options_.normalize == Normalization::Nfkc) {
    normalize_text(text, normalized_);
    text = normalized_;
  }
  if (icu_)
    icu_->hash_words(text, token_seed_, tokens_);
  else if (options_.kind == ShingleKind::Words)
    hash_words(text, token_seed_, tokens_);
  else
    hash_chars(text, token_seed_, tokens_);
  shingles_of_words_to(tokens_, out);
}

void Shingler::shingles(std::string_view text, std::vector<ShingleHash>& out) { shingles_to(text, out); }
void Shingler::shingles(std::string_view text, HashVector& out) { shingles_to(text, out); }

bool Shingler::splits_at_spaces() const noexcept {
  return options_.kind == ShingleKind::Words && !icu_ && options_.normalize != Normalization::Nfkc;
}

void Shingler::words(std::string_view text, HashVector& tokens) const {
  NEARDUP_ASSERT(splits_at_spaces());
  hash_words(text, token_seed_, tokens);
}

template <class Out>
void Shingler::shingles_of_words_to(std::span<const uint64_t> t, Out& out) const {
  out.clear();
  const size_t n = t.size(), k = static_cast<size_t>(options_.k);
  if (n == 0) return;
  if (n <= k) {
    out.push_back(combine_tokens(t, combine_seed_));
    return;
  }
  out.resize(n - k + 1);
  combine_all(t.data(), n, k, combine_seed_, out.data());
}

void Shingler::shingles_of_words(std::span<const uint64_t> t, HashVector& out) const { shingles_of_words_to(t, out); }

std::vector<ShingleHash> Shingler::shingle_set(std::string_view text) {
  shingles(text, shingles_);
  std::vector<ShingleHash> set = sorted_set(shingles_);
  internal::trim_scratch(shingles_);
  return set;
}

void Shingler::trim() noexcept {
  internal::trim_scratch(tokens_);
  internal::trim_scratch(normalized_);
  internal::trim_scratch(shingles_);
}

size_t Shingler::scratch_bytes() const noexcept {
  return tokens_.capacity() * sizeof(uint64_t) + normalized_.capacity() + shingles_.capacity() * sizeof(ShingleHash);
}

namespace {

// Insertion sort: fast where values have only a few places to move (a bucket pass's output, where
// a bucket holds about one value, or a handful of values). The first step back is taken without a
// branch, as a compare-and-swap of neighbours: a branch on whether a value moves at all
// mispredicted wherever two values shared a bucket in the wrong order. Only a value that must move
// further back branches, and that is rare. The sets of real texts: 2.87 -> 2.46 ms on the news
// sample, 118 -> 101 ms on 150 MB of the crowded mix (BM_MakeSetText, medians of 4-6 alternating
// runs). BM_MakeSet is slower with it (36 -> 43 us at 10,000 hashes): it sorts the same array at
// every iteration, whose branches the predictor learns.
void insertion_sort(ShingleHash* v, size_t n) noexcept {
  if (n < 2) return;
  ShingleHash p1 = v[0], p2 = 0;  // v[i - 1] and (from i = 2) v[i - 2] of the sorted prefix
  for (size_t i = 1; i < n; ++i) {
    const ShingleHash x = v[i];
    const bool lt = x < p1;
    const bool further = lt & (i > 1) & (p2 > x);
    const ShingleHash lo = lt ? x : p1, hi = lt ? p1 : x;
    v[i - 1] = lo;
    v[i] = hi;
    p1 = hi;
    p2 = lo;
    if (further) [[unlikely]] {
      size_t j = i - 1;
      for (; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];
      v[j] = x;
      p2 = v[i - 1];
    }
  }
}

// Appends the distinct values of the sorted v[0, n) at w (w <= v: the copy runs forward).
// Without a branch: every value is written, and the end moves past it only if it differs from the
// one before, so up to n places from w may be written. Real texts repeat shingles at random
// (source code often), which the branch mispredicted: the sets of 150 MB of the crowded mix took
// 145 ms with it and 117 ms without (BM_MakeSetText, 3 alternating runs).
ShingleHash* append_distinct(const ShingleHash* v, size_t n, ShingleHash* w) noexcept {
  if (n == 0) return w;
  ShingleHash prev = v[0];
  *w++ = prev;
  for (size_t i = 1; i < n; ++i) {
    const ShingleHash x = v[i];
    *w = x;
    w += x != prev;
    prev = x;
  }
  return w;
}

// One most-significant-digit pass: the n hashes of the runs each_run(f) passes to f(run, length),
// whose top `done` bits are all equal, are counted and scattered into scratch[0, n) by the next b
// bits, 2^b between n and 2n buckets so that most hold one hash or none (the hashes are uniform);
// an insertion pass then moves the few that share a bucket, and the distinct values are appended
// at w (twice as many buckets cost more in counting and prefix sums than the insertion pass
// saves: 15% slower at 10,000 hashes). w may be a run or scratch, or precede them, provided it
// never passes the bucket being read.
template <class EachRun, class Count>
ShingleHash* bucket_sort_unique_runs(EachRun&& each_run, size_t n, ShingleHash* scratch, int done, ShingleHash* w,
                                     std::vector<Count>& count) {
  const int b = std::clamp(static_cast<int>(std::bit_width(n)), 1, 16);
  const int shift = 64 - done - b;
  const uint64_t mask = (uint64_t{1} << b) - 1;
  const size_t buckets = size_t{1} << b;
  count.assign(buckets + 1, 0);
  each_run([&](const ShingleHash* src, size_t len) {
    for (size_t i = 0; i < len; ++i) ++count[((src[i] >> shift) & mask) + 1];
  });
  for (size_t d = 1; d <= buckets; ++d) count[d] += count[d - 1];
  each_run([&](const ShingleHash* src, size_t len) {
    for (size_t i = 0; i < len; ++i) scratch[count[(src[i] >> shift) & mask]++] = src[i];
  });
  insertion_sort(scratch, n);
  return append_distinct(scratch, n, w);
}

// With fewer than 2^16 hashes no count or sum passes 16 bits: the counts take half the room (up to
// 2^16 buckets: 128 KB rather than 256 KB; 32 KB, the first level of the cache, at 10,000 hashes).
// The sets of 150 MB of the crowded mix: 115 -> 107 ms (BM_MakeSetText, medians of 4 alternating
// runs), BM_MakeSet 9-10% at 1,000 and 10,000 hashes.
struct BucketCounts {
  std::vector<uint16_t> narrow;
  std::vector<uint32_t> wide;
  void trim() noexcept {
    internal::trim_scratch(narrow);
    internal::trim_scratch(wide);
  }
};

// bucket_sort_unique_runs with the narrowest counts that hold n.
template <class EachRun>
ShingleHash* bucket_sort_unique_runs(EachRun&& each_run, size_t n, ShingleHash* scratch, int done, ShingleHash* w,
                                     BucketCounts& count) {
  return n < (size_t{1} << 16) ? bucket_sort_unique_runs(each_run, n, scratch, done, w, count.narrow)
                               : bucket_sort_unique_runs(each_run, n, scratch, done, w, count.wide);
}

ShingleHash* bucket_sort_unique(const ShingleHash* src, ShingleHash* scratch, size_t n, int done, ShingleHash* w,
                                BucketCounts& count) {
  return bucket_sort_unique_runs([&](auto&& f) { f(src, n); }, n, scratch, done, w, count);
}

// Room for n hashes in a thread's scratch buffer (grown, never shrunk here: trim_scratch).
ShingleHash* hash_scratch(internal::ReallocBuffer& b, size_t n) {
  if (b.size() < n * sizeof(ShingleHash)) b.resize(n * sizeof(ShingleHash));
  return reinterpret_cast<ShingleHash*>(b.data());
}

}  // namespace

void shrink_set(std::vector<ShingleHash>& set) {
  // Sets are kept (for verification): many repeated shingles must not keep their room.
  if (set.capacity() - set.size() > set.size() / 16 + 64) set.shrink_to_fit();
}

std::vector<ShingleHash> sorted_set(std::span<const ShingleHash> hashes) {
  // A most-significant-digit bucket sort (bucket_sort_unique): shingle hashes are uniform, so
  // buckets of about log2(n) bits leave little for the insertion pass after them (hashes that are
  // not uniform would make it quadratic). Above 2^18 hashes a first pass by the top 8 bits keeps
  // the scatter's 256 streams within the TLB and each bucket within the cache. Against the LSD
  // radix sort of the top 32 bits it replaced: 2.5x at 1,000 hashes, 1.65x at 10,000, 1.13x at
  // 100,000, 0.82x at 1M (bench/stages_bench.cpp, BM_MakeSet).
  //
  // Only 16 hashes or fewer are left to the insertion sort alone: the sets of short texts (30-60
  // words) took 6.4% of a dedup of 1M of them in std::sort, 1.6% in the bucket pass.
  //
  // The sort runs in this thread's scratch and the set is allocated once at its final size,
  // rather than at the size of its shingles and then shrunk (a copy, and the larger block left
  // free beside the kept set).
  const size_t n = hashes.size();
  if (n <= 16) {
    std::vector<ShingleHash> out(hashes.begin(), hashes.end());
    insertion_sort(out.data(), n);
    out.resize(static_cast<size_t>(append_distinct(out.data(), n, out.data()) - out.data()));
    return out;
  }
  thread_local BucketCounts count;
  thread_local internal::ReallocBuffer scratch_a, scratch_b;
  ShingleHash* a = hash_scratch(scratch_a, n);
  const ShingleHash* v = hashes.data();
  ShingleHash* w = a;
  if (n <= (size_t{1} << 18)) {
    w = bucket_sort_unique(v, a, n, 0, w, count);
  } else {
    ShingleHash* b = hash_scratch(scratch_b, n);
    std::array<size_t, 257> at{};
    for (size_t i = 0; i < n; ++i) ++at[(v[i] >> 56) + 1];
    for (size_t d = 1; d <= 256; ++d) at[d] += at[d - 1];
    std::array<size_t, 257> next = at;
    for (size_t i = 0; i < n; ++i) b[next[v[i] >> 56]++] = v[i];
    // Bucket d is read from b and scattered into a at its own place, which the distinct values
    // of the buckets before it (written at w) cannot have reached.
    for (size_t d = 0; d < 256; ++d)
      w = bucket_sort_unique(b + at[d], a + at[d], at[d + 1] - at[d], 8, w, count);
  }
  std::vector<ShingleHash> out(a, w);
  internal::trim_scratch(scratch_a);
  internal::trim_scratch(scratch_b);
  count.trim();
  return out;
}

namespace internal {

int HashPartition::top_bits(size_t n) noexcept {
  // About 4,096 hashes a bucket: 32 KB, sorted in the first level of the cache.
  return std::clamp(static_cast<int>(std::bit_width(n / 4096)), 1, 12);
}

HashPartition::HashPartition(size_t parts, size_t expected) : bits_(top_bits(expected)), buckets_(size_t{1} << bits_), parts_(parts) {}

void HashPartition::add(size_t part, std::span<const ShingleHash> hashes) {
  if (hashes.size() > UINT32_MAX) throw UsageError("HashPartition::add: a part holds under 2^32 hashes (cut the text into smaller pieces)");
  Part& p = parts_.at(part);
  const int shift = 64 - bits_;
  p.start.assign(buckets_ + 1, 0);
  for (const ShingleHash h : hashes) ++p.start[(h >> shift) + 1];
  for (size_t d = 1; d <= buckets_; ++d) p.start[d] += p.start[d - 1];
  p.hashes = std::make_unique_for_overwrite<ShingleHash[]>(hashes.size());
  thread_local std::vector<uint32_t> next;
  next.assign(p.start.begin(), p.start.end() - 1);
  ShingleHash* out = p.hashes.get();
  for (const ShingleHash h : hashes) out[next[h >> shift]++] = h;
}

template <class F>
void HashPartition::each_bucket(int threads, F&& f) {
  const size_t chunk = std::max<size_t>(1, buckets_ / 64);
  parallel_for((buckets_ + chunk - 1) / chunk, threads, [&](size_t c, size_t slot) {
    for (size_t d = c * chunk; d < std::min(buckets_, (c + 1) * chunk); ++d) f(d, slot);
  });
}

template <class OnBucket>
void HashPartition::distinct_buckets(int threads, OnBucket&& on_bucket) {
  each_bucket(threads, [&](size_t d, size_t slot) {
    thread_local BucketCounts count;
    thread_local ReallocBuffer scratch;
    size_t n = 0;
    each_run(d, [&](const ShingleHash*, size_t len) { n += len; });
    if (n == 0) return;
    ShingleHash* s = hash_scratch(scratch, n);
    const ShingleHash* end = bucket_sort_unique_runs([&](auto&& f) { each_run(d, f); }, n, s, bits_, s, count);
    on_bucket(d, slot, std::span<const ShingleHash>(s, end));
    trim_scratch(scratch);
    count.trim();
  });
}

std::vector<ShingleHash> HashPartition::sorted_set(int threads) {
  // Each bucket's distinct hashes are written back over its own runs, in order (there are no
  // more of them than it held), and copied into the set once every bucket's count is known.
  std::vector<size_t> distinct(buckets_ + 1, 0);
  distinct_buckets(threads, [&](size_t d, size_t, std::span<const ShingleHash> set) {
    distinct[d + 1] = set.size();
    const ShingleHash* from = set.data();
    each_run(d, [&](ShingleHash* run, size_t len) {
      const size_t take = std::min(len, static_cast<size_t>(set.data() + set.size() - from));
      std::copy(from, from + take, run);
      from += take;
    });
  });
  for (size_t d = 1; d <= buckets_; ++d) distinct[d] += distinct[d - 1];
  std::vector<ShingleHash> out(distinct[buckets_]);
  each_bucket(threads, [&](size_t d, size_t) {
    ShingleHash* to = out.data() + distinct[d];
    size_t left = distinct[d + 1] - distinct[d];
    each_run(d, [&](const ShingleHash* run, size_t len) {
      const size_t take = std::min(len, left);
      to = std::copy(run, run + take, to);
      left -= take;
    });
  });
  parts_.clear();
  return out;
}

void HashPartition::for_each_distinct(int threads, const std::function<void(size_t, std::span<const ShingleHash>)>& fn) {
  distinct_buckets(threads, [&](size_t, size_t slot, std::span<const ShingleHash> set) { fn(slot, set); });
  parts_.clear();
}

}  // namespace internal

double jaccard(std::span<const ShingleHash> a, std::span<const ShingleHash> b) noexcept {
  if (a.empty() || b.empty()) return 0.0;
  // One stored copy (ShingleSets shares identical sets): every hash is common.
  if (a.data() == b.data() && a.size() == b.size()) return 1.0;
  const auto inter = static_cast<size_t>(internal::kernels().set_common_at_least(a.data(), a.size(), b.data(), b.size(), 0));
  return static_cast<double>(inter) / static_cast<double>(a.size() + b.size() - inter);
}

double jaccard_at_least(std::span<const ShingleHash> a, std::span<const ShingleHash> b, double floor) noexcept {
  if (a.empty() || b.empty() || floor <= 0 || (a.data() == b.data() && a.size() == b.size())) return jaccard(a, b);
  // J = c / (la + lb - c) >= floor exactly when c >= floor (la + lb) / (1 + floor); the bound
  // is lowered by a margin so that rounding never rejects a pair that reaches it.
  const double total = static_cast<double>(a.size() + b.size());
  const auto need = static_cast<long>(floor * total / (1 + floor) * (1 - 1e-9));
  if (static_cast<long>(std::min(a.size(), b.size())) < need) return 0.0;
  const long inter = internal::kernels().set_common_at_least(a.data(), a.size(), b.data(), b.size(), need);
  if (inter < 0) return 0.0;
  return static_cast<double>(inter) / (total - static_cast<double>(inter));
}

}  // namespace neardup
