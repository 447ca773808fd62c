// The exact containment join: every pair of shingle sets where the smaller is at least a
// fraction t contained in the larger, |A ∩ B| >= ceil(t min(|A|, |B|)), scored by
// |A ∩ B| / min(|A|, |B|) (the overlap coefficient). It finds what Jaccard misses when sizes
// differ: a quoted passage inside a longer page, a licence inside a source file.
//
// The prefix filter (Chaudhuri, Ganti and Kaushik, ICDE 2006; Bayardo, Ma and Srikant, WWW 2007)
// in the global rarest-first order of the exact Jaccard join (internal/prefix_ranking.h), with
// the bound set by the smaller side alone: the smaller set A needs ceil(t |A|) common shingles,
// so one lies among its first |A| - ceil(t |A|) + 1, and only those prefixes are indexed. The
// larger set B can hold A anywhere, so each set is probed with all its shingles against the
// prefixes of the sets smaller than it (by size, then DocId). Found at the first common shingle,
// a pair is dropped when the shingles left on either side cannot bring the overlap to A's need
// (the positional filter of PPJoin: Xiao, Wang, Lin and Yu, WWW 2008), and otherwise verified by
// a merge of the rest that stops as soon as the need is out of reach.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "neardup/setjoin.h"
#include "neardup/types.h"

namespace neardup {

struct ContainmentStats {
  uint64_t candidates = 0;  ///< pairs found at a common prefix shingle
  uint64_t verified = 0;    ///< candidates that passed the positional filter and were merged
  uint64_t results = 0;     ///< pairs at or above the threshold
};

/// Every pair (a < b) of `docs` whose smaller set (by size, then DocId) shares at least
/// ceil(t |smaller|) shingles with the other, scored by that share, in (a, b) order. Empty sets
/// are never in a pair. The result does not depend on the number of threads.
std::vector<ScoredPair> containment_pairs(std::span<const DocId> docs, const SetJoin::SetOf& set_of, double t, int threads,
                                          ContainmentStats* stats = nullptr);

}  // namespace neardup
