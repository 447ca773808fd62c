// The index's exact searches (containment, top k): SetSearch over its stored sets.
#include "internal/option_text.h"
#include "internal/parallel.h"
#include "neardup/error.h"
#include "neardup/index.h"

namespace neardup {

// Built under a mutex by the first query that needs it, and again once the documents added since
// outnumber a fifth of those it covers (a query compares those one by one). Queries hold a
// reference of their own, so a rebuild never pulls the search from under one.
std::shared_ptr<const SetSearch> NearDupIndex::set_search() const {
  std::lock_guard<std::mutex> g(search_mu_);
  const size_t n = slots();
  if (!search_ || n - search_->covered() > std::max<size_t>(1024, search_->covered() / 5)) {
    search_.reset();
    search_ = std::make_shared<const SetSearch>(
        n, [this](DocId d) { return set_of(d); }, [this](DocId d) { return removed(d); }, internal::hardware_threads());
  }
  return search_;
}

void NearDupIndex::search(const IndexSketch& q, const IndexQuery& how, std::vector<IndexMatch>& out) const {
  if (how.kind == IndexQuery::Kind::Similar) return query(q, how.threshold, out);
  if (spec_.verify != VerifyMode::Exact)
    throw UsageError(std::string("containment and top-k queries compare the stored shingle sets, which an index created with ") +
                     NEARDUP_OPT_IS("verify", "estimate") " does not keep: create it with " NEARDUP_OPT_IS("verify", "exact"));
  const auto s = set_search();
  const auto set_of = [this](DocId d) { return this->set_of(d); };
  const auto skip = [this](DocId d) { return removed(d); };
  if (how.kind == IndexQuery::Kind::Containing)
    s->containing(q.set, how.threshold, set_of, skip, slots(), out);
  else
    s->most_similar(q.set, how.top, set_of, skip, slots(), out);
}

}  // namespace neardup
