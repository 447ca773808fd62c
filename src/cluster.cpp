#include "neardup/cluster.h"

#include "internal/union_find.h"
#include "neardup/error.h"

namespace neardup {

Clustering cluster_documents(size_t num_docs, std::span<const ScoredPair> edges, KeepPolicy policy,
                             std::span<const uint32_t> lengths) {
  if (policy == KeepPolicy::Longest && lengths.size() != num_docs)
    throw UsageError("keep policy 'longest' needs the length of every document");
  internal::UnionFind uf(num_docs);
  for (const ScoredPair& e : edges) uf.unite(e.a, e.b);

  Clustering c;
  c.keeper.resize(num_docs);
  std::vector<uint32_t> size(num_docs, 0);
  // Roots are the smallest member, so "first" is the root; "longest" scans members in order.
  for (DocId i = 0; i < num_docs; ++i) {
    const DocId r = uf.find(i);
    ++size[r];
    if (i == r) {
      c.keeper[r] = r;
    } else if (policy == KeepPolicy::Longest && lengths[i] > lengths[c.keeper[r]]) {
      c.keeper[r] = i;
    }
  }
  for (DocId i = 0; i < num_docs; ++i) {
    const DocId r = uf.find(i);
    c.keeper[i] = c.keeper[r];
  }
  for (DocId i = 0; i < num_docs; ++i) {
    if (uf.find(i) == i && size[i] > 1) ++c.clusters;
    if (c.keeper[i] != i) ++c.removed;
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
