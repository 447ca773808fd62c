#include "neardup/cluster.h"

#include <algorithm>
#include <numeric>

#include "internal/parallel.h"
#include "neardup/union_find.h"
#include "neardup/error.h"

namespace neardup {

Clustering cluster_documents(size_t num_docs, std::span<const ScoredPair> edges, KeepPolicy policy,
                             std::span<const uint32_t> lengths) {
  return cluster_components(num_docs, edges, keep_ranks(num_docs, policy, lengths));
}

std::vector<uint32_t> keep_ranks(size_t num_docs, KeepPolicy policy, std::span<const uint32_t> lengths) {
  std::vector<uint32_t> order(num_docs);
  std::iota(order.begin(), order.end(), uint32_t{0});
  if (policy == KeepPolicy::Longest) {
    if (lengths.size() != num_docs) throw UsageError("keep policy 'longest' needs the length of every document");
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return lengths[a] > lengths[b]; });
  } else if (policy == KeepPolicy::Field) {
    throw UsageError("keep policy 'field' takes its ranks from the pipeline (RunOptions::keep_by)");
  }
  std::vector<uint32_t> rank(num_docs);
  for (uint32_t r = 0; r < num_docs; ++r) rank[order[r]] = r;
  return rank;
}

Clustering cluster_components(size_t num_docs, std::span<const ScoredPair> edges, std::span<const uint32_t> rank) {
  if (rank.size() != num_docs) throw UsageError("cluster_components needs a rank for every document");
  UnionFind uf(num_docs);
  for (const ScoredPair& e : edges) uf.unite(e.a, e.b);
  Clustering c;
  c.keeper.resize(num_docs);
  std::vector<uint32_t> size(num_docs, 0);
  for (DocId i = 0; i < num_docs; ++i) {
    const DocId r = uf.find(i);
    ++size[r];
    if (i == r || rank[i] < rank[c.keeper[r]]) c.keeper[r] = i;
  }
  for (DocId i = 0; i < num_docs; ++i) c.keeper[i] = c.keeper[uf.find(i)];
  for (DocId i = 0; i < num_docs; ++i) {
    if (uf.find(i) == i && size[i] > 1) ++c.clusters;
    if (c.keeper[i] != i) ++c.removed;
  }
  return c;
}

Clustering cluster_leaders(const Clustering& components, std::span<const uint32_t> rank,
                           const std::function<bool(DocId, DocId)>& similar, int threads) {
  const size_t n = components.keeper.size();
  if (rank.size() != n) throw UsageError("cluster_leaders needs a rank for every document");
  Clustering c;
  c.keeper.resize(n);
  for (DocId i = 0; i < n; ++i) c.keeper[i] = i;
  auto groups = cluster_members(components);
  internal::parallel_for(groups.size(), threads, [&](size_t g, size_t) {
    auto& members = groups[g];
    std::sort(members.begin(), members.end(), [&](DocId a, DocId b) { return rank[a] < rank[b]; });
    std::vector<DocId> leaders;
    for (const DocId x : members) {
      DocId kept = x;
      for (const DocId l : leaders)
        if (similar(std::min(x, l), std::max(x, l))) {
          kept = l;
          break;
        }
      if (kept == x) leaders.push_back(x);
      c.keeper[x] = kept;  // each document of one component is written by one thread
    }
  });
  std::vector<uint32_t> followers(n, 0);
  for (DocId i = 0; i < n; ++i)
    if (c.keeper[i] != i) {
      ++c.removed;
      if (followers[c.keeper[i]]++ == 0) ++c.clusters;
    }
  return c;
}

std::vector<std::vector<DocId>> cluster_members(const Clustering& c) {
  const size_t n = c.keeper.size();
  std::vector<uint32_t> size(n, 0);
  for (DocId i = 0; i < n; ++i) ++size[c.keeper[i]];
  std::vector<std::vector<DocId>> groups;
  std::vector<uint32_t> group_of(n, 0xFFFFFFFFu);
  for (DocId i = 0; i < n; ++i) {
    const DocId kp = c.keeper[i];
    if (size[kp] < 2) continue;
    if (group_of[kp] == 0xFFFFFFFFu) {
      group_of[kp] = static_cast<uint32_t>(groups.size());
      groups.emplace_back();
    }
    groups[group_of[kp]].push_back(i);
  }
  return groups;
}

}  // namespace neardup
