// The state of one run of the pipeline (Pipeline::Impl), shared by the files of src/pipeline/: each
// holds one stage of the run (the first pass, the sets, the candidates, the clusters, the
// outputs, the memory estimate), and pipeline.cpp composes them.
#pragma once

#include "neardup/pipeline.h"

#include <sys/stat.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "internal/big_array.h"
#include "internal/flag_rank.h"
#include "internal/hash.h"
#include "internal/parallel.h"
#include "internal/pass_runner.h"
#include "internal/seen_keys.h"
#include "internal/radix_sort.h"
#include "neardup/union_find.h"
#include "internal/option_text.h"
#include "pipeline/background_job.h"
#include "pipeline/document_table.h"
#include "pipeline/set_store.h"
#include "pipeline/sketch_store.h"
#include "neardup/allpairs.h"
#include "neardup/bucket_verify.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/io/tsv.h"
#include "neardup/io/writer.h"
#include "neardup/lsh_index.h"
#include "neardup/minhash.h"
#include "neardup/shingle.h"
#include "neardup/simhash.h"
#include "neardup/stages.h"
#include "neardup/thread_pool.h"

namespace neardup {
class GroupedBuckets;
namespace pipeline_detail {

using internal::Batch;
using internal::Clock;
using internal::Pass;
using internal::PassTotals;
using internal::seconds_since;

// Merges pairs sorted by (a, b) into a stream sorted the same way, each pair once: the run's
// verified pairs and those the joins list as they go.
class PairMerger {
 public:
  PairMerger(std::span<const ScoredPair> held, std::function<void(std::span<const ScoredPair>)> out)
      : held_(held), out_(std::move(out)) {}
  void add(std::span<const ScoredPair> chunk) {
    buf_.clear();
    for (const ScoredPair& p : chunk) {
      while (next_ < held_.size() && by_pair(held_[next_], p)) buf_.push_back(held_[next_++]);
      if (next_ < held_.size() && held_[next_].a == p.a && held_[next_].b == p.b) ++next_;
      buf_.push_back(p);
    }
    if (!buf_.empty()) out_(buf_);
  }
  void finish() {
    if (next_ < held_.size()) out_(held_.subspan(next_));
    next_ = held_.size();
  }

 private:
  std::span<const ScoredPair> held_;
  std::function<void(std::span<const ScoredPair>)> out_;
  size_t next_ = 0;
  std::vector<ScoredPair> buf_;
};

// A file's size and modification time (ns), or (0, 0) if it cannot be stat'ed: what tells that
// an input changed between the passes.
inline std::pair<uint64_t, int64_t> file_stamp(const std::string& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return {0, 0};
  return {static_cast<uint64_t>(sb.st_size), static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec};
}

// Dedup's decision per document, published a group of clusters at a time while verification
// runs, for the writer of the kept records that runs meanwhile (Pipeline::run_dedup).
class Decisions {
 public:
  struct Stopped {};  // the run stopped before deciding (an error on its thread)

  explicit Decisions(size_t n) : state_(n, kUndecided) {}
  /// Stores a decision; the writer may see it at once, and is woken by publish().
  void set(DocId d, bool kept) noexcept {
    std::atomic_ref<uint8_t>(state_[d]).store(kept ? kKept : kRemoved, std::memory_order_relaxed);
  }
  void publish() {
    // Taking the lock orders the stores before the check of a writer about to wait.
    { const std::lock_guard<std::mutex> lock(m_); }
    cv_.notify_all();
  }
  void stop() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stopped_ = true;
    }
    cv_.notify_all();
  }
  bool decided(DocId d) const noexcept { return load(d) != kUndecided; }
  /// Whether d is kept, once decided (waits for it). Throws Stopped if the run stopped first.
  bool kept(DocId d) {
    uint8_t v = load(d);
    if (v == kUndecided) {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] { return stopped_ || (v = load(d)) != kUndecided; });
      if (v == kUndecided) throw Stopped{};
    }
    return v == kKept;
  }

 private:
  static constexpr uint8_t kUndecided = 0, kKept = 1, kRemoved = 2;
  uint8_t load(DocId d) const noexcept { return std::atomic_ref<uint8_t>(state_[d]).load(std::memory_order_relaxed); }
  mutable std::vector<uint8_t> state_;  // written and read through atomic_ref
  std::mutex m_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

// Copies of texts up to this long are told apart after the first pass (find_text_copies). A copy saves
// its bucket entries and its pairs, about the same for any text, and every text is hashed to find
// them, which grows with its bytes: on the crowded mix (1.4 GB, most of it in long files) hashing
// every text cost 4% more CPU and its 3,257 copies saved less; a longer copy is still not
// shingled again when verification reads it (shingle_set_records).
constexpr size_t kCopyTextBytes = 4096;
constexpr uint64_t kTextHashSeed = 0x636F706965733031ull;  // "copies01"; kept in no file
using internal::TextHash;

// Bucket verification scores every star exactly (BucketVerification::whole_stars) where the
// documents have at most this many shingles on average.
constexpr uint64_t kWholeStarShingles = 64;

// Verification in groups closes a group of components once their text, and kDocWeight bytes per
// document, reach RunTuning::verify_group_bytes (candidates.cpp; by default 32 MiB: about
// 65,000 short documents, or 32 MiB of long texts, whose sets take about as many bytes).
constexpr uint64_t kDocWeight = 256;

// A text this long or longer is shingled and sketched in pieces on every thread.
constexpr size_t kSplitBytes = DocumentSketcher::kSplitBytes;

}  // namespace pipeline_detail
using namespace pipeline_detail;  // src/pipeline/ only

struct Pipeline::Impl {
  using Mode = Pipeline::Mode;
  Impl(const std::vector<std::string>& inputs, RunOptions options);
  Impl(std::vector<io::Document> documents, RunOptions options);
  ~Impl() { stop_writer(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  void run(Mode mode);
  MemoryEstimate estimate_memory(uint64_t sample_bytes) const;
  static constexpr uint64_t kSampleBytes = uint64_t{4} << 20;  // the run's own estimate reads this much
  /// Whether an expected n documents (0: unknown) of `shingles` distinct shingles on average
  /// take narrow band keys (RunTuning::narrow_band_keys_up_to): kept in memory, few enough, and
  /// short. Long texts keep far more in their sets than in their keys, and a pair of them that
  /// shares a narrow key by chance joins two components whose sets a group then holds at once
  /// (31,000 licence files: 140 MB instead of 104). Spilled keys are whole.
  static constexpr double kNarrowKeyShingles = 128;
  bool narrow_keys_for(double n, double shingles) const noexcept {
    const uint64_t up_to = options_.tuning.narrow_band_keys_up_to;
    return !options_.tuning.spill_band_keys && up_to > 0 && n > 0 && n <= static_cast<double>(up_to) && shingles <= kNarrowKeyShingles;
  }
  /// The run's estimate from its inputs' sample (estimate_memory), read where a band key may be
  /// narrow (narrow_keys_for), to choose that and the first pass's expected arrays; none elsewhere,
  /// or where the sample cannot be read (the first pass reports why).
  std::optional<MemoryEstimate> first_pass_sample() const;
  /// RunTuning::memory_limit: spills the band keys when the expected peak is above the limit.
  void choose_spill();
  /// The bands the search works at once over spilled band keys of n documents (memory.cpp).
  int spilled_search_threads(double n) const noexcept;
  /// The memory of the run's buffers (reading, sketching, writing) on inputs like `in`.
  double buffer_bytes(const io::InputSample& in, const Shingler& shingler, double* first_pass_only = nullptr) const;
  std::string_view id(DocId doc) const noexcept;
  const std::vector<ScoredPair>& pairs() const;
  void each_pair(const std::function<void(std::span<const ScoredPair>)>& emit);
  double similarity(DocId a, DocId b) const;
  std::span<const SigValue> signatures() const noexcept;
  uint64_t state_bytes() const noexcept;
  void write_pairs(io::AtomicFile& out, const std::function<void(std::span<const ScoredPair>)>& also);
  void write_kept(io::AtomicFile& out);
  void write_kept(std::span<io::AtomicFile* const> outs);
  void run_dedup(std::span<io::AtomicFile* const> outs);
  /// One output for every source (write_kept's and run_dedup's single file).
  std::vector<io::AtomicFile*> every_source_to(io::AtomicFile& out) const;
  void write_removed(io::AtomicFile& out) const;
  void write_clusters(io::AtomicFile& out) const;

  void init();
  void sketch_pass();
  /// Whether this run verifies group by group (in_groups_): `compressed` as compressed_inputs()
  /// says, `copies` whether the first pass keeps their decompressed bytes.
  bool groups_pay(int compressed, bool copies) const;
  int compressed_inputs() const;
  std::string copies_dir();
  void take_copies(io::RecordReader& reader);
  /// Whether later passes find the records by position (JSONL: lines up to 4 GiB, sources up to
  /// 2^32), as verification and the dedup output do.
  bool reads_by_position() const noexcept { return inputs_->all_jsonl() && inputs_->sources().size() < UINT32_MAX; }
  struct SketchLayout;
  void prepare_batch(internal::Batch& b, const SketchLayout& l) const;
  void sketch_entry(internal::Batch& b, size_t i, std::string_view text, const SketchLayout& l, DocumentSketcher& sk,
                    std::vector<SigValue>& fp) const;
  void keep_entry(internal::Batch& b, size_t i, const SketchLayout& l);
  /// Dedup: the documents whose text an earlier one had, into text_copies_ (RunTuning::collapse_copies).
  void find_text_copies();
  /// The buckets of each original and its copies, appended to `buckets`.
  void add_copy_buckets(LshBuckets& buckets) const;
  /// The original of `doc` if it is a copy (text_copies_), else `doc`.
  DocId original_of(DocId doc) const noexcept;
  void count_first_pass(const internal::PassTotals& totals, const io::BadRecords& bad, const io::RecordReader& reader);
  /// The shingle sets of the documents with needed[d] != 0: those the first pass kept, the
  /// others read again (read_sets). Returns those documents, ascending.
  std::vector<DocId> load_sets_pass(const std::vector<uint8_t>& needed);
  /// The first pass's sets of the documents with needed[d] != 0 (the others let go).
  void take_first_pass_sets(const std::vector<uint8_t>& needed);
  /// Reads the documents `docs` (ascending) again and stores their sets.
  void read_sets(std::span<const DocId> docs, bool progress);
  void read_sets_into(std::span<const DocId> docs, bool progress, ShingleSets& into, uint64_t& copies) const;
  /// The documents of `docs` (ascending) without a set yet, read again.
  void read_missing_sets(std::span<const DocId> docs, bool progress);
  void share_copies(std::span<const DocId> docs, uint64_t shared_before);
  /// LSH with exact verification: the buckets' pairs with J >= t that connect what they connect
  /// (all of them in pairs mode), appended to `out` sorted by (a, b); returns the pairs verified.
  /// `docs`: the buckets' documents, ascending.
  uint64_t verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, std::vector<ScoredPair>& out);
  /// How this run verifies buckets (bucket_verify.h).
  BucketVerification bucket_verification() const;
  /// Dedup: verify_buckets a group of candidate components at a time (pairs_ set), each group's
  /// clusters decided as it is done (clustering_, and decisions_ for the writer of the kept
  /// records, writer_, that runs meanwhile).
  uint64_t verify_in_groups(LshBuckets&& buckets, const std::vector<uint8_t>& in_bucket);
  /// A group of verify_in_groups: its buckets, its documents, the sets of those that are not
  /// copies of an earlier text (read in a store of their own), and what reading them counted.
  struct GroupSets {
    LshBuckets group;
    std::vector<DocId> docs;
    ShingleSets sets;
    uint64_t read = 0, copies = 0;
    uint64_t shared_before = 0;  // sets.shared_docs() before the reading
    std::vector<uint8_t> seen;   // distinct_members' marks
  };
  void read_group(const GroupedBuckets& grouped, size_t g, GroupSets& out) const;
  void take_group(GroupSets& in);
  class GroupFeed;
  std::vector<DocId> group_buckets(const LshBuckets& buckets, const std::vector<uint8_t>& in_bucket, std::vector<size_t>& start,
                                   std::vector<uint32_t>& order) const;
  static void distinct_members(const LshBuckets& group, std::vector<uint8_t>& seen, std::vector<DocId>& docs);
  /// The clusters of one group's documents (ascending) from its verified pairs, into clustering_
  /// (and decisions_).
  void cluster_group(std::span<const DocId> docs, std::span<const ScoredPair> edges);
  /// The clusters of all documents from pairs_, unless verify_in_groups made them.
  void cluster();
  /// cluster(), then the run's counts of clusters and removals and removed_similarity_.
  void cluster_all();
  bool reaches_threshold(DocId a, DocId b) const;
  /// put(k, similarity of removed[k] to its kept document), on the run's threads.
  void each_removed_similarity(std::span<const DocId> removed, const std::function<void(size_t, double)>& put) const;
  /// The kept records to `outs` (one per source), each as soon as `decisions` tells it is kept
  /// (or by clustering_ without them).
  void write_kept_records(std::span<io::AtomicFile* const> outs, Decisions* decisions);
  void start_writer();
  /// Waits for the writer; throws its error, if any.
  void join_writer();
  void stop_writer() noexcept;
  /// The writer's error (a full disk, an input that changed), as soon as it stopped with one:
  /// the run need not verify to the end first.
  void throw_if_the_writer_failed();
  /// The exact join over `docs` (ascending, their sets loaded).
  std::unique_ptr<SetJoin> build_join(std::span<const DocId> docs) const;
  /// Pairs that share an LSH band (minhash, oph); all pairs otherwise.
  PairFilter band_filter() const;
  PairFilter pair_filter() const;
  /// The LSH buckets of the run (sets stats().largest_bucket).
  LshBuckets find_buckets();
  bool share_band(DocId a, DocId b, size_t k) const noexcept;
  /// Pairs mode with a join: every pair, in (a, b) order, a chunk at a time.
  void expand_pairs(const std::function<void(std::span<const ScoredPair>)>& emit) const;
  /// LSH candidates (minhash, oph) or join candidates (bottomk, exact), scored and kept above
  /// the threshold.
  void find_pairs_lsh();
  void find_pairs_lsh_estimate();
  void find_pairs_exact();
  void find_pairs_containment();
  void find_pairs_bottomk();
  void find_pairs_simhash();
  void verify_candidates(const std::vector<DocPair>& candidates, double threshold);
  Scorer scorer() const noexcept;
  /// Keep order (cluster.h): by the policy, or by the keep-by field.
  std::vector<uint32_t> keep_ranks() const;
  /// Throws IoError if a record read again is not the document `doc` of the first pass.
  void check_same_record(const io::Record& r, DocId doc) const;
  std::vector<std::string> texts(std::span<const DocId> docs) const;
  void check_duplicate_ids();
  void check_ids_and_find_copies();
  std::string where_of(DocId doc) const;
  ErrorPlace place_of(DocId doc) const;
  /// Throws IoError naming the file if an input's size or modification time changed since the
  /// first pass.
  void check_inputs_unchanged() const;

  RunOptions options_;
  PipelineSpec spec_;
  int threads_;
  std::unique_ptr<io::InputSet> inputs_;
  RunStats stats_;

  DocumentTable docs_;
  std::vector<std::pair<uint64_t, int64_t>> input_stamps_;  // per source: size, mtime (ns)
  SketchStore sketches_;
  SetStore sets_;
  // The exact joins of the run (exact verification with minhash or oph, and the exact method):
  // one, or in pairs mode one per verified group that needed one, kept for listing the pairs.
  std::vector<std::unique_ptr<SetJoin>> joins_;
  Mode mode_ = Mode::Dedup;
  std::vector<double> removed_similarity_;  // of each removed document to its kept one, in input order
  // The same for each group's removed documents, while verifying group by group (then sorted).
  // 12 bytes each (packed): at 50 million short documents in clusters, 14.7 million of them.
  struct [[gnu::packed]] DocSimilarity {
    DocId doc;
    double similarity;
    bool operator<(const DocSimilarity& o) const noexcept { return doc < o.doc; }
  };
  std::vector<DocSimilarity> group_similarity_;
  // A dedup that spills its state keeps no verified pair, only their count (drops_pairs()).
  bool pairs_dropped_ = false;
  uint64_t dropped_pairs_ = 0;
  bool drops_pairs() const noexcept { return mode_ == Mode::Dedup && options_.tuning.spill_documents; }
  // Whether this run clusters: every dedup, a pairs run unless RunTuning::cluster_pairs is off.
  bool clusters_wanted() const noexcept { return mode_ == Mode::Dedup || options_.tuning.cluster_pairs; }
  void throw_if_not_clustered() const;
  void throw_if_pairs_dropped() const;
  // Whether verification goes group by group (verify_in_groups): the records can be found again
  // by position, and cheaply, in files that are not compressed (see groups_pay()).
  bool in_groups_ = false;
  uint64_t first_pass_state_ = 0;  // state_bytes() at the first pass's end
  // The last estimate and its sample size: a driver that printed it before run() (the CLI) does
  // not have the inputs sampled again to decide whether to spill (choose_spill).
  mutable std::optional<std::pair<uint64_t, MemoryEstimate>> last_estimate_;
  std::vector<ScoredPair> pairs_;
  // Dedup's copies of earlier texts (RunTuning::collapse_copies): during the first pass, each
  // document's text hash; then each copy with its original, {original, copy} in the copies'
  // input order.
  internal::GrowArray<TextHash> text_hashes_{internal::Access::Sequential};
  std::unique_ptr<internal::SpilledColumns> text_hashes_spilled_;  // instead, spilling (hi, lo)
  template <class Fn>
  void each_text_hash(Fn&& fn) const;
  std::vector<DocPair> text_copies_;
  internal::FlagRank copy_rank_;  // each copy's place in text_copies_ (original_of), 1.1 bits per document
  bool copies_told_ = false;  // text_copies_ holds every copy of a text up to kCopyTextBytes
  bool expand_on_write_ = false;  // pairs mode with stream_pairs: write_pairs expands the clusters
  std::vector<uint32_t> rank_;     // keep order (keep_ranks; empty: input order)
  Clustering clustering_;
  // run_dedup: the outputs of the kept records, and their writer that follows verification.
  std::vector<io::AtomicFile*> kept_outs_;
  std::unique_ptr<Decisions> decisions_;
  BackgroundJob writer_;
};

}  // namespace neardup
