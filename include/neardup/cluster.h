// Clusters: connected components of the verified similarity graph (union-find), and the keeper
// of each cluster. The result depends only on the set of edges, not on their order or on the
// number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "neardup/types.h"

namespace neardup {

enum class KeepPolicy {
  First,    ///< the document that comes first in input order
  Longest,  ///< the longest document (bytes of text); ties go to the first
};

struct Clustering {
  /// keeper[i]: the document kept for i's cluster (i itself when i is kept or alone).
  std::vector<DocId> keeper;
  uint64_t clusters = 0;  ///< clusters with at least two documents
  uint64_t removed = 0;   ///< documents that are not their cluster's keeper

  bool kept(DocId i) const noexcept { return keeper[i] == i; }
};

/// `lengths` (bytes of text per document, at most --max-doc-bytes) is needed for
/// KeepPolicy::Longest only.
Clustering cluster_documents(size_t num_docs, std::span<const ScoredPair> edges, KeepPolicy policy,
                             std::span<const uint32_t> lengths = {});

/// The clusters of two or more documents: numbered in the order of their first document, each
/// listing its members in input order.
std::vector<std::vector<DocId>> cluster_members(const Clustering& clustering);

}  // namespace neardup
