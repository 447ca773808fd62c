#include "neardup/set_search.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "internal/parallel.h"
#include "kernels/dispatch.h"
#include "neardup/setjoin.h"

namespace neardup {

SetSearch::SetSearch(size_t n, const SetOf& set_of, const Skip& skip, int threads) {
  sizes_.assign(n, 0);
  uint64_t total = 0;
  for (DocId d = 0; d < n; ++d) {
    if (skip(d)) continue;
    const size_t len = set_of(d).size();
    if (len >= UINT32_MAX) throw UsageError("a document has more than 2^32 shingles");
    sizes_[d] = static_cast<uint32_t>(len);
    total += len;
  }
  // A list for about eight shingles (a power of two): a short scan, and starts of about a byte
  // per shingle. At most 32 bits, so that the top bits and the low 32 are apart.
  int bits = 8;
  while (bits < 32 && (uint64_t{8} << (bits + 1)) <= total) ++bits;
  shift_ = 64 - bits;
  const size_t lists = size_t{1} << bits;
  starts_.assign(lists + 1, 0);
  entries_.resize(total);
  // Each thread counts, then fills, the lists of its own range of top bits, taking the sets in
  // DocId order, so that every list comes out ascending; a set is sorted, so its values in a range
  // are one run, found by binary search.
  const size_t parts = std::clamp<size_t>(static_cast<size_t>(std::max(1, threads)), 1, 64);
  const auto run_of = [&](DocId d, size_t lo, size_t hi) {
    const auto s = set_of(d);
    const auto from = std::lower_bound(s.begin(), s.end(), ShingleHash{lo} << shift_);
    const auto to = hi == lists ? s.end() : std::lower_bound(from, s.end(), ShingleHash{hi} << shift_);
    return std::span<const ShingleHash>(from, to);
  };
  const auto each_part = [&](auto&& fn) {
    internal::parallel_for(parts, threads, [&](size_t p, size_t) {
      const auto [lo, hi] = internal::part_range(lists, p, parts);
      for (DocId d = 0; d < n; ++d)
        if (sizes_[d]) fn(d, run_of(d, lo, hi));
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
  return sizes_.size() * sizeof(uint32_t) + starts_.size() * sizeof(uint64_t) + entries_.size() * sizeof(Entry);
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

void SetSearch::containing(std::span<const ShingleHash> q, double t, const SetOf& set_of, const Skip& skip, size_t slots,
                           std::vector<IndexMatch>& out) const {
  out.clear();
  if (q.empty()) return;
  const uint64_t need = ExactThreshold::from(t).min_overlap(q.size());
  const auto& kernels = internal::kernels();
  const auto check = [&](DocId d) {
    const auto x = set_of(d);
    const long common = kernels.set_common_at_least(q.data(), q.size(), x.data(), x.size(), static_cast<long>(need));
    if (common >= 0 && static_cast<uint64_t>(common) >= need)
      out.push_back({d, static_cast<double>(common) / static_cast<double>(q.size())});
  };
  const auto lists = rarest_first(q);
  std::vector<DocId> found;
  for (size_t i = 0; i < q.size() - need + 1; ++i) found.insert(found.end(), lists[i].begin(), lists[i].end());
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  for (const DocId d : found)
    if (sizes_[d] >= need && !skip(d)) check(d);
  for (size_t d = covered(); d < slots; ++d)
    if (!skip(static_cast<DocId>(d))) check(static_cast<DocId>(d));
  std::sort(out.begin(), out.end(), better_match);
}

namespace {

// The k best answers so far; the worst of them on top.
class BestMatches {
 public:
  explicit BestMatches(size_t k) : k_(k) {}
  bool full() const noexcept { return heap_.size() == k_; }
  double floor() const noexcept { return heap_.top().similarity; }
  // Whether a document of similarity `sim` could still get in (a tie may: the lower DocId wins).
  bool open_to(double sim) const noexcept { return !full() || sim >= floor(); }
  void offer(DocId d, double sim) {
    if (sim <= 0) return;
    if (!full()) {
      heap_.push({d, sim});
    } else if (better_match({d, sim}, heap_.top())) {
      heap_.pop();
      heap_.push({d, sim});
    }
  }
  void take(std::vector<IndexMatch>& out) {
    for (; !heap_.empty(); heap_.pop()) out.push_back(heap_.top());
    std::sort(out.begin(), out.end(), better_match);
  }

 private:
  size_t k_;
  std::priority_queue<IndexMatch, std::vector<IndexMatch>, decltype(&better_match)> heap_{better_match};
};

}  // namespace

void SetSearch::most_similar(std::span<const ShingleHash> q, size_t k, const SetOf& set_of, const Skip& skip, size_t slots,
                             std::vector<IndexMatch>& out) const {
  out.clear();
  if (q.empty() || k == 0) return;
  BestMatches best(k);
  // The documents added since the search was built set the first bar.
  for (size_t d = covered(); d < slots; ++d)
    if (!skip(static_cast<DocId>(d))) best.offer(static_cast<DocId>(d), jaccard(q, set_of(static_cast<DocId>(d))));
  const auto lists = rarest_first(q);
  const uint64_t qn = q.size();
  std::unordered_set<DocId> met;
  for (uint64_t i = 0; i < qn; ++i) {
    // A document not met yet shares none of the i shingles looked up so far.
    if (!best.open_to(static_cast<double>(qn - i) / static_cast<double>(qn))) break;
    for (const DocId d : lists[i]) {
      if (!met.insert(d).second || skip(d)) continue;
      const uint64_t x = sizes_[d], c = std::min(qn - i, x);
      if (!best.open_to(static_cast<double>(c) / static_cast<double>(qn + x - c))) continue;
      best.offer(d, best.full() ? jaccard_at_least(q, set_of(d), best.floor()) : jaccard(q, set_of(d)));
    }
  }
  best.take(out);
}

}  // namespace neardup
