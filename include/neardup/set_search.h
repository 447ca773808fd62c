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
//  * top k: the k sets of highest Jaccard with Q, by a threshold algorithm over Q's lists
//    taken rarest first, each set's entries counted: a set not met after i of them shares at
//    most |Q| - i shingles with Q, so J <= (|Q| - i) / |Q|, and the lists left are skipped once
//    the k-th best verified similarity is above that (the bound of top-k set similarity joins:
//    Xiao, Wang, Lin and Shang, ICDE 2009); the sets with the most entries are verified at
//    checkpoints to raise that floor, and at the end every set met is verified, in decreasing
//    order of its bound min(|X|, count + |Q| - i) common shingles, while the bound can beat the
//    floor. With every list read, the bound is the set's Jaccard itself, so few are merged.
//
// Both answers are exact: the same as comparing Q with every indexed set.
//
// The inverted index: one entry per indexed shingle, the document and the hash's low 32 bits,
// in lists by the hash's top bits (about eight shingles' entries a list), each list in DocId
// order. A shingle's documents are the entries of its list with its low bits: 8 bytes per
// shingle and about 1 for the lists' starts, against 8 for the stored sets themselves. Built
// in two passes over the sets (count, fill), each thread taking a range of lists, with no other
// memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
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

using SearchSetOf = std::function<std::span<const ShingleHash>(DocId)>;
/// Whether a document is left out (removed from the index).
using SearchSkip = std::function<bool(DocId)>;

/// The k best answers of a top-k search so far (better_match; the worst of them on top).
class BestMatches {
 public:
  explicit BestMatches(size_t k) : k_(k) {}
  bool full() const noexcept { return heap_.size() == k_; }
  size_t capacity() const noexcept { return k_; }
  double floor() const noexcept { return heap_.top().similarity; }
  /// Whether a document of similarity `sim` could still get in (a tie may: the lower DocId wins).
  bool open_to(double sim) const noexcept { return !full() || sim >= floor(); }
  void offer(DocId d, double sim);
  /// The answers, best first.
  std::vector<IndexMatch> take();

 private:
  size_t k_;
  std::priority_queue<IndexMatch, std::vector<IndexMatch>, decltype(&better_match)> heap_{better_match};
};

/// The inverted index of the sets of the documents [first, last): one segment of an index's.
class SetSearch {
 public:
  /// Indexes the sets of the documents [first, last) that skip() does not leave out.
  SetSearch(DocId first, DocId last, const SearchSetOf& set_of, const SearchSkip& skip, int threads);
  DocId first() const noexcept { return first_; }
  DocId last() const noexcept { return static_cast<DocId>(first_ + sizes_.size()); }
  uint64_t bytes() const noexcept;

  /// Appends the documents that may hold `need` of q's shingles: those with that many shingles
  /// in the lists of q's |q| - need + 1 rarest (here), perhaps twice.
  void containment_candidates(std::span<const ShingleHash> q, uint64_t need, std::vector<DocId>& out) const;
  /// Offers `best` every document here that may be among the k of highest Jaccard with q.
  void offer_most_similar(std::span<const ShingleHash> q, const SearchSetOf& set_of, const SearchSkip& skip,
                          BestMatches& best) const;

 private:
  struct Entry {
    DocId doc;
    uint32_t low;  // the shingle's low 32 bits
  };
  /// A shingle's documents: the entries of its list with its low bits.
  struct Postings {
    uint64_t begin, end;  // its list's entries
    uint32_t low;
    uint64_t count;  // how many of them are the shingle's
  };
  /// q's shingles' postings, counted, fewest documents first; their documents are read as they
  /// are taken (each_doc), so a search that stops early reads no more.
  std::vector<Postings> rarest_first(std::span<const ShingleHash> q) const;
  template <class Fn>
  void each_doc(const Postings& p, Fn&& fn) const {
    for (uint64_t e = p.begin; e < p.end; ++e)
      if (entries_[e].low == p.low) fn(entries_[e].doc);
  }
  uint32_t size_of(DocId d) const noexcept { return sizes_[d - first_]; }

  DocId first_ = 0;
  std::vector<uint32_t> sizes_;   // per document from first_: its set's size (0 if left out)
  int shift_ = 64;                // a shingle's list: its top 64 - shift_ bits
  std::vector<uint64_t> starts_;  // list b: entries_[starts_[b], starts_[b + 1])
  std::unique_ptr<Entry[]> entries_;  // uninitialised when made: every entry is written once
  uint64_t entry_count_ = 0;
};

/// The exact searches over documents [0, slots) of an index: the segments cover [0, end()), and
/// the documents after them (fewer than kTail) are compared one by one. Documents added later
/// are indexed as a new segment once kTail of them wait, and the last two segments are merged
/// (indexed again as one) while the older is at most twice the newer, so there are O(log n)
/// segments and each document is indexed O(log n) times, as in a log-structured merge tree.
class SegmentedSearch {
 public:
  static constexpr size_t kTail = 128;

  /// The segments for documents [0, slots), from these (of fewer documents): a copy, so that a
  /// query holding the older one reads it undisturbed.
  SegmentedSearch extended(size_t slots, const SearchSetOf& set_of, const SearchSkip& skip, int threads) const;
  size_t end() const noexcept { return parts_.empty() ? 0 : parts_.back()->last(); }
  size_t segments() const noexcept { return parts_.size(); }
  uint64_t bytes() const noexcept;

  /// Every document X of [0, slots), not left out, with |q ∩ X| >= ceil(t |q|), scored by the
  /// containment |q ∩ X| / |q|, best first (better_match). An empty q contains nothing.
  void containing(std::span<const ShingleHash> q, double t, const SearchSetOf& set_of, const SearchSkip& skip, size_t slots,
                  std::vector<IndexMatch>& out) const;
  /// The k documents of highest Jaccard with q (above 0), best first (better_match: of equal
  /// similarities the lower DocId first, and in).
  void most_similar(std::span<const ShingleHash> q, size_t k, const SearchSetOf& set_of, const SearchSkip& skip,
                    size_t slots, std::vector<IndexMatch>& out) const;

 private:
  std::vector<std::shared_ptr<const SetSearch>> parts_;
};

}  // namespace neardup
