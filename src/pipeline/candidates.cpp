// Candidates and their verification, one finder per method: LSH buckets (verified in groups:
// groups.cpp; or by estimate), the exact join, the bottom-k join, SimHash tables.
#include "pipeline/impl.h"

#include "neardup/containment.h"

namespace neardup {

PairFilter Pipeline::Impl::pair_filter() const { return uses_signatures(spec_.method) ? band_filter() : PairFilter(); }

void Pipeline::Impl::verify_candidates(const std::vector<DocPair>& candidates, double threshold) {
  if (spec_.verify == VerifyMode::Exact && !candidates.empty()) {
    std::vector<uint8_t> needed(docs_.size(), 0);
    for (const DocPair& p : candidates) needed[p.a] = needed[p.b] = 1;
    load_sets_pass(needed);
  }
  pairs_ = verify_pairs(candidates, scorer(), threshold, threads_);
}

LshBuckets Pipeline::Impl::find_buckets() {
  CandidateStats cs;
  std::vector<std::span<const uint64_t>> keys(sketches_.band_keys.begin(), sketches_.band_keys.end());
  LshBuckets buckets;
  if (!sketches_.narrow_keys.empty()) {
    const std::vector<std::span<const uint32_t>> narrow(sketches_.narrow_keys.begin(), sketches_.narrow_keys.end());
    buckets = lsh_buckets_from_narrow_keys(narrow, sketches_.empty, threads_, &cs);
  } else if (sketches_.band_keys.empty()) {
    buckets = lsh_buckets(signatures(), static_cast<size_t>(spec_.num_perm), sketches_.empty, spec_.lsh, spec_.shingle.seed, threads_, &cs);
  } else if (sketches_.spilled) {
    internal::SpilledColumns& spilled = *sketches_.spilled;
    spilled.finish();
    stats_.spilled_bytes += spilled.bytes();
    buckets = lsh_buckets_from_reader(docs_.size(), static_cast<int>(keys.size()),
                                      [&](size_t band, size_t begin, size_t count, uint64_t* out) { spilled.read(band, begin, count, out); },
                                      sketches_.empty, spilled_search_threads(static_cast<double>(docs_.size())), &cs, spilled.dir());
  } else {
    buckets = lsh_buckets_from_keys(keys, sketches_.empty, threads_, &cs);
  }
  if (sketches_.spilled) {  // share_band reads the LSH buckets from here on (copies are mapped to their originals)
    sketches_.spilled.reset();
    // A dedup in groups indexes each group's buckets as it verifies them (verify_in_groups);
    // the others, and a run that keeps what a report asks, index them all now.
    sketches_.index_per_group = mode_ == Mode::Dedup && in_groups_ && !options_.tuning.keep_sets;
    sketches_.index_due = !sketches_.index_per_group;  // indexed in find_pairs_lsh
  } else if (mode_ == Mode::Dedup && sketches_.has_keys()) {
    sketches_.drop_keys();
  }
  const size_t from_lsh = buckets.size();
  add_copy_buckets(buckets);
  stats_.largest_bucket = cs.largest_bucket;
  stats_.spilled_bytes += cs.spilled_bytes;
  for (size_t i = from_lsh; i < buckets.size(); ++i) stats_.largest_bucket = std::max<uint64_t>(stats_.largest_bucket, buckets[i].size());
  return buckets;
}

// A copy's pairs are its original's (the same set), so verifying the original's bucket pairs
// and the star from the original to each copy (J = 1, their set shared: read_missing_sets)
// gives the components of verifying every copy in every bucket. Members ascending, as LSH's.
void Pipeline::Impl::add_copy_buckets(LshBuckets& buckets) const {
  std::vector<DocPair> by_original(text_copies_);
  internal::sort_unique_pairs(by_original);
  for (size_t i = 0; i < by_original.size();) {
    buckets.members.push_back(by_original[i].a);
    size_t j = i;
    for (; j < by_original.size() && by_original[j].a == by_original[i].a; ++j) buckets.members.push_back(by_original[j].b);
    buckets.offsets.push_back(buckets.members.size());
    i = j;
  }
}

DocId Pipeline::Impl::original_of(DocId doc) const noexcept {
  if (sketches_.empty[doc] != SketchStore::kCopy) return doc;
  return text_copies_[copy_rank_(doc)].a;
}

PairFilter Pipeline::Impl::band_filter() const {
  const size_t k = static_cast<size_t>(spec_.num_perm);
  PairFilter::Test test = [this, k](DocId a, DocId b) { return share_band(a, b, k); };
  // With the keys in memory, share_band compares them, and so do their rows.
  if (const size_t bands = sketches_.bands_held(); bands > 0)
    return PairFilter::shared_key(std::move(test), bands, [this](std::span<const DocId> docs, std::span<uint64_t> rows) {
      NEARDUP_ASSERT(sketches_.bands_held() * docs.size() == rows.size());
      sketches_.band_rows(docs, rows);
    });
  return test;
}

std::unique_ptr<SetJoin> Pipeline::Impl::build_join(std::span<const DocId> docs) const {
  return std::make_unique<SetJoin>(docs, [this](DocId d) { return sets_.sets()->get(d); }, spec_.threshold, threads_);
}

// LSH with exact verification (bucket_verify.h): every pair that shares a bucket and has J >= t
// ends up in one cluster; pairs mode lists every such pair (here, or as they are written).
void Pipeline::Impl::find_pairs_lsh() {
  auto t = Clock::now();
  if (spec_.verify == VerifyMode::Estimate) return find_pairs_lsh_estimate();
  LshBuckets buckets = find_buckets();
  std::vector<uint8_t> in_bucket(docs_.size(), 0);
  for (const DocId d : buckets.members) in_bucket[d] = 1;
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  uint64_t verified = 0;
  pairs_.clear();
  joins_.clear();
  // A run whose records are found again cheaply by position verifies group by group, reading
  // each group's sets then and keeping none from the first pass (verify_in_groups); other
  // inputs read their candidates' sets at once (see groups_pay()).
  // share_band's index of the buckets, where it is due (find_buckets): here, or in
  // verify_in_groups while they are grouped.
  if (sketches_.index_due && (buckets.size() == 0 || !in_groups_)) sketches_.index_buckets(buckets, docs_.size());
  if (buckets.size() > 0 && !in_groups_) {
    verified = verify_buckets(buckets, load_sets_pass(in_bucket), pairs_);
  } else if (buckets.size() > 0) {
    take_first_pass_sets(in_bucket);
    verified = verify_in_groups(std::move(buckets), in_bucket);
  }
  stats_.candidates = verified;
  stats_.times.verify = seconds_since(t);
}

BucketVerification Pipeline::Impl::bucket_verification() const {
  BucketVerification how;
  how.threshold = spec_.threshold;
  how.threads = threads_;
  how.list_all = mode_ == Mode::Pairs;
  how.share = band_filter();
  how.connect_joined = clusters_wanted();
  // Short texts: at most kWholeStarShingles shingles on average.
  how.whole_stars = stats_.shingles <= kWholeStarShingles * stats_.documents;
  if (how.whole_stars) how.delta_min_set = SIZE_MAX;  // no set is long enough to gain from differences
  if (spec_.verify == VerifyMode::Exact) how.join = [this](std::span<const DocId> docs) { return build_join(docs); };
  return how;
}

uint64_t Pipeline::Impl::verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, std::vector<ScoredPair>& out) {
  VerifiedBuckets v = neardup::verify_buckets(buckets, docs, scorer(), bucket_verification());
  // Pairs mode lists the join's pairs with the run's verified ones (expand_pairs), which hold
  // every pair of the small buckets.
  if (v.join) joins_.push_back(std::move(v.join));
  out.insert(out.end(), v.pairs.begin(), v.pairs.end());
  return v.verified;
}

// Leader clustering's test: J >= t, by the run's verification.
bool Pipeline::Impl::reaches_threshold(DocId a, DocId b) const { return similarity(a, b) + kSimilarityEpsilon >= spec_.threshold; }

// LSH with estimated similarities: no sets to read, each bucket's pairs compared by their
// signatures (bucket_verify.h).
void Pipeline::Impl::find_pairs_lsh_estimate() {
  auto t = Clock::now();
  const LshBuckets buckets = find_buckets();
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  std::vector<DocId> docs(buckets.members);
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  VerifiedBuckets v = neardup::verify_buckets(buckets, docs, scorer(), bucket_verification());
  stats_.candidates = v.verified;
  pairs_ = std::move(v.pairs);
  stats_.times.verify = seconds_since(t);
}

// No sketch: every document's shingle set was kept by the first pass; the exact join finds every
// pair (pairs mode, when written or by expand) or connects them (clusters).
void Pipeline::Impl::find_pairs_exact() {
  const auto t = Clock::now();
  std::vector<DocId> joined;
  for (DocId d = 0; d < docs_.size(); ++d)
    if (!sketches_.empty[d]) joined.push_back(d);
  joins_.clear();
  joins_.push_back(build_join(joined));
  const SetJoin& join = *joins_.back();
  stats_.times.lsh = seconds_since(t);
  const auto t2 = Clock::now();
  pairs_ = join.connect(docs_.size(), {}, {});
  std::sort(pairs_.begin(), pairs_.end(), by_pair);
  stats_.candidates = join.stats().verified;
  stats_.verify_docs = join.size();
  stats_.times.verify = seconds_since(t2);
}

// Containment (pairs only): every document's shingle set was kept by the first pass; the exact
// containment join lists every pair at once.
void Pipeline::Impl::find_pairs_containment() {
  const auto t = Clock::now();
  std::vector<DocId> joined;
  for (DocId d = 0; d < docs_.size(); ++d)
    if (!sketches_.empty[d]) joined.push_back(d);
  ContainmentStats st;
  pairs_ = containment_pairs(joined, [this](DocId d) { return sets_.sets()->get(d); }, spec_.threshold, threads_, &st);
  stats_.candidates = st.verified;
  stats_.verify_docs = joined.size();
  stats_.times.verify = seconds_since(t);
}

void Pipeline::Impl::find_pairs_bottomk() {
  // The join is exact over the fingerprints; with exact verification it runs at an estimate
  // threshold lowered by the estimator's error, so that true pairs near t are not lost.
  auto t = Clock::now();
  const bool exact = spec_.verify == VerifyMode::Exact;
  const int n = spec_.sketch_size;
  std::vector<ScoredPair> found;
  if (options_.top > 0) {
    found = top_pairs(sketches_.fps, options_.top, PairScore::BottomKEstimate, threads_);
    // Exact ranking: the M pairs found have true Jaccard >= j_low (bottomk_lower_bound of the
    // M-th estimate), so the true M-th best does too, and every pair of the true top M has an
    // estimate at or above the screen threshold of j_low.
    if (exact && !found.empty())
      found = pairs_above(sketches_.fps, bottomk_screen_threshold(bottomk_lower_bound(found.back().similarity, n), n),
                          PairScore::BottomKEstimate, threads_);
  } else {
    found = pairs_above(sketches_.fps, exact ? bottomk_candidate_threshold(spec_.threshold, n) : spec_.threshold,
                        PairScore::BottomKEstimate, threads_);
  }
  stats_.candidates = found.size();
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  if (exact) {
    std::vector<DocPair> candidates(found.size());
    for (size_t i = 0; i < found.size(); ++i) candidates[i] = {found[i].a, found[i].b};
    found.clear();
    found.shrink_to_fit();
    verify_candidates(candidates, options_.top > 0 ? std::numeric_limits<double>::min() : spec_.threshold);
  } else {
    pairs_ = std::move(found);
  }
  if (options_.top > 0) {
    std::sort(pairs_.begin(), pairs_.end(), better_pair);
    if (pairs_.size() > options_.top) pairs_.resize(options_.top);
  }
  stats_.times.verify = seconds_since(t);
}

void Pipeline::Impl::find_pairs_simhash() {
  // Every pair within the distance, by Manku's tables planned for this many fingerprints; each
  // pair is then scored by the verification (exact Jaccard, or 1 - d / 64).
  auto t = Clock::now();
  const uint64_t live = stats_.documents - stats_.empty;
  const SimHashPlan plan = plan_simhash_tables(spec_.hamming, std::max<uint64_t>(live, 1), SimHashWorkload::Batch);
  const std::vector<HammingPair> near = simhash_find_all(sketches_.simhashes, plan, threads_, sketches_.empty);
  stats_.candidates = near.size();
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  std::vector<DocPair> candidates(near.size());
  for (size_t i = 0; i < near.size(); ++i) candidates[i] = {near[i].a, near[i].b};
  verify_candidates(candidates, spec_.threshold);
  stats_.times.verify = seconds_since(t);
}

}  // namespace neardup
