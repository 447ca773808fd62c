#include "neardup/setjoin.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cmath>

#include "internal/big_array.h"
#include "internal/dense_postings.h"
#include "kernels/dispatch.h"
#include "kernels/jaccard_kernels.h"
#include "internal/parallel.h"
#include "internal/pivot_delta.h"
#include "internal/prefix_ranking.h"
#include "internal/radix_sort.h"
#include "neardup/union_find.h"
#include "neardup/bottomk.h"
#include "neardup/error.h"

namespace neardup {

ExactThreshold ExactThreshold::from(double t) noexcept {
  constexpr uint64_t kDen = 1000000000;
  ExactThreshold e;
  e.den = kDen;
  const double scaled = std::round(std::clamp(t, 0.0, 1.0) * static_cast<double>(kDen));
  e.num = std::max<uint64_t>(1, static_cast<uint64_t>(scaled));
  return e;
}

// Named apart from allpairs.cpp's, whose postings and candidates differ: the two files may be
// compiled as one (CMAKE_UNITY_BUILD).
namespace {

// A probing thread's scratch: the places of the fresh members of a list, the bitmap of the
// members met (internal::DensePostings), and the members set in it outside a dense walk.
struct ProbeScratch {
  std::vector<uint32_t> found;
  std::vector<uint64_t> met;
  std::vector<uint32_t> met_sparse;
};

struct JoinCandidate {
  uint32_t y;       // member
  uint32_t ix, iy;  // the first common shingle: ranks[x][ix] == ranks[y][iy]
};

// One member's ranks as a bitmap over its join's ranks, set when a candidate first needs it
// (SetJoin::Impl::overlap) and cleared once the member's candidates are counted: between members
// a thread's bitmap is all zeros, so setting and clearing cost the member's ranks, not the
// bitmap's size.
class MemberBits {
 public:
  explicit MemberBits(size_t words = 0) : bits_(words, 0) {}
  /// The bitmap of `ranks`, which stay the same until clear().
  const uint64_t* of(std::span<const uint32_t> ranks) noexcept {
    if (!set_) {
      for (const uint32_t v : ranks) bits_[v >> 6] |= uint64_t{1} << (v & 63);
      ranks_ = ranks;
      set_ = true;
    }
    return bits_.data();
  }
  void clear() noexcept {
    if (!set_) return;
    for (const uint32_t v : ranks_) bits_[v >> 6] = 0;
    set_ = false;
  }

 private:
  std::vector<uint64_t> bits_;
  std::span<const uint32_t> ranks_;
  bool set_ = false;
};

// A probe's candidates put in member order: each marked in a bitmap over the members (all clear
// between probes) with its place, then read back word by word, at the cost of the candidates and
// of the words between the first and the last; a few candidates over a wide range are sorted.
// Sorting a probe's few hundred candidates took 13% of the listing's time on families of
// near-copies (BM_SetJoinPairs).
class MemberOrder {
 public:
  /// `cand` (members below `members`) in member order, until the next call.
  std::span<const JoinCandidate> order(const std::vector<JoinCandidate>& cand, size_t members) {
    std::vector<JoinCandidate>& out = out_;
    out.clear();
    if (cand.empty()) return out;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (const JoinCandidate& c : cand) {
      lo = std::min(lo, c.y >> 6);
      hi = std::max(hi, c.y >> 6);
    }
    if (hi - lo + 1 > 4 * cand.size()) {
      out.assign(cand.begin(), cand.end());
      std::sort(out.begin(), out.end(), [](const JoinCandidate& p, const JoinCandidate& q) { return p.y < q.y; });
      return out;
    }
    if (at_.size() < members) {
      bits_.resize((members + 63) / 64, 0);
      at_.resize(members);
    }
    for (uint32_t i = 0; i < cand.size(); ++i) {
      const uint32_t y = cand[i].y;
      bits_[y >> 6] |= uint64_t{1} << (y & 63);
      at_[y] = i;
    }
    for (uint32_t w = lo; w <= hi; ++w) {
      for (uint64_t b = bits_[w]; b != 0; b &= b - 1) out.push_back(cand[at_[(w << 6) + static_cast<uint32_t>(std::countr_zero(b))]]);
      bits_[w] = 0;
    }
    return out;
  }

 private:
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> at_;
  std::vector<JoinCandidate> out_;
};

// The pairs of `pairs` (sorted by (a, b)) whose first document is a.
std::span<const ScoredPair> pairs_from(std::span<const ScoredPair> pairs, DocId a) noexcept {
  const auto lo = std::lower_bound(pairs.begin(), pairs.end(), a, [](const ScoredPair& p, DocId d) { return p.a < d; });
  auto hi = lo;
  while (hi != pairs.end() && hi->a == a) ++hi;
  return {lo, hi};
}

}  // namespace

struct SetJoin::Impl {
  ExactThreshold thr;
  int threads = 1;
  // The kernels of the level active when the join was built, looked up once: a probe and a
  // count per candidate pair would otherwise look the table up each time.
  const internal::Kernels* kern = &internal::kernels();
  std::vector<DocId> docs;
  internal::SharedRanks ranked;
  // The postings of rank r: [head[r], head[r + 1]), ascending by member, as two arrays: each
  // posting's member, and the rank's place among the member's ranks. A probe tests the members
  // of its ranks' lists (internal::unmarked_members), most of them met before for the same
  // member in a dense family, and reads the place of those met the first time.
  std::vector<uint64_t> head;
  internal::BigArray<uint32_t> post_member, post_pos;
  // Member x's prefix, in shared ranks: its first plen(x) ranks, indexed from prefix_at[x]. Its
  // own place in the list of its i-th prefix rank is self_at[prefix_at[x] + i]: its probe splits
  // each list there, at the members after it, where a binary search of each list missed the
  // cache at most of its steps (15% of the listing's own samples on dense licence families).
  std::vector<uint64_t> prefix_at;
  internal::BigArray<uint32_t> self_at;
  uint32_t plen(size_t x) const noexcept { return static_cast<uint32_t>(prefix_at[x + 1] - prefix_at[x]); }
  internal::DensePostings dense;  // the lists held by more than 1/64 of the members, as bitmaps
  // With dense lists: the members longer than class_len[c] (ascending: the members' lengths at
  // 16 quantiles), as a bitmap of dense.words() words per class. A member met first at x's i-th
  // prefix rank shares at most |x's ranks| - i shingles with x from there on, which bounds its
  // length (the positional filter, Xiao et al. 2008); before each dense walk, the members of the
  // smallest class past that bound are set in the walk's bitmap of members met, so the walk
  // skips them. The bound only falls along x's prefix, so a member skipped is never a
  // candidate of x. On the dense licence mix's variants the probes met 11.9 M members that this
  // bound rejects, most of them in dense walks; with the classes the probe's share of the run's
  // samples fell from 11.5% to 9.2% (the variants alone: 0.755 s against 0.805 s, CPU 1.22
  // against 1.30 s, 10 alternating runs).
  static constexpr size_t kLengthClasses = 16;
  std::vector<uint64_t> class_len;
  std::vector<uint64_t> longer;  // a bit per class and member: small, zeroed by assign
  void build_length_classes();
  // Before a dense walk of x (of lx shingles) with `left` of its ranks from the walk's on: sets in
  // `met`, words [wlo, whi), the members of the class past the longest member that could still
  // reach t, unless a class as short (`applied`) is set already.
  void skip_too_long(uint64_t left, uint64_t lx, size_t& applied, uint64_t* met, size_t wlo, size_t whi) const noexcept {
    if (class_len.empty()) return;
    const uint64_t longest = thr.longest_partner(left, lx);
    const auto c = static_cast<size_t>(std::lower_bound(class_len.begin(), class_len.end(), longest) - class_len.begin());
    if (c >= applied) return;
    const uint64_t* l = longer.data() + c * dense.words();
    for (size_t w = wlo; w < whi; ++w) met[w] |= l[w];
    applied = c;
  }
  mutable std::atomic<uint64_t> candidates{0}, filtered{0}, verified{0}, results{0}, by_delta{0}, by_words{0}, dense_walks{0};
  // Adds a thread's counts of a run of probes to the join's.
  void add(const SetJoinStats& c) const noexcept {
    candidates += c.candidates;
    filtered += c.filtered;
    verified += c.verified;
    results += c.results;
    by_delta += c.by_delta;
    by_words += c.by_words;
    dense_walks += c.dense_walks;
  }
  // Members stored as their differences from a pivot of their family (internal/pivot_delta.h),
  // picked in member order (in parts of the members of a large join: pick_pivots), leader
  // clustering style: a member whose prefix shares a rank with a pivot, and that differs from it
  // in at most 1/kDeltaShare of its length, is stored against it; else it becomes a pivot (up to
  // kPivotTries pivots are tried per member).
  static constexpr size_t kPivotTries = 4;
  static constexpr size_t kParallelPivots = 4096;  // members from which pick_pivots runs in parts
  internal::DeltaStore<uint32_t> deltas;
  void pick_pivots();
  // Members also as words of 64 ranks (word k: ranks 64 index[k] + each bit of bits[k]) where
  // that is at most a third of their ranks: the shingles of a family of near-copies are shared by
  // about the same members, so their ranks, ordered by how many members hold them, lie close
  // together (the licence join of the dense licence mix: 8.1 M ranks in 0.79 M words). A candidate
  // is then counted against a bitmap of the probing member's ranks (MemberBits), a popcount per
  // word, not merged rank by rank. Only where the ranks' bitmap is at most kMaxBitmapRanks bits.
  static constexpr size_t kWordRanks = 3;
  static constexpr size_t kMaxBitmapRanks = size_t{1} << 24;  // 2 MiB per thread
  // About what a word costs against a value of a merge (a lookup and a popcount against the
  // vectorised merge's step).
  static constexpr uint64_t kWordCost = 4;
  std::vector<uint32_t> word_index;  // member m's words: [facts[m].word_at, + facts[m].words)
  std::vector<uint64_t> word_bits;
  size_t bitmap_words = 0;  // of the ranks' bitmap; 0 when no member has words
  void build_words();
  // What a probe and a count read of each candidate, in one record per member: the members of a
  // family lie apart in the input (a distribution's copyright files, by package name), so a
  // probe's candidates are spread over the members, and each array read per candidate (lengths,
  // offsets, pivots, words) missed the cache on its own. Listing 4.95 M pairs of 19,900 sets in
  // 36 interleaved families took 1.7 times as long as with each family's members together
  // (BM_SetJoinPairsFamilies); with the record, the listing's first-level cache misses fell by a
  // quarter and overlap()'s by 71% (cachegrind).
  struct MemberFacts {
    uint32_t doc;          // docs[m]
    uint32_t len;          // ranked.len[m]
    uint32_t ranks;        // ranked[m].size()
    uint32_t pivot;        // deltas.pivot(m)
    uint64_t word_at;      // its first word in word_index and word_bits (build_words)
    uint32_t words;        // its words; 0 where it is not held as words
    uint32_t differences;  // deltas.size(m)
  };
  std::vector<MemberFacts> facts;
  void gather_facts();  // after pick_pivots, before build_words
  std::vector<ScoredPair> connect(UnionFind& uf, const PairFilter& keep) const;
  long delta_common(uint32_t x, uint32_t y) const noexcept {
    return deltas.common(x, y, ranked[deltas.pivot(x)].size(), [](std::span<const uint32_t> a, std::span<const uint32_t> b) {
      return count_common_abort(a, b, LONG_MAX / 2);
    });
  }

  // The candidates of member x among the members after it (later) or before it: every member
  // with J >= t is among them, found at its first common shingle with x. `mark` (members met by
  // the probe of x: mark[y] == x) persists between probes; `scratch` is the thread's; `st`
  // counts the dense lists walked.
  void probe(uint32_t x, bool later, std::vector<uint32_t>& mark, ProbeScratch& scratch, std::vector<JoinCandidate>& out,
             SetJoinStats& st) const {
    out.clear();
    const auto rx = ranked[x];
    const uint64_t lx = ranked.len[x];
    const uint64_t min_len = thr.min_overlap(lx);
    const uint64_t max_len = lx * thr.den / thr.num;  // |y| <= |x| / t
    // Members below 2^31: the vectorised test indexes the marks by signed 32-bit lanes.
    const auto unmarked = docs.size() < (size_t{1} << 31) ? kern->unmarked_members : internal::unmarked_members_scalar;
    // A dense list's walk skips the members met in any list before: those met in the sparse
    // lists are set in the bitmap too.
    uint64_t* met = nullptr;
    bool walked = false;
    size_t applied = class_len.size();
    // The words of `met` the walks can set: the members after x (later) or before it.
    const size_t whi = later ? dense.words() : x / 64 + 1, wlo = later ? std::min<size_t>((x + 1) / 64, whi) : 0;
    if (dense.any()) {
      if (scratch.met.size() < dense.words()) scratch.met.assign(dense.words(), 0);
      met = scratch.met.data();
      scratch.met_sparse.clear();
    }
    const auto consider = [&](uint32_t y, uint32_t i, uint32_t py) {
      const MemberFacts& fy = facts[y];
      const uint64_t ly = fy.len;
      if (ly < min_len || ly > max_len) return;
      // Only the shared shingles after the first common one, on either side, can add to it.
      const uint64_t bound = 1 + std::min<uint64_t>(rx.size() - i - 1, fy.ranks - py - 1);
      if (!thr.overlap_reachable(bound, lx, ly)) return;
      out.push_back({y, i, py});
    };
    for (uint32_t i = 0, prefix = plen(x); i < prefix; ++i) {
      const uint64_t h = head[rx[i]];
      const uint32_t* first = post_member.data() + h;
      const uint32_t* last = post_member.data() + head[rx[i] + 1];
      if (const uint32_t row = dense.row(rx[i]); row != internal::DensePostings::kSparse) {
        ++st.dense_walks;
        walked = true;
        skip_too_long(rx.size() - i, lx, applied, met, wlo, whi);
        const size_t n = static_cast<size_t>(last - first);
        if (scratch.found.size() < n) scratch.found.resize(n);
        const size_t fresh = dense.new_places(row, later ? x + 1 : 0, later ? static_cast<uint32_t>(docs.size()) : x, met, scratch.found.data());
        for (size_t f = 0; f < fresh; ++f) {
          const uint32_t y = first[scratch.found[f]];
          mark[y] = x;
          consider(y, i, post_pos[h + scratch.found[f]]);
        }
        continue;
      }
      const uint32_t* split = first + self_at[prefix_at[x] + i] + 1;  // past x, which its own prefix lists hold
      const uint32_t* from = later ? split : first;
      const size_t n = static_cast<size_t>((later ? last : split) - from);
      if (scratch.found.size() < n) scratch.found.resize(n);
      const size_t fresh = unmarked(from, n, x, mark.data(), scratch.found.data());
      const uint32_t* pos = post_pos.data() + (from - post_member.data());
      for (size_t f = 0; f < fresh; ++f) {
        const uint32_t y = from[scratch.found[f]];
        if (met) {
          met[y >> 6] |= uint64_t{1} << (y & 63);
          scratch.met_sparse.push_back(y);
        }
        consider(y, i, pos[scratch.found[f]]);
      }
    }
    // All clear for the next probe, at the cost of what this one set: a walk's range (as dear as
    // the walk), or else the words of the members the sparse lists met (a large join with a few
    // dense lists: most probes walk none, and clearing the range would cost each of them
    // members / 64 words).
    if (walked) {
      std::fill(met + wlo, met + whi, uint64_t{0});
    } else if (met) {
      for (const uint32_t y : scratch.met_sparse) met[y >> 6] = 0;
    }
  }

  // The common shingles of x and a candidate, or -1 when they are certainly fewer than J >= t
  // needs; the shingles before the first common one (unshared ones included) count as passed.
  // By the cheapest exact count: the candidate's words against x's bitmap (`bits`, x's until
  // cleared), their differences from a shared pivot, or a merge. `st` counts
  // the pairs counted the first two ways.
  long overlap(uint32_t x, const JoinCandidate& c, MemberBits& bits, SetJoinStats& st) const {
    const MemberFacts &fx = facts[x], &fy = facts[c.y];
    const uint64_t merged = uint64_t{fx.ranks} - c.ix + fy.ranks - c.iy;
    const uint64_t by_delta = fx.pivot != internal::DeltaStore<uint32_t>::kNoPivot && fx.pivot == fy.pivot
                                  ? uint64_t{fx.differences} + fy.differences : UINT64_MAX;
    if (const uint64_t words = fy.words; words > 0 && words * kWordCost < std::min(merged, by_delta)) {
      ++st.by_words;
      return kern->common_bits(word_index.data() + fy.word_at, word_bits.data() + fy.word_at, words, bits.of(ranked[x]));
    }
    if (by_delta < merged) {
      ++st.by_delta;
      return delta_common(x, c.y);
    }
    const auto rx = ranked[x], ry = ranked[c.y];
    const uint64_t lx = fx.len, ly = fy.len;
    const long smax = static_cast<long>(lx + ly) - 2 * static_cast<long>(thr.pair_overlap(lx, ly));
    const long passed = static_cast<long>(ranked.unshared[x] + c.ix + ranked.unshared[c.y] + c.iy);
    const long rest = count_common_abort(rx.subspan(c.ix + 1), ry.subspan(c.iy + 1), smax - passed);
    return rest < 0 ? -1 : rest + 1;
  }

  uint32_t member_of(DocId d) const {
    const uint32_t i = place_in(docs, d);
    if (i == docs.size() || docs[i] != d) throw UsageError("SetJoin: document " + std::to_string(d) + " is not joined");
    return i;
  }
};

void SetJoin::Impl::pick_pivots() {
  const size_t n = docs.size();
  deltas = internal::DeltaStore<uint32_t>(n);
  // In parts of the members, one per thread, each member's pivot picked among its own part's
  // (the first of a family in a later part is a pivot of its own, a few more pivots in all); on
  // one thread the licence join of the dense licence mix (23,715 members) took 55 ms while the
  // other core waited. Each part fills a store of its own, taken in member order.
  constexpr size_t kLook = 16;  // postings looked at per prefix rank: a family's pivot is among its first members
  const size_t parts = n >= kParallelPivots ? static_cast<size_t>(threads) : 1;
  std::vector<internal::DeltaStore<uint32_t>> picked(parts);  // each part's members from 0
  internal::parallel_for(parts, threads, [&](size_t part, size_t) {
    const auto [lo, hi] = internal::part_range(n, part, parts);
    internal::DeltaStore<uint32_t>& local = picked[part];
    local = internal::DeltaStore<uint32_t>(hi - lo);
    std::vector<uint32_t> tried, d, a;
    for (size_t x = lo; x < hi; ++x) {
      const auto rx = ranked[x];
      if (rx.empty()) continue;
      tried.clear();
      bool stored = false;
      // The pivots of the part before x that share a prefix rank with it, through the prefix index.
      for (uint32_t i = 0; i < plen(x) && !stored && tried.size() < kPivotTries; ++i) {
        const uint32_t* const end = post_member.data() + head[rx[i] + 1];
        const uint32_t* k = std::lower_bound(static_cast<const uint32_t*>(post_member.data() + head[rx[i]]), end, static_cast<uint32_t>(lo));
        const uint32_t* const stop = std::min(end, k + kLook);
        for (; k < stop && *k < x && !stored && tried.size() < kPivotTries; ++k) {
          const auto p = static_cast<uint32_t>(*k - lo);
          if (local.pivot(p) != p || std::find(tried.begin(), tried.end(), p) != tried.end()) continue;
          tried.push_back(p);
          if (!internal::differences_within<uint32_t>(rx, ranked[lo + p], rx.size() / internal::kDeltaShare, d, a)) continue;
          local.add(static_cast<uint32_t>(x - lo), p, d, a);
          stored = true;
        }
      }
      if (!stored) local.add(static_cast<uint32_t>(x - lo), static_cast<uint32_t>(x - lo), {}, {});  // a pivot: no differences from itself
    }
  });
  for (size_t part = 0; part < parts; ++part)
    deltas.add_part(static_cast<uint32_t>(internal::part_range(n, part, parts).first), picked[part]);
}

// Calls fn(index, bits) for each word of 64 ranks that the ascending ranks `r` have a rank in.
template <class Fn>
void for_each_word(std::span<const uint32_t> r, Fn&& fn) {
  for (size_t i = 0; i < r.size();) {
    const uint32_t w = r[i] >> 6;
    uint64_t bits = 0;
    for (; i < r.size() && (r[i] >> 6) == w; ++i) bits |= uint64_t{1} << (r[i] & 63);
    fn(w, bits);
  }
}

void SetJoin::Impl::build_words() {
  const size_t n = docs.size();
  if (ranked.num_ranks == 0 || ranked.num_ranks > kMaxBitmapRanks) return;
  // Each member's words, counted and then written by parts of the members.
  const size_t parts = static_cast<size_t>(threads) * 4;
  internal::parallel_for(parts, threads, [&](size_t p, size_t) {
    const auto [lo, hi] = internal::part_range(n, p, parts);
    for (size_t m = lo; m < hi; ++m) {
      uint32_t words = 0;
      for_each_word(ranked[m], [&](uint32_t, uint64_t) { ++words; });
      facts[m].words = words * kWordRanks <= ranked[m].size() ? words : 0;
    }
  });
  uint64_t total = 0;
  for (MemberFacts& f : facts) {
    f.word_at = total;
    total += f.words;
  }
  if (total == 0) return;
  word_index.resize(total);
  word_bits.resize(total);
  internal::parallel_for(parts, threads, [&](size_t p, size_t) {
    const auto [lo, hi] = internal::part_range(n, p, parts);
    for (size_t m = lo; m < hi; ++m) {
      if (facts[m].words == 0) continue;
      uint64_t k = facts[m].word_at;
      for_each_word(ranked[m], [&](uint32_t w, uint64_t bits) {
        word_index[k] = w;
        word_bits[k++] = bits;
      });
    }
  });
  bitmap_words = (ranked.num_ranks + 63) / 64;
}

// The length classes of the dense walks (class_len, longer).
void SetJoin::Impl::build_length_classes() {
  if (!dense.any()) return;
  std::vector<uint64_t> lens(ranked.len.begin(), ranked.len.end());
  std::sort(lens.begin(), lens.end());
  for (size_t c = 0; c < kLengthClasses; ++c) {
    const uint64_t l = lens[(lens.size() - 1) * c / kLengthClasses];
    if (class_len.empty() || l > class_len.back()) class_len.push_back(l);
  }
  const size_t words = dense.words();
  longer.assign(class_len.size() * words, 0);
  for (size_t m = 0; m < docs.size(); ++m)
    for (size_t c = 0; c < class_len.size() && ranked.len[m] > class_len[c]; ++c) longer[c * words + m / 64] |= uint64_t{1} << (m & 63);
}

void SetJoin::Impl::gather_facts() {
  const size_t n = docs.size();
  facts.resize(n);
  for (size_t m = 0; m < n; ++m) {
    const auto x = static_cast<uint32_t>(m);
    facts[m] = {docs[m], ranked.len[m], static_cast<uint32_t>(ranked[m].size()), deltas.pivot(x), 0, 0,
                static_cast<uint32_t>(deltas.size(x))};
  }
}

SetJoin::SetJoin(std::span<const DocId> docs, const SetOf& set_of, double threshold, int threads)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  if (!(threshold > 0.0 && threshold <= 1.0)) throw UsageError("the join threshold must be in (0, 1]");
  s.thr = ExactThreshold::from(threshold);
  s.threads = std::max(1, threads);
  s.docs.assign(docs.begin(), docs.end());
  for (size_t i = 1; i < s.docs.size(); ++i)
    if (s.docs[i] <= s.docs[i - 1]) throw UsageError("SetJoin: documents must be ascending and distinct");
  if (s.docs.size() >= UINT32_MAX) throw UsageError("SetJoin: more than 2^32 - 1 documents");
  s.ranked = internal::rank_shared_values<ShingleHash>(s.docs.size(), [&](size_t m) { return set_of(s.docs[m]); }, s.threads);
  const size_t n = s.docs.size();
  s.prefix_at.assign(n + 1, 0);
  for (size_t m = 0; m < n; ++m) {
    const uint64_t len = s.ranked.len[m];
    const uint64_t prefix = len == 0 ? 0 : len - s.thr.min_overlap(len) + 1;
    const uint64_t unshared = s.ranked.unshared[m];
    const uint64_t indexed = prefix > unshared ? std::min<uint64_t>(prefix - unshared, s.ranked[m].size()) : 0;
    s.prefix_at[m + 1] = s.prefix_at[m] + indexed;
  }
  // The inverted index of the prefixes (CSR by rank), built by parts of the ranks: each part walks
  // the members in order, so every list is ascending by member.
  const size_t num_ranks = s.ranked.num_ranks;
  const size_t parts = static_cast<size_t>(s.threads);
  s.head.assign(num_ranks + 1, 0);
  auto for_indexed = [&](size_t p, auto&& fn) {
    const size_t lo = num_ranks * p / parts, hi = num_ranks * (p + 1) / parts;
    for (size_t m = 0; m < n; ++m) {
      const auto r = s.ranked[m];
      for (uint32_t i = 0, prefix = s.plen(m); i < prefix && r[i] < hi; ++i)
        if (r[i] >= lo) fn(m, i, r[i]);
    }
  };
  internal::parallel_for(parts, s.threads, [&](size_t p, size_t) {
    for_indexed(p, [&](size_t, uint32_t, uint32_t r) { ++s.head[r + 1]; });
  });
  for (size_t r = 1; r <= num_ranks; ++r) s.head[r] += s.head[r - 1];
  s.post_member = internal::BigArray<uint32_t>(s.head[num_ranks]);
  s.post_pos = internal::BigArray<uint32_t>(s.head[num_ranks]);
  s.self_at = internal::BigArray<uint32_t>(s.prefix_at[n]);
  internal::parallel_for(parts, s.threads, [&](size_t p, size_t) {
    const size_t lo = num_ranks * p / parts;
    std::vector<uint64_t> cursor(s.head.begin() + static_cast<ptrdiff_t>(lo),
                                 s.head.begin() + static_cast<ptrdiff_t>(num_ranks * (p + 1) / parts));
    for_indexed(p, [&](size_t m, uint32_t i, uint32_t r) {
      const uint64_t at = cursor[r - lo]++;
      s.post_member[at] = static_cast<uint32_t>(m);
      s.post_pos[at] = i;
      s.self_at[s.prefix_at[m] + i] = static_cast<uint32_t>(at - s.head[r]);
    });
  });
  s.dense.build(s.head, s.post_member.data(), n);
  s.build_length_classes();
  s.pick_pivots();
  s.gather_facts();
  s.build_words();
}

SetJoin::~SetJoin() = default;

size_t SetJoin::size() const noexcept { return impl_->docs.size(); }

bool SetJoin::contains(DocId d) const noexcept { return std::binary_search(impl_->docs.begin(), impl_->docs.end(), d); }

SetJoinStats SetJoin::stats() const noexcept {
  return {impl_->candidates.load(), impl_->filtered.load(), impl_->verified.load(), impl_->results.load(), impl_->by_delta.load(),
          impl_->by_words.load(), impl_->dense_walks.load()};
}

double SetJoin::similarity(DocId a, DocId b) const {
  const Impl& s = *impl_;
  const uint32_t x = s.member_of(a), y = s.member_of(b);
  const long common = count_common_abort(s.ranked[x], s.ranked[y], LONG_MAX / 2);
  return jaccard_from_common(common, s.ranked.len[x], s.ranked.len[y]);
}

void SetJoin::pairs(const PairFilter& keep, const std::function<void(std::span<const ScoredPair>)>& emit) const {
  const SetJoin* self = this;
  pairs_of(std::span<const SetJoin* const>(&self, 1), keep, emit);
}

// The filter's rows of keys per join, in member order (PairFilter::shared_key; none for a test
// only), for the joins that hold families of near-copies (a prefix list held by more than 1/64 of
// the members), whose members each have hundreds of candidates; empty for the others. 8 bytes a
// key of every member (168 at 21 bands) would add half again to the joins of a run of millions
// of short documents, which pairs mode holds until they are listed, for a few candidates each.
std::vector<std::vector<uint64_t>> SetJoin::filter_rows(std::span<const SetJoin* const> joins, const PairFilter& keep) {
  const size_t width = keep.width();
  std::vector<std::vector<uint64_t>> rows(width > 0 ? joins.size() : 0);
  for (size_t j = 0; j < rows.size(); ++j) {
    const Impl& s = *joins[j]->impl_;
    if (!s.dense.any()) continue;
    rows[j].resize(s.docs.size() * width);
    keep.fill_rows(s.docs, rows[j]);
  }
  return rows;
}

void SetJoin::pairs_of(std::span<const SetJoin* const> joins, const PairFilter& keep,
                       const std::function<void(std::span<const ScoredPair>)>& emit, std::span<const ScoredPair> known) {
  // Every joined document in order, as (join, member): each x's pairs have a = its document, so
  // listing them in this order lists all in (a, b) order.
  struct Listed {
    DocId doc;
    uint32_t join, member;
  };
  std::vector<Listed> order;
  int threads = 1;
  for (size_t j = 0; j < joins.size(); ++j) {
    const Impl& s = *joins[j]->impl_;
    threads = std::max(threads, s.threads);
    for (size_t m = 0; m < s.docs.size(); ++m) order.push_back({s.docs[m], static_cast<uint32_t>(j), static_cast<uint32_t>(m)});
  }
  if (joins.size() > 1) {
    std::sort(order.begin(), order.end(), [](const Listed& x, const Listed& y) { return x.doc < y.doc; });
    for (size_t i = 1; i < order.size(); ++i)
      if (order[i].doc == order[i - 1].doc) throw UsageError("SetJoin::pairs_of: document " + std::to_string(order[i].doc) + " is in two joins");
  }
  const size_t n = order.size();
  if (n < 2) return;
  // Documents in chunks, a window of chunks at a time: each chunk's pairs are found in parallel,
  // sorted, and handed out in order, so memory holds one window's pairs.
  constexpr size_t kChunk = 16;
  constexpr size_t kRowsAhead = 8;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  const size_t window = static_cast<size_t>(threads) * 8;
  // Per thread and join, the member last probed that found each member (probe's mark): a join's
  // members are numbered from 0, so each join needs its own.
  std::vector<std::vector<std::vector<uint32_t>>> marks(static_cast<size_t>(threads), std::vector<std::vector<uint32_t>>(joins.size()));
  std::vector<std::vector<JoinCandidate>> cands(static_cast<size_t>(threads));
  std::vector<MemberOrder> orders(static_cast<size_t>(threads));
  std::vector<ProbeScratch> scratch(static_cast<size_t>(threads));
  size_t bitmap_words = 0;
  for (const SetJoin* j : joins) bitmap_words = std::max(bitmap_words, j->impl_->bitmap_words);
  std::vector<MemberBits> bits(static_cast<size_t>(threads), MemberBits(bitmap_words));
  std::vector<std::vector<ScoredPair>> out(window);
  const size_t width = keep.width();
  const std::vector<std::vector<uint64_t>> rows = filter_rows(joins, keep);
  for (size_t w0 = 0; w0 < chunks; w0 += window) {
    const size_t wn = std::min(window, chunks - w0);
    internal::parallel_for(wn, threads, [&](size_t c, size_t tid) {
      auto& cand = cands[tid];
      auto& res = out[c];
      res.clear();
      const size_t lo = (w0 + c) * kChunk, hi = std::min(n, lo + kChunk);
      // The counters, summed here and added to a join's once its run of the chunk ends.
      const Impl* counted = nullptr;
      SetJoinStats st;
      const auto count = [&](const Impl* next) {
        if (counted != nullptr) counted->add(st);
        counted = next;
        st = {};
      };
      for (size_t i = lo; i < hi; ++i) {
        const Impl& s = *joins[order[i].join]->impl_;
        if (&s != counted) count(&s);
        auto& mark = marks[tid][order[i].join];
        if (mark.empty()) mark.assign(s.docs.size(), UINT32_MAX);
        const uint32_t x = order[i].member;
        s.probe(x, true, mark, scratch[tid], cand, st);
        st.candidates += cand.size();
        const size_t before = res.size();
        // In member order, which is the order of their documents: the pairs come out by b, and
        // the known ones are passed in one walk.
        const std::span<const JoinCandidate> in_order = orders[tid].order(cand, s.docs.size());
        const DocId a = s.docs[x];
        const uint64_t la = s.facts[x].len;
        const std::span<const ScoredPair> known_a = pairs_from(known, a);
        size_t next_known = 0;
        const uint64_t* join_rows = rows.empty() || rows[order[i].join].empty() ? nullptr : rows[order[i].join].data();
        const auto wanted = [&](uint32_t y, DocId b) {
          if (join_rows) return PairFilter::share_key(join_rows + size_t{x} * width, join_rows + size_t{y} * width, width);
          return !keep || keep(a, b);
        };
        for (size_t c = 0; c < in_order.size(); ++c) {
          const JoinCandidate& k = in_order[c];
          // A candidate's row is seldom near the last one's (the members of a family lie apart):
          // asked for a few candidates ahead, its first keys (the bands most pairs share) are
          // in the cache when it is compared.
          if (join_rows && c + kRowsAhead < in_order.size()) __builtin_prefetch(join_rows + size_t{in_order[c + kRowsAhead].y} * width);
          const DocId b = s.facts[k.y].doc;
          while (next_known < known_a.size() && known_a[next_known].b < b) ++next_known;
          if ((next_known < known_a.size() && known_a[next_known].b == b) || !wanted(k.y, b)) {
            ++st.filtered;
            continue;
          }
          ++st.verified;
          const long common = s.overlap(x, k, bits[tid], st);
          const uint64_t lb = s.facts[k.y].len;
          if (common >= 0 && s.thr.reached(static_cast<uint64_t>(common), la, lb))
            res.push_back({a, b, jaccard_from_common(common, la, lb)});
        }
        bits[tid].clear();
        st.results += res.size() - before;
      }
      count(nullptr);
    });
    for (size_t c = 0; c < wn; ++c)
      if (!out[c].empty()) emit(out[c]);
  }
}

std::vector<ScoredPair> SetJoin::all_pairs(const PairFilter& keep) const {
  std::vector<ScoredPair> all;
  pairs(keep, [&](std::span<const ScoredPair> chunk) { all.insert(all.end(), chunk.begin(), chunk.end()); });
  return all;
}

std::vector<ScoredPair> SetJoin::connect(size_t num_docs, std::span<const ScoredPair> known, const PairFilter& keep) const {
  const Impl& s = *impl_;
  const size_t n = s.docs.size();
  if (n < 2) return {};
  if (s.docs.back() >= num_docs) throw UsageError("SetJoin::connect: a joined document is beyond num_docs");
  // The union-find covers the joined documents (by their place in docs) and the other ends of
  // the known edges after them, not all num_docs: a join over a few documents of a large run
  // (one group of a dedup's verification) costs its own size.
  const auto joined_at = [&](DocId d) {
    const size_t i = place_in(s.docs, d);
    return i < n && s.docs[i] == d ? i : n;
  };
  std::vector<DocId> others;
  for (const ScoredPair& e : known) {
    if (e.a >= num_docs || e.b >= num_docs) throw UsageError("SetJoin::connect: a known edge is beyond num_docs");
    for (const DocId d : {e.a, e.b})
      if (joined_at(d) == n) others.push_back(d);
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  const auto local = [&](DocId d) {
    const size_t i = joined_at(d);
    return static_cast<uint32_t>(i < n ? i : n + place_in(others, d));
  };
  UnionFind uf(n + others.size());
  for (const ScoredPair& e : known) uf.unite(local(e.a), local(e.b));
  return s.connect(uf, keep);
}

std::vector<ScoredPair> SetJoin::connect(std::span<const uint32_t> component, const PairFilter& keep) const {
  const Impl& s = *impl_;
  const size_t n = s.docs.size();
  if (n < 2) return {};
  if (component.size() != n) throw UsageError("SetJoin::connect: one component per joined document is needed");
  // The joined documents of each component joined to its first: what is connected already.
  UnionFind uf(n);
  std::vector<std::pair<uint32_t, uint32_t>> by_component(n);
  for (size_t i = 0; i < n; ++i) by_component[i] = {component[i], static_cast<uint32_t>(i)};
  std::sort(by_component.begin(), by_component.end());
  for (size_t i = 1; i < n; ++i)
    if (by_component[i].first == by_component[i - 1].first) uf.unite(by_component[i - 1].second, by_component[i].second);
  return s.connect(uf, keep);
}

// connect's search from `uf`, whose first docs.size() entries are the joined documents (by
// place) and hold what is connected already.
std::vector<ScoredPair> SetJoin::Impl::connect(UnionFind& uf, const PairFilter& keep) const {
  const Impl& s = *this;
  const size_t n = s.docs.size();
  std::vector<ScoredPair> edges;
  SetJoinStats st;
  MemberBits bits(s.bitmap_words);
  // In document order, each with the earlier ones: once x is connected to a cluster, its other
  // candidates in that cluster are skipped, so a cluster costs about one verification per
  // document plus the failed ones. The candidates do not depend on what is connected: they are
  // found ahead on every thread, a window of members at a time (each thread marks the members
  // it has seen for x in its own array), and taken in order here.
  constexpr size_t kWindow = 256;
  const size_t threads = static_cast<size_t>(std::max(1, s.threads));
  std::vector<std::vector<uint32_t>> marks(threads, std::vector<uint32_t>(n, UINT32_MAX));
  std::vector<ProbeScratch> scratch(threads);
  std::vector<SetJoinStats> probed(threads);  // each thread's dense walks
  std::vector<std::vector<JoinCandidate>> window(kWindow);
  for (size_t w0 = 0; w0 < n; w0 += kWindow) {
    const size_t w1 = std::min(n, w0 + kWindow);
    internal::parallel_for(w1 - w0, s.threads, [&](size_t i, size_t slot) {
      s.probe(static_cast<uint32_t>(w0 + i), false, marks[slot], scratch[slot], window[i], probed[slot]);
    });
    for (size_t x = w0; x < w1; ++x) {
      const std::vector<JoinCandidate>& cand = window[x - w0];
      st.candidates += cand.size();
      const DocId b = s.docs[x];
      for (const JoinCandidate& k : cand) {
        const DocId a = s.facts[k.y].doc;
        if (uf.find(k.y) == uf.find(static_cast<uint32_t>(x)) || (keep && !keep(a, b))) {
          ++st.filtered;
          continue;
        }
        ++st.verified;
        const long common = s.overlap(static_cast<uint32_t>(x), k, bits, st);
        const uint64_t la = s.facts[k.y].len, lb = s.facts[x].len;
        if (common >= 0 && s.thr.reached(static_cast<uint64_t>(common), la, lb)) {
          uf.unite(k.y, static_cast<uint32_t>(x));
          edges.push_back({a, b, jaccard_from_common(common, la, lb)});
        }
      }
      bits.clear();
    }
  }
  st.results = edges.size();
  for (const SetJoinStats& p : probed) st.dense_walks += p.dense_walks;
  s.add(st);
  return edges;
}

}  // namespace neardup
