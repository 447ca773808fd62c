// Exact searches of one query's shingle set against many indexed sets, through an inverted index
// of every indexed shingle (the index's question "which of you is like this one" asked two more
// ways than the LSH bands answer):
//
//  * containment: every indexed set X holding at least a fraction t of the query Q,
//    |Q ∩ X| >= ceil(t |Q|). Such an X holds one of any |Q| - ceil(t |Q|) + 1 of Q's shingles
//    (the prefix filter: Chaudhuri, Ganti and Kaushik, ICDE 2006), so only that many of Q's
//    shingles are looked up, the rarest ones, and each set found is verified by a merge. MinHash
//    sketches (LSH Ensemble: Zhu, Nargesian, Pu and Miller, VLDB 2016) estimate containment
//    through Jaccard, which is small when the sizes differ: a 50-word passage inside a 5,000-word
//    page has J < 0.01, and at J = 0.01 128 minhashes share no value at all with probability 0.28.
//    The inverted index finds it every time.
//  * top k: the k sets of highest Jaccard with Q. Q's shingles are taken rarest first; a set not
//    met after i of them shares at most |Q| - i shingles with Q, so J <= (|Q| - i) / |Q|, and the
//    search stops once the k-th best verified similarity exceeds that bound (the bound of top-k
//    set similarity joins: Xiao, Wang, Lin and Shang, ICDE 2009). A set met at the i-th shingle
//    is verified only if its size leaves it a chance, J <= c / (|Q| + |X| - c) with
//    c = min(|Q| - i, |X|).
//
// Both answers are exact: the same as comparing Q with every indexed set.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "neardup/types.h"

namespace neardup {

/// One indexed document found by a query.
struct IndexMatch {
  DocId doc = 0;  ///< the indexed document
  double similarity = 0.0;
  friend bool operator==(const IndexMatch&, const IndexMatch&) = default;
};

/// The order of query answers: by decreasing similarity, then DocId.
inline bool better_match(const IndexMatch& a, const IndexMatch& b) noexcept {
  return a.similarity != b.similarity ? a.similarity > b.similarity : a.doc < b.doc;
}

class SetSearch {
 public:
  /// The shingle set of a document: sorted, distinct.
  using SetOf = std::function<std::span<const ShingleHash>(DocId)>;
  /// Whether a document is left out (removed from the index, or never searched).
  using Skip = std::function<bool(DocId)>;

  /// Indexes the sets of the documents [0, n) that skip() does not leave out. Memory: 4 bytes
  /// per indexed shingle and 16 per distinct one (and 16 per shingle while it is built).
  SetSearch(size_t n, const SetOf& set_of, const Skip& skip, int threads);

  /// The documents indexed: [0, covered()). A query compares the documents [covered(), slots)
  /// (added since it was built) with the query one by one.
  size_t covered() const noexcept { return sizes_.size(); }
  uint64_t bytes() const noexcept;

  /// Every document X, not left out by skip(), with |q ∩ X| >= ceil(t |q|), scored by the
  /// containment |q ∩ X| / |q|, best first (better_match). An empty q contains nothing.
  void containing(std::span<const ShingleHash> q, double t, const SetOf& set_of, const Skip& skip, size_t slots,
                  std::vector<IndexMatch>& out) const;
  /// The k documents of highest Jaccard with q (above 0), best first (better_match: of equal
  /// similarities the lower DocId first, and in).
  void most_similar(std::span<const ShingleHash> q, size_t k, const SetOf& set_of, const Skip& skip, size_t slots,
                    std::vector<IndexMatch>& out) const;

 private:
  /// The documents holding h, ascending (empty if none).
  std::span<const DocId> postings(ShingleHash h) const noexcept;
  /// q's postings, fewest documents first.
  std::vector<std::span<const DocId>> rarest_first(std::span<const ShingleHash> q) const;

  std::vector<uint32_t> sizes_;       // per document: its set's size (0 if left out)
  std::vector<ShingleHash> values_;   // the distinct indexed shingles, ascending
  std::vector<uint64_t> starts_;      // values_[i]'s documents: docs_[starts_[i], starts_[i + 1])
  std::vector<DocId> docs_;
};

}  // namespace neardup
