#include "neardup/set_search.h"

#include <algorithm>
#include <unordered_set>

#include "internal/parallel.h"
#include "kernels/dispatch.h"
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

SetSearch::Postings SetSearch::rarest_first(std::span<const ShingleHash> q) const {
  Postings p;
  p.lists.resize(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const size_t b = static_cast<size_t>(q[i] >> shift_);
    const auto low = static_cast<uint32_t>(q[i]);
    p.lists[i].first = p.docs.size();
    for (uint64_t e = starts_[b]; e < starts_[b + 1]; ++e)
      if (entries_[e].low == low) p.docs.push_back(entries_[e].doc);
    p.lists[i].second = p.docs.size() - p.lists[i].first;
  }
  // Stable: of two equally rare shingles the smaller hash comes first, so the order depends on
  // the query and the index alone.
  std::stable_sort(p.lists.begin(), p.lists.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return p;
}

void SetSearch::containment_candidates(std::span<const ShingleHash> q, uint64_t need, std::vector<DocId>& out) const {
  const auto lists = rarest_first(q);
  for (size_t i = 0; i < q.size() - need + 1; ++i)
    for (const DocId d : lists[i])
      if (size_of(d) >= need) out.push_back(d);
}

void SetSearch::offer_most_similar(std::span<const ShingleHash> q, const SearchSetOf& set_of, const SearchSkip& skip,
                                   BestMatches& best) const {
  const auto lists = rarest_first(q);
  const uint64_t qn = q.size();
  std::unordered_set<DocId> met;
  for (uint64_t i = 0; i < qn; ++i) {
    // A document not met yet shares none of the i shingles looked up so far.
    if (!best.open_to(static_cast<double>(qn - i) / static_cast<double>(qn))) break;
    for (const DocId d : lists[i]) {
      if (!met.insert(d).second || skip(d)) continue;
      const uint64_t x = size_of(d), c = std::min(qn - i, x);
      if (!best.open_to(static_cast<double>(c) / static_cast<double>(qn + x - c))) continue;
      best.offer(d, best.full() ? jaccard_at_least(q, set_of(d), best.floor()) : jaccard(q, set_of(d)));
    }
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
