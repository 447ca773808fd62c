// The index's exact searches (containment, top k): SetSearch over its stored sets.
#include <limits>

#include "internal/option_text.h"
#include "internal/parallel.h"
#include "neardup/error.h"
#include "neardup/index.h"

namespace neardup {

// Built under a mutex by the first query that needs it, and extended by the first one after
// SegmentedSearch::kTail more documents were inserted (a new segment, perhaps merged with the
// last ones). Queries hold a reference of their own, so an extension never pulls the search from
// under one.
std::shared_ptr<const SegmentedSearch> NearDupIndex::set_search() const {
  std::lock_guard<std::mutex> g(search_mu_);
  const size_t n = slots();
  if (!search_ || n - search_->end() >= SegmentedSearch::kTail) {
    const SegmentedSearch none;
    search_ = std::make_shared<const SegmentedSearch>((search_ ? *search_ : none).extended(
        n, [this](DocId d) { return set_of(d); }, [this](DocId d) { return removed(d); }, internal::hardware_threads()));
  }
  return search_;
}

bool NearDupIndex::has_set_search() const {
  std::lock_guard<std::mutex> g(search_mu_);
  return search_ != nullptr;
}

uint64_t NearDupIndex::set_search_bytes() const {
  std::lock_guard<std::mutex> g(search_mu_);
  return search_ ? search_->bytes() : 0;
}

void NearDupIndex::build_set_search() const {
  if (spec_.verify == VerifyMode::Exact) (void)set_search();
}

void NearDupIndex::search(const IndexSketch& q, const IndexQuery& how, std::vector<IndexMatch>& out) const {
  DocId own = std::numeric_limits<DocId>::max();  // none
  if (!how.skip_id.empty()) {
    build_id_map();
    if (const auto it = id_map_.find(how.skip_id); it != id_map_.end()) own = it->second;
  }
  if (how.kind == IndexQuery::Kind::Similar) {
    query(q, how.threshold, out);
    std::erase_if(out, [own](const IndexMatch& m) { return m.doc == own; });
    return;
  }
  if (spec_.verify != VerifyMode::Exact)
    throw UsageError(std::string("containment and top-k queries compare the stored shingle sets, which an index created with ") +
                     NEARDUP_OPT_IS("verify", "estimate") " does not keep: create it with " NEARDUP_OPT_IS("verify", "exact"));
  const auto s = set_search();
  const auto set_of = [this](DocId d) { return this->set_of(d); };
  const auto skip = [this, own](DocId d) { return d == own || removed(d); };
  if (how.kind == IndexQuery::Kind::Containing)
    s->containing(q.set, how.threshold, set_of, skip, slots(), out);
  else
    s->most_similar(q.set, how.top, set_of, skip, slots(), out);
}

}  // namespace neardup
