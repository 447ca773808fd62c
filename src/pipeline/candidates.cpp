// Candidates and their verification, one finder per method: LSH buckets (verified in groups, or
// by estimate), the exact join, the bottom-k join, SimHash tables.
#include "pipeline/impl.h"
#include "pipeline/grouped_buckets.h"

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
  if (sketches_.band_keys.empty()) {
    buckets = lsh_buckets(signatures(), static_cast<size_t>(spec_.num_perm), sketches_.empty, spec_.lsh, spec_.shingle.seed, threads_, &cs);
  } else if (sketches_.spilled) {
    internal::SpilledColumns& spilled = *sketches_.spilled;
    spilled.finish();
    stats_.spilled_bytes += spilled.bytes();
    buckets = lsh_buckets_from_reader(docs_.size(), static_cast<int>(keys.size()),
                                      [&](size_t band, size_t begin, size_t count, uint64_t* out) { spilled.read(band, begin, count, out); },
                                      sketches_.empty, spilled_search_threads(static_cast<double>(docs_.size())), &cs);
  } else {
    buckets = lsh_buckets_from_keys(keys, sketches_.empty, threads_, &cs);
  }
  if (sketches_.spilled) {  // share_band reads the LSH buckets from here on (copies are mapped to their originals)
    sketches_.spilled.reset();
    // A dedup in groups indexes each group's buckets as it verifies them (verify_in_groups);
    // the others, and a run that keeps what a report asks, index them all now.
    sketches_.index_per_group = mode_ == Mode::Dedup && in_groups_ && !options_.tuning.keep_sets;
    if (!sketches_.index_per_group) sketches_.index_buckets(buckets, docs_.size());
  }
  const size_t from_lsh = buckets.size();
  add_copy_buckets(buckets);
  stats_.largest_bucket = cs.largest_bucket;
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
  const auto it = std::lower_bound(text_copies_.begin(), text_copies_.end(), doc, [](const DocPair& p, DocId d) { return p.b < d; });
  return it->a;
}

PairFilter Pipeline::Impl::band_filter() const {
  const size_t k = static_cast<size_t>(spec_.num_perm);
  return [this, k](DocId a, DocId b) { return share_band(a, b, k); };
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
  how.num_docs = docs_.size();
  how.share = band_filter();
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

// The documents of `group`'s buckets, ascending and distinct: marked in `seen` (all clear, left
// clear) as they are met, then sorted.
void Pipeline::Impl::distinct_members(const LshBuckets& group, std::vector<uint8_t>& seen, std::vector<DocId>& docs) {
  docs.clear();
  for (const DocId d : group.members)
    if (!seen[d]) {
      seen[d] = 1;
      docs.push_back(d);
    }
  for (const DocId d : docs) seen[d] = 0;
  std::sort(docs.begin(), docs.end());
}

// The verification's groups: components in the order of their first document in the input, so
// that the writer can copy the records before a group's first once the groups before it are
// verified; consecutive components are one group while their text, and kDocWeight bytes per
// document, weigh less than kGroupWeight (impl.h; a component heavier than that is a group of
// its own). Each group reads its records again wherever they lie in the input, and a group of a
// few short records scattered over a large input costs page faults over all of it for little
// work; a group's sets take about as many bytes as its text, so the sets held at once are
// bounded by kGroupWeight or the largest component. (Groups of whole parts of the input would
// not be bounded so: a component of s documents starts within the first 1/s of the input, and
// the first of 256 parts of 10 million short documents in clusters holds 420k of the 4.8
// million in buckets, 138 MB of sets.)
//
// Splits the buckets into groups of whole components: `order` lists the bucket indices group by
// group, group g being [start[g], start[g + 1]). Returns for each group the first document of
// the next (every document before it is decided once group g is verified).
std::vector<DocId> Pipeline::Impl::group_buckets(const LshBuckets& buckets, const std::vector<uint8_t>& in_bucket,
                                                 std::vector<size_t>& start, std::vector<uint32_t>& order) const {
  const size_t n = docs_.size();
  UnionFind uf(n);  // a component's root is its first document
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    for (size_t x = 1; x < b.size(); ++x) uf.unite(b[0], b[x]);
  }
  // Each document's root, and in a root's own place its component's weight (saturating: any past
  // the limit is full), later its group: one array, with a bit per document to tell the roots.
  std::vector<uint32_t> weight = std::move(uf).representatives();
  std::vector<bool> is_root(n, false);
  const auto root_of = [&](DocId d) { return is_root[d] ? d : weight[d]; };
  DocumentTable::Behind behind(docs_);
  for (DocId d = 0; d < n; ++d)
    if (in_bucket[d]) {
      behind.at(d);
      if (weight[d] == d) {  // the first of its component, met before the others
        is_root[d] = true;
        weight[d] = 0;
      }
      const DocId r = root_of(d);
      weight[r] = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{weight[r]} + docs_.length(d) + kDocWeight, UINT32_MAX));
    }
  // The groups, in order of roots; weight[r] becomes the group of root r.
  std::vector<DocId> next_first;
  uint64_t held = 0;
  for (DocId r = 0; r < n; ++r) {
    if (!is_root[r]) continue;
    if (next_first.empty() || (held > 0 && held + weight[r] > kGroupWeight)) {
      if (!next_first.empty()) next_first.back() = r;
      next_first.push_back(static_cast<DocId>(n));
      held = 0;
    }
    held += weight[r];
    weight[r] = static_cast<uint32_t>(next_first.size() - 1);
  }
  // Each bucket's group looked up twice rather than held: to count, to place.
  const auto group_of = [&](size_t i) { return weight[root_of(buckets[i][0])]; };
  const size_t groups = next_first.size();
  start.assign(groups + 1, 0);
  for (size_t i = 0; i < buckets.size(); ++i) ++start[group_of(i) + 1];
  for (size_t g = 0; g < groups; ++g) start[g + 1] += start[g];
  std::vector<size_t> at(start.begin(), start.end() - 1);
  order.assign(buckets.size(), 0);
  if (buckets.size() > UINT32_MAX)  // a corpus of hundreds of millions of documents, nearly all in distinct buckets
    throw UsageError("more than 2^32 distinct LSH buckets: split the input, or use fewer bands");
  for (size_t i = 0; i < buckets.size(); ++i) order[at[group_of(i)]++] = static_cast<uint32_t>(i);
  return next_first;
}

// Verification in groups. A candidate component (documents joined through shared buckets) holds
// every pair that can be verified between its documents, so its clusters depend on its own
// pairs only: verifying a group of components at a time, in the order of their first
// documents, gives the clusters of verifying all at once, and decides the documents of the
// input's start first. The writer of the kept records (run_dedup) then starts while the rest is
// verified. Pairs mode keeps each group's join (its ranks, not the sets) to list the pairs of its
// large buckets when they are written (expand_pairs).
uint64_t Pipeline::Impl::verify_in_groups(LshBuckets&& buckets, const std::vector<uint8_t>& in_bucket) {
  const size_t n = docs_.size();
  std::vector<size_t> start;  // group g is order[start[g], start[g + 1])
  std::vector<uint32_t> order;  // bucket indices, group by group
  const std::vector<DocId> next_first = group_buckets(buckets, in_bucket, start, order);
  // A run that spills its state keeps the buckets on disk, in group order, until their group
  // (the band keys' files, at least twice their size, are gone by now).
  const std::string spill_dir = options_.tuning.spill_documents ? io::temp_directory(options_.tuning.temp_dir) : std::string();
  const GroupedBuckets grouped(std::move(buckets), std::move(order), std::move(start), spill_dir.empty() ? nullptr : &spill_dir);
  const size_t groups = grouped.groups();
  clustering_.keeper.resize(n);
  std::iota(clustering_.keeper.begin(), clustering_.keeper.end(), DocId{0});  // alone until a group says otherwise
  group_similarity_.clear();
  if (!kept_outs_.empty()) {
    decisions_ = std::make_unique<Decisions>(n);
    for (DocId d = 0; d < n; ++d)
      if (!in_bucket[d]) decisions_->set(d, true);  // in no bucket: alone, kept
    decisions_->publish();
    start_writer();
  }
  uint64_t verified = 0;
  // A dedup that spills its state holds no verified pair: its clusters are decided group by
  // group, and the pairs would be 16 bytes each for nothing (pairs() refuses).
  pairs_dropped_ = drops_pairs();
  dropped_pairs_ = 0;
  std::vector<ScoredPair> all;
  LshBuckets group;
  std::vector<DocId> docs;
  std::vector<uint8_t> seen(n, 0);
  std::vector<ScoredPair> found;
  for (size_t g = 0; g < groups; ++g) {
    if (grouped.empty(g)) continue;
    grouped.load(g, group);
    distinct_members(group, seen, docs);
    if (sketches_.index_per_group) sketches_.index_group(group, docs);
    read_missing_sets(docs, false);
    found.clear();
    verified += verify_buckets(group, docs, found);
    cluster_group(docs, found);
    // A component lies in one group: its sets are not needed again (unless asked to be kept).
    if (!options_.tuning.keep_sets) {
      sets_.release(docs);
    }
    if (decisions_) throw_if_the_writer_failed();
    if (pairs_dropped_)
      dropped_pairs_ += found.size();
    else
      all.insert(all.end(), found.begin(), found.end());
    // Every component starting before the next group's first document is verified: the
    // documents before it are decided, about that share of the input.
    if (options_.tuning.progress) {
      const double share = static_cast<double>(next_first[g]) / static_cast<double>(std::max<size_t>(n, 1));
      options_.tuning.progress({"verify", static_cast<uint64_t>(share * static_cast<double>(inputs_->total_bytes())), inputs_->total_bytes(), next_first[g]});
    }
  }
  std::sort(all.begin(), all.end(), by_pair);
  pairs_ = std::move(all);
  return verified;
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
