// Clusters: connected components of the verified similarity graph (union-find), and the keeper
// of each cluster. The result depends only on the set of edges, not on their order or on the
// number of threads.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "neardup/types.h"

namespace neardup {

enum class KeepPolicy {
  First,    ///< the document that comes first in input order
  Longest,  ///< the longest document (bytes of text); ties go to the first
  Field,    ///< by a field of the records (RunOptions::keep_by); ties go to the first
};

/// How documents are grouped.
enum class ClusterMode {
  /// Connected components of the verified pairs: one document kept per component. Components
  /// chain, so a removed document may be less similar than the threshold to the kept one.
  Components,
  /// Within each component, documents in keep order: each is removed in favour of the first kept
  /// document (a leader) it is similar to (J >= t), or is kept as a new leader. Every removed
  /// document is at least t-similar to the document kept in its place.
  Leader,
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

/// Keep order as a rank per document (a permutation: smaller is preferred): input order
/// (First), longest text first (Longest, needs `lengths`); ties by input order.
std::vector<uint32_t> keep_ranks(size_t num_docs, KeepPolicy policy, std::span<const uint32_t> lengths = {});

/// Connected components; each keeps its member of smallest rank.
Clustering cluster_components(size_t num_docs, std::span<const ScoredPair> edges, std::span<const uint32_t> rank);

/// Leader clustering inside the components of `components` (ClusterMode::Leader): members in
/// rank order; similar(member, leader) decides J >= t. Components are done in parallel; the
/// result does not depend on `threads`. A component of m documents with L leaders costs up to
/// m * L calls of similar().
Clustering cluster_leaders(const Clustering& components, std::span<const uint32_t> rank,
                           const std::function<bool(DocId, DocId)>& similar, int threads);

/// The clusters of two or more documents: numbered in the order of their first document, each
/// listing its members in input order.
std::vector<std::vector<DocId>> cluster_members(const Clustering& clustering);

}  // namespace neardup
