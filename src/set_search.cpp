#include "neardup/set_search.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "internal/prefix_ranking.h"
#include "kernels/dispatch.h"
#include "neardup/setjoin.h"

namespace neardup {

SetSearch::SetSearch(size_t n, const SetOf& set_of, const Skip& skip, int threads) {
  using namespace internal::ranking_detail;
  using E = Entries<uint64_t>;
  sizes_.assign(n, 0);
  uint64_t total = 0;
  for (DocId d = 0; d < n; ++d) {
    if (skip(d)) continue;
    const size_t len = set_of(d).size();
    if (len >= UINT32_MAX) throw UsageError("a document has more than 2^32 shingles");
    sizes_[d] = static_cast<uint32_t>(len);
    total += len;
  }
  // Every (shingle, document) entry, by the shingle's top bits and then sorted in each bucket, as
  // the prefix filter's ranking does: the documents stay ascending within a shingle.
  const int msd_bits = total >= (uint64_t{1} << 22) ? 12 : 8;
  internal::BigArray<E::Entry> entries(total);
  const auto values_of = [&](size_t d) { return sizes_[d] ? set_of(static_cast<DocId>(d)) : std::span<const ShingleHash>{}; };
  const std::vector<uint64_t> start = bucket_entries<uint64_t>(n, values_of, msd_bits, threads, entries);
  std::vector<std::vector<E::Entry>> scratch(static_cast<size_t>(std::max(1, threads)));
  internal::parallel_for(start.size() - 1, threads, [&](size_t b, size_t tid) {
    E::sort(entries.data() + start[b], start[b + 1] - start[b], msd_bits, scratch[tid]);
  });
  scratch.clear();
  docs_.resize(total);
  for (uint64_t i = 0; i < total; ++i) {
    if (i == 0 || entries[i].value != entries[i - 1].value) {
      values_.push_back(entries[i].value);
      starts_.push_back(i);
    }
    docs_[i] = static_cast<DocId>(entries[i].set);
  }
  starts_.push_back(total);
}

uint64_t SetSearch::bytes() const noexcept {
  return sizes_.size() * sizeof(uint32_t) + values_.size() * sizeof(ShingleHash) + starts_.size() * sizeof(uint64_t) +
         docs_.size() * sizeof(DocId);
}

std::span<const DocId> SetSearch::postings(ShingleHash h) const noexcept {
  const auto it = std::lower_bound(values_.begin(), values_.end(), h);
  if (it == values_.end() || *it != h) return {};
  const auto i = static_cast<size_t>(it - values_.begin());
  return {docs_.data() + starts_[i], static_cast<size_t>(starts_[i + 1] - starts_[i])};
}

std::vector<std::span<const DocId>> SetSearch::rarest_first(std::span<const ShingleHash> q) const {
  std::vector<std::span<const DocId>> lists(q.size());
  for (size_t i = 0; i < q.size(); ++i) lists[i] = postings(q[i]);
  // Stable: of two equally rare shingles the smaller hash comes first, so the order (and the
  // answers' order among ties) depends on the query alone.
  std::stable_sort(lists.begin(), lists.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  return lists;
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
