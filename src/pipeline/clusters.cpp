// Clusters: components or leaders of the verified pairs, the keep ranking, the removed documents'
// similarities, and the check that ids are unique.
#include "pipeline/impl.h"

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
  for (size_t i = 0; i < docs.size(); ++i) rank[i] = rank_[docs[i]];  // compared only: the order is kept
  Clustering c = cluster_components(docs.size(), local_edges, rank);
  if (options_.cluster == ClusterMode::Leader)
    c = cluster_leaders(c, rank, [&](DocId a, DocId b) { return reaches_threshold(docs[a], docs[b]); }, threads_);
  for (size_t i = 0; i < docs.size(); ++i) clustering_.keeper[docs[i]] = docs[c.keeper[i]];
  // Each removed document's similarity to its kept one, while the group's sets are at hand.
  std::vector<DocId> removed;
  for (size_t i = 0; i < docs.size(); ++i)
    if (c.keeper[i] != i) removed.push_back(docs[i]);
  each_removed_similarity(removed, [&](size_t k, double sim) { group_similarity_[removed[k]] = sim; });
  clustering_.clusters += c.clusters;
  clustering_.removed += c.removed;
  if (!decisions_) return;
  for (size_t i = 0; i < docs.size(); ++i) decisions_->set(docs[i], c.kept(static_cast<DocId>(i)));
  decisions_->publish();
}

void Pipeline::Impl::cluster() {
  if (!clustering_.keeper.empty()) return;  // verify_in_groups clustered each group
  clustering_ = cluster_components(lengths_.size(), pairs_, rank_);
  if (options_.cluster == ClusterMode::Leader)
    clustering_ = cluster_leaders(clustering_, rank_, [&](DocId a, DocId b) { return reaches_threshold(a, b); }, threads_);
}

ErrorPlace Pipeline::Impl::place_of(DocId doc) const {
  if (pos_.empty()) {
    // Documents given in memory: by their number, while it is their record's (none skipped).
    const auto& sources = inputs_->sources();
    if (sources.size() == 1 && sources.front().kind == io::SourceKind::Memory)
      return {sources.front().display, stats_.reader.skipped == 0 ? uint64_t{doc} + 1 : 0};
    // A plain-text document is named by its id, which is its path (or - for standard input).
    return {std::string(id(doc).substr(0, 200)), 0};
  }
  // Found by position: the line number is counted now, for this message.
  const io::Source& src = inputs_->sources()[pos_[doc].source];
  return {src.display, io::line_number_at(src, pos_[doc].offset)};
}

std::string Pipeline::Impl::where_of(DocId doc) const {
  const ErrorPlace p = place_of(doc);
  return p.line ? p.source + ":" + std::to_string(p.line) : p.source;
}

// Whether two sources are one file given twice (by the same or another name).
bool Pipeline::Impl::same_file(size_t a, size_t b) const {
  if (a == b) return false;
  const auto& sources = inputs_->sources();
  struct stat sa {}, sb {};
  return ::stat(sources[a].path.c_str(), &sa) == 0 && ::stat(sources[b].path.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Ids name documents in every output, so two records with one id make them ambiguous. Found by
// sorting (hash of id, document) pairs: O(n) time, 2 x 16 bytes per document in mapped
// arrays, unmapped at once (a vector would leave glibc's heap larger for the rest of the run).
void Pipeline::Impl::check_duplicate_ids() {
  const size_t n = lengths_.size();
  if (n < 2) return;
  struct Entry {
    uint64_t hash;  // of the id
    DocId doc;
  };
  internal::BigArray<Entry> h(n);
  for (DocId d = 0; d < n; ++d) {
    const std::string_view s = id(d);
    h[d] = Entry{internal::hash_bytes(s.data(), s.size(), 0x49445321ull), d};
  }
  {
    internal::BigArray<Entry> tmp(n);
    internal::radix_sort_by_bits(h.data(), tmp.data(), n, 0, 64, [](const Entry& x) { return x.hash; }, n >= 200000 ? 16 : 11);
  }
  uint64_t dups = 0;
  DocId first_later = 0, first_earlier = 0;
  bool found = false;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && h[j].hash == h[i].hash) ++j;
    for (size_t a = i + 1; a < j; ++a)  // each in input order (the sort is stable)
      for (size_t b = i; b < a; ++b)
        if (id(h[b].doc) == id(h[a].doc)) {
          ++dups;
          if (!found || h[a].doc < first_later) {
            found = true;
            first_later = h[a].doc;
            first_earlier = h[b].doc;
          }
          break;
        }
    i = j;
  }
  stats_.duplicate_ids = dups;
  if (dups > 0 && options_.duplicate_ids == DuplicateIds::Error) {
    std::string shown(id(first_later).substr(0, 200));
    if (!pos_.empty() && same_file(pos_[first_later].source, pos_[first_earlier].source))
      throw FormatError("the same file is given twice; give each file once, or pass " NEARDUP_OPT_IS("on_duplicate_id", "keep") " to "
                        "treat the copies as separate documents", ErrorPlace{inputs_->sources()[pos_[first_later].source].display});
    if (pos_.empty() && inputs_->all_text())
      throw FormatError("the same file is given twice (directly or inside a folder); give each file once, or pass "
                        NEARDUP_OPT_IS("on_duplicate_id", "keep") " to treat the copies as separate documents", ErrorPlace{shown});
    throw FormatError(std::string("id \"") + shown + "\" is already used by " + where_of(first_earlier) +
                      " (" + std::to_string(dups) + (dups == 1 ? " record reuses" : " records reuse") + " an earlier id); ids name documents in the "
                      "outputs, so make them unique, or pass " NEARDUP_OPT_IS("on_duplicate_id", "keep") " to treat them as separate documents", place_of(first_later));
  }
}

std::vector<uint32_t> Pipeline::Impl::keep_ranks() const {
  const size_t n = lengths_.size();
  if (options_.keep != KeepPolicy::Field) return neardup::keep_ranks(n, options_.keep, lengths_);
  // By the field: numbers or strings (all one kind), missing values last, ties by input order.
  using Kind = io::KeyValue::Kind;
  auto kind = [&](DocId d) { return static_cast<Kind>(key_kind_[d]); };
  auto text = [&](DocId d) {
    const uint64_t b = d == 0 ? 0 : key_end_[d - 1];
    return std::string_view(key_blob_).substr(b, key_end_[d] - b);
  };
  std::optional<DocId> first_number, first_string;
  for (DocId d = 0; d < n; ++d) {
    if (kind(d) == Kind::Number && !first_number) first_number = d;
    if (kind(d) == Kind::String && !first_string) first_string = d;
  }
  if (first_number && first_string) {
    const DocId later = std::max(*first_number, *first_string), earlier = std::min(*first_number, *first_string);
    throw FormatError(std::string("keep-by field \"") + options_.reader.key_field + "\" is a " +
                      (kind(later) == Kind::Number ? "number" : "string") + " here but a " +
                      (kind(earlier) == Kind::Number ? "number" : "string") + " in " + where_of(earlier) +
                      "; give every record the same kind of value (numbers, or strings such as ISO dates)", place_of(later));
  }
  const bool desc = options_.keep_descending;
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](DocId a, DocId b) {
    const bool ma = kind(a) == Kind::Missing, mb = kind(b) == Kind::Missing;
    if (ma || mb) return !ma && mb;
    if (kind(a) == Kind::Number) return desc ? key_num_[a] > key_num_[b] : key_num_[a] < key_num_[b];
    return desc ? text(a) > text(b) : text(a) < text(b);
  });
  std::vector<uint32_t> rank(n);
  for (uint32_t r = 0; r < n; ++r) rank[order[r]] = r;
  return rank;
}

}  // namespace neardup
