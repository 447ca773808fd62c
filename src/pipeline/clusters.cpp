// Clusters: components or leaders of the verified pairs, the keep ranking, the removed documents'
// similarities, and the check that ids are unique.
#include "pipeline/impl.h"
#include "internal/repeated_keys.h"
#include "pipeline/policies.h"

namespace neardup {

// Computed on every thread, a chunk of removed documents at a time: an exact similarity merges
// two sets, which for two long texts takes milliseconds (on the crowded mix 11,168 of them took
// 24 ms on one thread while the others waited).
void Pipeline::Impl::each_removed_similarity(std::span<const DocId> removed, const std::function<void(size_t, double)>& put) const {
  constexpr size_t kChunk = 64;
  internal::parallel_for((removed.size() + kChunk - 1) / kChunk, threads_, [&](size_t c, size_t) {
    for (size_t k = c * kChunk; k < std::min(removed.size(), (c + 1) * kChunk); ++k)
      put(k, similarity(removed[k], clustering_.keeper[removed[k]]));
  });
}

// The group's clusters are those of all documents: a candidate component lies in one group.
void Pipeline::Impl::cluster_group(std::span<const DocId> docs, std::span<const ScoredPair> edges) {
  const auto local = [&](DocId d) { return place_in(docs, d); };
  std::vector<ScoredPair> local_edges;
  local_edges.reserve(edges.size());
  for (const ScoredPair& e : edges) local_edges.push_back({local(e.a), local(e.b), e.similarity});
  std::vector<uint32_t> rank(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) rank[i] = rank_.empty() ? docs[i] : rank_[docs[i]];  // compared only: the order is kept
  Clustering c = cluster_components(docs.size(), local_edges, rank);
  if (options_.cluster == ClusterMode::Leader)
    c = cluster_leaders(c, rank, [&](DocId a, DocId b) { return reaches_threshold(docs[a], docs[b]); }, threads_);
  for (size_t i = 0; i < docs.size(); ++i) clustering_.keeper[docs[i]] = docs[c.keeper[i]];
  // Each removed document's similarity to its kept one, while the group's sets are at hand: that
  // of their verified pair where they have one (exact, as a merge of the sets gives it; in a
  // cluster of near-copies kept by input order most removed documents have one from the kept
  // first, the center of their buckets' stars), else by a merge.
  std::vector<double> from_edge(docs.size(), -1.0);  // -1: no verified pair with the kept one
  for (const ScoredPair& e : local_edges) {
    if (c.keeper[e.b] == e.a) from_edge[e.b] = e.similarity;
    if (c.keeper[e.a] == e.b) from_edge[e.a] = e.similarity;
  }
  std::vector<DocId> removed;
  std::vector<size_t> slot;  // of each of those in group_similarity_
  for (size_t i = 0; i < docs.size(); ++i) {
    if (c.keeper[i] == i) continue;
    if (from_edge[i] < 0) {
      slot.push_back(group_similarity_.size());
      removed.push_back(docs[i]);
    }
    group_similarity_.push_back({docs[i], std::max(from_edge[i], 0.0)});
  }
  each_removed_similarity(removed, [&](size_t k, double sim) { group_similarity_[slot[k]].similarity = sim; });
  clustering_.clusters += c.clusters;
  clustering_.removed += c.removed;
  if (!decisions_) return;
  for (size_t i = 0; i < docs.size(); ++i) decisions_->set(docs[i], c.kept(static_cast<DocId>(i)));
  decisions_->publish();
}

void Pipeline::Impl::cluster() {
  if (!clustering_.keeper.empty()) return;  // verify_in_groups clustered each group
  std::vector<uint32_t> in_order;  // the ranks of KeepPolicy::First
  if (rank_.empty()) {
    in_order.resize(docs_.size());
    std::iota(in_order.begin(), in_order.end(), uint32_t{0});
  }
  const std::vector<uint32_t>& rank = rank_.empty() ? in_order : rank_;
  clustering_ = cluster_components(docs_.size(), pairs_, rank);
  if (options_.cluster == ClusterMode::Leader)
    clustering_ = cluster_leaders(clustering_, rank, [&](DocId a, DocId b) { return reaches_threshold(a, b); }, threads_);
}

// The run's clusters from its verified pairs (or those verify_in_groups decided group by group),
// their counts, and each removed document's similarity to its kept one.
void Pipeline::Impl::cluster_all() {
  const bool clustered_in_groups = !clustering_.keeper.empty();  // verify_in_groups clustered each group
  cluster();
  if (drops_pairs() && !pairs_dropped_) {  // verified all at once: dropped once clustered
    dropped_pairs_ = pairs_.size();
    std::vector<ScoredPair>().swap(pairs_);
    pairs_dropped_ = true;
  }
  stats_.clusters = clustering_.clusters;
  stats_.removed = clustering_.removed;
  // Each removed document's similarity to its kept one, in input order: counted here, written by
  // write_removed. Computed on every thread, a chunk of removed documents at a time: an exact one
  // merges two sets, which for two long texts takes milliseconds (on the crowded mix 11,168 of
  // them took 24 ms on one thread while the others waited).
  if (clustered_in_groups) {  // taken then, for the removed documents of each group: each once
    std::sort(group_similarity_.begin(), group_similarity_.end());
    NEARDUP_ASSERT(group_similarity_.size() == clustering_.removed);
    removed_similarity_.resize(group_similarity_.size());
    for (size_t k = 0; k < group_similarity_.size(); ++k) {
      NEARDUP_ASSERT(!clustering_.kept(group_similarity_[k].doc) && (k == 0 || group_similarity_[k - 1].doc < group_similarity_[k].doc));
      removed_similarity_[k] = group_similarity_[k].similarity;
    }
    std::vector<DocSimilarity>().swap(group_similarity_);
  } else {
    std::vector<DocId> removed;
    for (DocId i = 0; i < docs_.size(); ++i)
      if (!clustering_.kept(i)) removed.push_back(i);
    removed_similarity_.assign(removed.size(), 0.0);
    each_removed_similarity(removed, [&](size_t k, double sim) { removed_similarity_[k] = sim; });
  }
  stats_.removed_below_threshold = static_cast<uint64_t>(std::count_if(
      removed_similarity_.begin(), removed_similarity_.end(), [&](double s) { return s + kSimilarityEpsilon < spec_.threshold; }));
}

ErrorPlace Pipeline::Impl::place_of(DocId doc) const {
  if (!docs_.has_positions()) {
    // Documents given in memory: by their number, while it is their record's (none skipped).
    const auto& sources = inputs_->sources();
    if (sources.size() == 1 && sources.front().kind == io::SourceKind::Memory)
      return {sources.front().display, stats_.reader.skipped == 0 ? uint64_t{doc} + 1 : 0};
    // A plain-text document is named by its id, which is its path (or - for standard input).
    return {std::string(id(doc).substr(0, 200)), 0};
  }
  // Found by position: the line number is counted now, for this message.
  const io::RecordPos& pos = docs_.pos(doc);
  const io::Source& src = inputs_->sources()[pos.source];
  return {src.display, io::line_number_at(src, pos.offset)};
}

std::string Pipeline::Impl::where_of(DocId doc) const {
  const ErrorPlace p = place_of(doc);
  return p.line ? p.source + ":" + std::to_string(p.line) : p.source;
}

// Ids name documents in every output, so two records with one id make them ambiguous. Found by
// sorting (hash of id, document) pairs: O(n) time, 2 x 16 bytes per document in mapped
// arrays, unmapped at once (a vector would leave glibc's heap larger for the rest of the run).
void Pipeline::Impl::check_duplicate_ids() {
  const size_t n = docs_.size();
  if (n < 2) return;
  struct Entry {
    uint64_t hash;  // of the id
    DocId doc;
  };
  const auto each_hash = [&](auto&& fn) {
    DocumentTable::Behind behind(docs_);
    for (DocId d = 0; d < n; ++d) {
      behind.at(d);
      const std::string_view s = id(d);
      fn(d, internal::hash_bytes(s.data(), s.size(), 0x49445321ull));
    }
  };
  // Ids are nearly always distinct: only the entries whose hash may repeat are sorted. The ids
  // are hashed twice, first into the bit tables that tell which hashes may repeat, then keeping
  // only those entries, instead of one per document (16 MB for a million, which the run's peak
  // took: the check runs beside find_text_copies, which holds the texts' hashes).
  std::vector<Entry> few;
  std::vector<uint64_t> words;
  const auto each = [&](auto&& fn) { each_hash([&](DocId d, uint64_t x) { fn(x, d); }); };
  internal::for_each_repeated_key<DocId>(n, 27, each, [&](uint64_t x, DocId d) { few.push_back({x, d}); }, words);
  std::vector<uint64_t>().swap(words);
  Entry* const e = few.data();
  const size_t m = internal::sort_repeated_keys(e, few.size(), [](const Entry& x) { return x.hash; });
  uint64_t dups = 0;
  DocId first_later = 0, first_earlier = 0;
  bool found = false;
  for (size_t i = 0; i < m;) {
    size_t j = i + 1;
    while (j < m && e[j].hash == e[i].hash) ++j;
    for (size_t a = i + 1; a < j; ++a)  // each in input order (the sort is stable)
      for (size_t b = i; b < a; ++b)
        if (id(e[b].doc) == id(e[a].doc)) {
          ++dups;
          if (!found || e[a].doc < first_later) {
            found = true;
            first_later = e[a].doc;
            first_earlier = e[b].doc;
          }
          break;
        }
    i = j;
  }
  stats_.duplicate_ids = dups;
  if (dups > 0 && options_.duplicate_ids == DuplicateIds::Error) {
    ReusedIdKind kind = ReusedIdKind::Records;
    if (docs_.has_positions() && one_file_twice(*inputs_, docs_.pos(first_later).source, docs_.pos(first_earlier).source))
      kind = ReusedIdKind::JsonlFileTwice;
    else if (!docs_.has_positions() && inputs_->all_text())
      kind = ReusedIdKind::TextFileTwice;
    throw reused_id_error(kind, id(first_later), dups, where_of(first_earlier), place_of(first_later));
  }
}

// Empty for KeepPolicy::First, whose rank is the document's number: 4 bytes per document less
// while the run verifies.
std::vector<uint32_t> Pipeline::Impl::keep_ranks() const {
  const size_t n = docs_.size();
  if (options_.keep == KeepPolicy::First) return {};
  if (options_.keep != KeepPolicy::Field) return neardup::keep_ranks(n, options_.keep, docs_.lengths());
  // By the field: numbers or strings (all one kind), missing values last, ties by input order.
  using Kind = io::KeyValue::Kind;
  auto kind = [&](DocId d) { return docs_.key(d).kind; };
  std::optional<DocId> first_number, first_string;
  for (DocId d = 0; d < n; ++d) {
    if (kind(d) == Kind::Number && !first_number) first_number = d;
    if (kind(d) == Kind::String && !first_string) first_string = d;
  }
  if (first_number && first_string) {
    const DocId later = std::max(*first_number, *first_string), earlier = std::min(*first_number, *first_string);
    throw keep_by_kinds_differ(options_, kind(later) == Kind::Number, where_of(earlier), place_of(later));
  }
  auto value = [&](DocId d) { return docs_.key(d); };
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](DocId a, DocId b) { return keep_before(options_, 0, value(a), 0, value(b)); });
  std::vector<uint32_t> rank(n);
  for (uint32_t r = 0; r < n; ++r) rank[order[r]] = r;
  return rank;
}

}  // namespace neardup
