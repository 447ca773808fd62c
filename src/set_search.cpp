#include "neardup/set_search.h"

#include <algorithm>

#include "internal/parallel.h"
#include "kernels/dispatch.h"
#include "neardup/error.h"
#include "neardup/setjoin.h"

namespace neardup {

SetSearch::SetSearch(DocId first, DocId last, const SearchSetOf& set_of, const SearchSkip& skip, int threads) : first_(first) {
  sizes_.assign(last - first, 0);
  // Each set looked up once (an index checks a set's checksum at each look-up), then read from here.
  std::vector<std::span<const ShingleHash>> sets(last - first);
  uint64_t total = 0;
  for (DocId d = first; d < last; ++d) {
    if (skip(d)) continue;
    sets[d - first] = set_of(d);
    const size_t len = sets[d - first].size();
    if (len >= UINT32_MAX) throw UsageError("a document has more than 2^32 shingles");
    sizes_[d - first] = static_cast<uint32_t>(len);
    total += len;
  }
  // A list for about eight shingles (a power of two): a short scan, and starts of about a byte
  // per shingle. At most 32 bits, so that the top bits and the low 32 are apart.
  int bits = 8;
  while (bits < 32 && (uint64_t{8} << (bits + 1)) <= total) ++bits;
  shift_ = 64 - bits;
  const size_t lists = size_t{1} << bits;
  starts_.assign(lists + 1, 0);
  entries_ = std::make_unique_for_overwrite<Entry[]>(total);  // no zero fill: every entry is written below
  entry_count_ = total;
  // Each thread counts, then fills, the lists of its own range of top bits, taking the sets in
  // DocId order, so that every list comes out ascending; a set is sorted, so its values in a range
  // are one run, found by binary search.
  const size_t parts = std::clamp<size_t>(static_cast<size_t>(std::max(1, threads)), 1, 64);
  const auto run_of = [&](DocId d, size_t lo, size_t hi) {
    const auto s = sets[d - first_];
    const auto from = std::lower_bound(s.begin(), s.end(), ShingleHash{lo} << shift_);
    const auto to = hi == lists ? s.end() : std::lower_bound(from, s.end(), ShingleHash{hi} << shift_);
    return std::span<const ShingleHash>(from, to);
  };
  const auto each_part = [&](auto&& fn) {
    internal::parallel_for(parts, threads, [&](size_t p, size_t) {
      const auto [lo, hi] = internal::part_range(lists, p, parts);
      for (DocId d = first; d < last; ++d)
        if (size_of(d)) fn(d, run_of(d, lo, hi));
    });
  };
  each_part([&](DocId, std::span<const ShingleHash> run) {
    for (const ShingleHash v : run) ++starts_[(v >> shift_) + 1];
  });
  for (size_t b = 0; b < lists; ++b) starts_[b + 1] += starts_[b];
  // Filled with starts_[b] as list b's cursor, which ends at the next list's start: shifted back.
  each_part([&](DocId d, std::span<const ShingleHash> run) {
    for (const ShingleHash v : run) entries_[starts_[v >> shift_]++] = {d, static_cast<uint32_t>(v)};
  });
  for (size_t b = lists; b > 0; --b) starts_[b] = starts_[b - 1];
  starts_[0] = 0;
}

uint64_t SetSearch::bytes() const noexcept {
  return sizes_.size() * sizeof(uint32_t) + starts_.size() * sizeof(uint64_t) + entry_count_ * sizeof(Entry);
}

std::vector<SetSearch::Postings> SetSearch::rarest_first(std::span<const ShingleHash> q) const {
  std::vector<Postings> lists(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const size_t b = static_cast<size_t>(q[i] >> shift_);
    Postings& p = lists[i];
    p = {starts_[b], starts_[b + 1], static_cast<uint32_t>(q[i]), 0};
    for (uint64_t e = p.begin; e < p.end; ++e) p.count += entries_[e].low == p.low;
  }
  // Stable: of two equally rare shingles the smaller hash comes first, so the order depends on
  // the query and the index alone.
  std::stable_sort(lists.begin(), lists.end(), [](const Postings& a, const Postings& b) { return a.count < b.count; });
  return lists;
}

void SetSearch::containment_candidates(std::span<const ShingleHash> q, uint64_t need, std::vector<DocId>& out) const {
  const auto lists = rarest_first(q);
  for (size_t i = 0; i < q.size() - need + 1; ++i)
    each_doc(lists[i], [&](DocId d) {
      if (size_of(d) >= need) out.push_back(d);
    });
}

namespace {

// Per thread, per document of a segment: how many of the query's shingles looked up so far it
// holds (its entries counted), and whether it was verified or left out (the top bit).
struct MetCounts {
  static constexpr uint32_t kDone = 0x80000000u;
  std::vector<uint32_t> count;
  std::vector<DocId> met;  // the documents with a count, to clear them after the query
};

}  // namespace

// The k best by counting, with exact verification (a threshold algorithm over the lists): q's
// lists are read rarest first and each document's entries counted; at checkpoints (after 8, 16,
// 32, ... lists) the documents with the most entries are verified, which raises the floor; once
// a document not met yet (at most |q| - i common shingles: J <= (|q| - i) / |q|) cannot get in,
// the lists left are skipped, and each document met is verified in decreasing order of its bound
// min(|X|, count + |q| - i) common shingles, while that bound can get in. A count only errs
// upwards (two shingles equal in the bits an entry keeps), so every bound holds.
void SetSearch::offer_most_similar(std::span<const ShingleHash> q, const SearchSetOf& set_of, const SearchSkip& skip,
                                   BestMatches& best) const {
  const auto lists = rarest_first(q);
  const uint64_t qn = q.size();
  thread_local MetCounts m;
  if (m.count.size() < sizes_.size()) m.count.resize(sizes_.size(), 0);
  m.met.clear();
  struct Clear {  // the counts back to 0 however the search ends (a damaged set throws)
    MetCounts& m;
    DocId first;
    ~Clear() {
      for (const DocId d : m.met) m.count[d - first] = 0;
    }
  } clear{m, first_};
  const auto bound = [&](DocId d, uint64_t looked) {
    const uint64_t x = size_of(d), c = std::min<uint64_t>(x, (m.count[d - first_] & ~MetCounts::kDone) + (qn - looked));
    return static_cast<double>(c) / static_cast<double>(qn + x - c);
  };
  const auto verify = [&](DocId d) {
    m.count[d - first_] |= MetCounts::kDone;
    if (!skip(d)) best.offer(d, best.full() ? jaccard_at_least(q, set_of(d), best.floor()) : jaccard(q, set_of(d)));
  };
  std::vector<DocId> order;
  uint64_t looked = 0;
  for (uint64_t next_check = 8; looked < qn;) {
    each_doc(lists[looked], [&](DocId d) {
      if (m.count[d - first_]++ == 0) m.met.push_back(d);
    });
    if (++looked < next_check && looked < qn) continue;
    next_check *= 2;
    // The documents holding the most of the shingles looked up: likely the best, verified first.
    order.clear();
    for (const DocId d : m.met)
      if (!(m.count[d - first_] & MetCounts::kDone)) order.push_back(d);
    const auto more = [&](DocId a, DocId b) { return m.count[a - first_] != m.count[b - first_] ? m.count[a - first_] > m.count[b - first_] : a < b; };
    const size_t take = std::min(order.size(), std::max<size_t>(best.capacity(), 8));
    std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(take), order.end(), more);
    for (size_t j = 0; j < take; ++j) verify(order[j]);
    if (!best.open_to(static_cast<double>(qn - looked) / static_cast<double>(qn))) break;
  }
  std::vector<std::pair<double, DocId>> left;
  for (const DocId d : m.met) {  // those that can get in now (the floor only rises)
    if (m.count[d - first_] & MetCounts::kDone) continue;
    const double b = bound(d, looked);
    if (best.open_to(b)) left.emplace_back(b, d);
  }
  std::sort(left.begin(), left.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (const auto& [b, d] : left) {
    if (!best.open_to(b)) break;
    verify(d);
  }
}

void BestMatches::offer(DocId d, double sim) {
  if (sim <= 0) return;
  if (!full()) {
    heap_.push({d, sim});
  } else if (better_match({d, sim}, heap_.top())) {
    heap_.pop();
    heap_.push({d, sim});
  }
}

std::vector<IndexMatch> BestMatches::take() {
  std::vector<IndexMatch> out;
  for (; !heap_.empty(); heap_.pop()) out.push_back(heap_.top());
  std::sort(out.begin(), out.end(), better_match);
  return out;
}

SegmentedSearch SegmentedSearch::extended(size_t slots, const SearchSetOf& set_of, const SearchSkip& skip, int threads) const {
  SegmentedSearch s = *this;
  const auto first = static_cast<DocId>(end());
  if (slots - first < kTail) return s;
  s.parts_.push_back(std::make_shared<const SetSearch>(first, static_cast<DocId>(slots), set_of, skip, threads));
  const auto docs = [&](size_t i) { return s.parts_[i]->last() - s.parts_[i]->first(); };
  for (size_t n = s.parts_.size(); n >= 2 && docs(n - 2) <= 2 * docs(n - 1); n = s.parts_.size()) {
    const DocId from = s.parts_[n - 2]->first(), to = s.parts_[n - 1]->last();
    s.parts_.resize(n - 2);
    s.parts_.push_back(std::make_shared<const SetSearch>(from, to, set_of, skip, threads));
  }
  return s;
}

uint64_t SegmentedSearch::bytes() const noexcept {
  uint64_t b = 0;
  for (const auto& p : parts_) b += p->bytes();
  return b;
}

void SegmentedSearch::containing(std::span<const ShingleHash> q, double t, const SearchSetOf& set_of, const SearchSkip& skip,
                                 size_t slots, std::vector<IndexMatch>& out) const {
  out.clear();
  if (q.empty()) return;
  const uint64_t need = ExactThreshold::from(t).min_overlap(q.size());
  // Each segment takes the rarest shingles by its own lists: a document holding `need` of q's
  // holds one of any |q| - need + 1 of them, whichever they are.
  std::vector<DocId> found;
  for (const auto& p : parts_) p->containment_candidates(q, need, found);
  for (size_t d = end(); d < slots; ++d) found.push_back(static_cast<DocId>(d));
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  const auto& kernels = internal::kernels();
  for (const DocId d : found) {
    if (skip(d)) continue;
    const auto x = set_of(d);
    const long common = kernels.set_common_at_least(q.data(), q.size(), x.data(), x.size(), static_cast<long>(need));
    if (common >= 0 && static_cast<uint64_t>(common) >= need)
      out.push_back({d, static_cast<double>(common) / static_cast<double>(q.size())});
  }
  std::sort(out.begin(), out.end(), better_match);
}

void SegmentedSearch::most_similar(std::span<const ShingleHash> q, size_t k, const SearchSetOf& set_of, const SearchSkip& skip,
                                   size_t slots, std::vector<IndexMatch>& out) const {
  out.clear();
  if (q.empty() || k == 0) return;
  BestMatches best(k);
  // The documents after the segments first, then the newest (smallest) segments: they set a bar
  // that lets the large one stop sooner. Each segment's bound holds for its own documents.
  for (size_t d = end(); d < slots; ++d)
    if (!skip(static_cast<DocId>(d))) best.offer(static_cast<DocId>(d), jaccard(q, set_of(static_cast<DocId>(d))));
  for (auto p = parts_.rbegin(); p != parts_.rend(); ++p) (*p)->offer_most_similar(q, set_of, skip, best);
  out = best.take();
}

}  // namespace neardup
