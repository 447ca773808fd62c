#include "neardup/containment.h"

#include <algorithm>

#include "internal/prefix_ranking.h"
#include "internal/sorted_merge.h"

namespace neardup {

namespace {

struct PrefixEntry {
  uint32_t set;  // local index
  uint32_t pos;  // where the shingle is among the set's shared ranks
};

// The sets' ranks and what each needs as the smaller side of a pair.
struct ContainmentSides {
  internal::SharedRanks ranks;
  std::vector<uint32_t> need;    // ceil(t |A|)
  std::vector<uint32_t> prefix;  // shared ranks that may hold the first common shingle
  std::vector<uint64_t> starts;  // rank r's postings: postings[starts[r], starts[r + 1])
  std::vector<PrefixEntry> postings;

  bool smaller(size_t a, size_t b) const noexcept {
    return ranks.len[a] != ranks.len[b] ? ranks.len[a] < ranks.len[b] : a < b;
  }
};

ContainmentSides index_prefixes(size_t n, const std::function<std::span<const ShingleHash>(size_t)>& values_of, double t, int threads) {
  ContainmentSides s;
  s.ranks = internal::rank_shared_values<uint64_t>(n, values_of, threads);
  const ExactThreshold th = ExactThreshold::from(t);
  s.need.resize(n);
  s.prefix.assign(n, 0);
  s.starts.assign(s.ranks.num_ranks + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t len = s.ranks.len[i], shared = s.ranks[i].size();
    if (len == 0) continue;
    s.need[i] = static_cast<uint32_t>(th.min_overlap(len));
    // The first len - need + 1 shingles, unshared ones first: those may be all of it.
    const uint64_t head = len - s.need[i] + 1;
    if (head > s.ranks.unshared[i] && shared >= s.need[i])
      s.prefix[i] = static_cast<uint32_t>(std::min<uint64_t>(shared, head - s.ranks.unshared[i]));
    for (uint32_t p = 0; p < s.prefix[i]; ++p) ++s.starts[s.ranks[i][p] + 1];
  }
  for (size_t r = 0; r < s.ranks.num_ranks; ++r) s.starts[r + 1] += s.starts[r];
  s.postings.resize(s.starts.back());
  std::vector<uint64_t> fill(s.starts.begin(), s.starts.end() - 1);
  for (size_t i = 0; i < n; ++i)
    for (uint32_t p = 0; p < s.prefix[i]; ++p) s.postings[fill[s.ranks[i][p]]++] = {static_cast<uint32_t>(i), p};
  return s;
}

// The pairs with `larger` as the larger side.
void probe(const ContainmentSides& s, size_t larger, std::vector<uint32_t>& met, uint32_t stamp, std::span<const DocId> docs,
           std::vector<ScoredPair>& out, ContainmentStats& st) {
  const auto b = s.ranks[larger];
  for (size_t pb = 0; pb < b.size(); ++pb) {
    const uint32_t r = b[pb];
    for (uint64_t k = s.starts[r]; k < s.starts[r + 1]; ++k) {
      const auto [a_set, pa] = s.postings[k];
      if (!s.smaller(a_set, larger) || met[a_set] == stamp) continue;
      met[a_set] = stamp;  // here at its first common shingle: later ones bound it lower
      ++st.candidates;
      const auto a = s.ranks[a_set];
      const long need = s.need[a_set];
      if (1 + static_cast<long>(std::min(a.size() - pa - 1, b.size() - pb - 1)) < need) continue;
      ++st.verified;
      const long rest = internal::count_common_at_least(a.data() + pa + 1, a.size() - pa - 1, b.data() + pb + 1, b.size() - pb - 1, need - 1);
      if (rest < 0) continue;
      const double share = static_cast<double>(rest + 1) / static_cast<double>(s.ranks.len[a_set]);
      const DocId x = docs[a_set], y = docs[larger];
      out.push_back({std::min(x, y), std::max(x, y), share});
    }
  }
}

}  // namespace

std::vector<ScoredPair> containment_pairs(std::span<const DocId> docs, const SetJoin::SetOf& set_of, double t, int threads,
                                          ContainmentStats* stats) {
  const size_t n = docs.size();
  if (n < 2) return {};
  const ContainmentSides s = index_prefixes(n, [&](size_t i) { return set_of(docs[i]); }, t, threads);
  const size_t workers = static_cast<size_t>(std::max(1, threads));
  std::vector<std::vector<ScoredPair>> found(workers);
  std::vector<ContainmentStats> st(workers);
  std::vector<std::vector<uint32_t>> met(workers);
  // Chunks of sets, taken in turn: a thread's stamp tells the sets it met for this larger one.
  constexpr size_t kChunk = 256;
  internal::parallel_for((n + kChunk - 1) / kChunk, threads, [&](size_t c, size_t w) {
    if (met[w].empty()) met[w].assign(n, UINT32_MAX);
    for (size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i)
      probe(s, i, met[w], static_cast<uint32_t>(i), docs, found[w], st[w]);
  });
  std::vector<ScoredPair> out;
  ContainmentStats total;
  for (size_t w = 0; w < workers; ++w) {
    out.insert(out.end(), found[w].begin(), found[w].end());
    total.candidates += st[w].candidates;
    total.verified += st[w].verified;
  }
  std::sort(out.begin(), out.end(), by_pair);
  total.results = out.size();
  if (stats) *stats = total;
  return out;
}

}  // namespace neardup
