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
#include "internal/hash.h"
#include "internal/parallel.h"
#include "internal/pass_runner.h"
#include "internal/seen_keys.h"
#include "internal/radix_sort.h"
#include "neardup/union_find.h"
#include "internal/option_text.h"
#include "neardup/allpairs.h"
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
namespace {

using internal::Batch;
using internal::Clock;
using internal::Pass;
using internal::PassTotals;
using internal::seconds_since;

bool by_pair(const ScoredPair& x, const ScoredPair& y) noexcept { return x.a != y.a ? x.a < y.a : x.b < y.b; }

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
std::pair<uint64_t, int64_t> file_stamp(const std::string& path) {
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

}  // namespace

struct Pipeline::Impl {
  using Mode = Pipeline::Mode;
  Impl(const std::vector<std::string>& inputs, RunOptions options);
  Impl(std::vector<io::Document> documents, RunOptions options);
  ~Impl() { stop_writer(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  void run(Mode mode);
  MemoryEstimate estimate_memory(uint64_t sample_bytes) const;
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
  void count_first_pass(const internal::PassTotals& totals, const io::BadRecords& bad, const io::RecordReader& reader);
  /// The shingle sets of the documents with needed[d] != 0: those the first pass kept, the
  /// others read again (read_sets). Returns those documents, ascending.
  std::vector<DocId> load_sets_pass(const std::vector<uint8_t>& needed);
  /// The first pass's sets of the documents with needed[d] != 0 (the others let go).
  void take_first_pass_sets(const std::vector<uint8_t>& needed);
  /// Reads the documents `docs` (ascending) again and stores their sets.
  void read_sets(std::span<const DocId> docs, bool progress);
  /// The documents of `docs` (ascending) without a set yet, read again.
  void read_missing_sets(std::span<const DocId> docs, bool progress);
  /// LSH with exact verification: the buckets' pairs with J >= t that connect what they connect
  /// (all of them in pairs mode), appended to `out` sorted by (a, b); returns the pairs verified.
  /// `docs`: the buckets' documents, ascending.
  uint64_t verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, std::vector<ScoredPair>& out);
  /// Dedup: verify_buckets a group of candidate components at a time (pairs_ set), each group's
  /// clusters decided as it is done (clustering_, and decisions_ for the writer of the kept
  /// records, writer_, that runs meanwhile).
  uint64_t verify_in_groups(const LshBuckets& buckets, const std::vector<uint8_t>& in_bucket);
  /// The clusters of one group's documents (ascending) from its verified pairs, into clustering_
  /// (and decisions_).
  void cluster_group(std::span<const DocId> docs, std::span<const ScoredPair> edges);
  /// The clusters of all documents from pairs_, unless verify_in_groups made them.
  void cluster();
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
  std::string where_of(DocId doc) const;
  ErrorPlace place_of(DocId doc) const;
  bool same_file(size_t a, size_t b) const;
  /// Throws IoError naming the file if an input's size or modification time changed since the
  /// first pass.
  void check_inputs_unchanged() const;

  RunOptions options_;
  PipelineSpec spec_;
  int threads_;
  std::unique_ptr<io::InputSet> inputs_;
  RunStats stats_;

  std::string id_blob_;
  std::vector<uint64_t> id_end_;
  std::vector<uint32_t> lengths_;  // text bytes per document (at most --max-doc-bytes < 4 GiB)
  // JSONL inputs: where each record lies, so that later passes read only the records they
  // need (verification) or copy the kept lines without parsing them (dedup output).
  std::vector<io::RecordPos> pos_;
  std::vector<std::pair<uint64_t, int64_t>> input_stamps_;  // per source: size, mtime (ns)
  std::unique_ptr<internal::GrowArray<SigValue>> sigs_;
  std::vector<internal::GrowArray<uint64_t>> band_keys_;  // per band, per document (instead of sigs_)
  Fingerprints fps_;
  std::vector<uint64_t> simhashes_;
  std::vector<uint8_t> empty_;
  // The keep-by field per document: KeyValue::Kind, the number, the string (blob and ends).
  std::vector<uint8_t> key_kind_;
  std::vector<double> key_num_;
  std::string key_blob_;
  std::vector<uint64_t> key_end_;
  std::unique_ptr<ShingleSets> sets_;
  // The first pass's sets of the documents already in a bucket when sketched, up to
  // RunOptions::first_pass_set_bytes; the band keys seen so far, to tell.
  ShingleSets early_sets_;
  mutable std::atomic<uint64_t> early_bytes_{0};
  std::unique_ptr<internal::SeenKeys> seen_keys_;
  // The exact joins of the run (exact verification with minhash or oph, and the exact method):
  // one, or in pairs mode one per verified group that needed one, kept for listing the pairs.
  std::vector<std::unique_ptr<SetJoin>> joins_;
  Mode mode_ = Mode::Dedup;
  std::vector<double> removed_similarity_;  // of each removed document to its kept one, in input order
  std::vector<double> group_similarity_;    // the same by document, while verifying group by group
  bool sets_released_ = false;              // verified groups' sets let go (RunOptions::keep_sets)
  // Whether verification goes group by group (verify_in_groups): the records can be found again
  // by position, and cheaply, in files that are not compressed (see groups_pay()).
  bool in_groups_ = false;
  std::vector<ScoredPair> pairs_;
  bool expand_on_write_ = false;  // pairs mode with stream_pairs: write_pairs expands the clusters
  std::vector<uint32_t> rank_;     // keep order (keep_ranks)
  Clustering clustering_;
  // run_dedup: the outputs of the kept records, and their writer that follows verification.
  std::vector<io::AtomicFile*> kept_outs_;
  std::unique_ptr<Decisions> decisions_;
  std::thread writer_;
  std::exception_ptr writer_error_;
  std::mutex writer_m_;
  std::condition_variable writer_cv_;
  bool writer_done_ = false;
  std::atomic<uint64_t> writer_bytes_{0}, writer_docs_{0};
  Clock::time_point writer_start_{};
};

Pipeline::Impl::Impl(const std::vector<std::string>& inputs, RunOptions options)
    : options_(std::move(options)), spec_(options_.spec.resolved()) {
  if (inputs.empty()) throw UsageError("no input given; pass files, directories or - for stdin");
  inputs_ = std::make_unique<io::InputSet>(inputs, options_.reader);
  if (inputs_->sources().empty()) throw FormatError("the inputs hold no files (empty directories?); check the paths");
  init();
}

Pipeline::Impl::Impl(std::vector<io::Document> documents, RunOptions options)
    : options_(std::move(options)), spec_(options_.spec.resolved()) {
  inputs_ = std::make_unique<io::InputSet>(std::move(documents));
  init();
}

void Pipeline::Impl::init() {
  threads_ = internal::resolve_threads(options_.threads);
  apply_keep(options_, *inputs_);
}

void apply_keep(RunOptions& o, const io::InputSet& inputs) {
  if (o.keep_by.empty()) {
    if (o.keep == KeepPolicy::Field) throw UsageError("keep policy 'field' needs the field's name (RunOptions::keep_by)");
    return;
  }
  const auto& sources = inputs.sources();
  if (sources.size() == 1 && sources.front().kind == io::SourceKind::Memory)
    throw UsageError(option_ref("keep", o.keep_by) + " names a JSONL field, which documents given in memory do "
                     "not have; keep the first or the longest of a cluster there");
  if (!inputs.all_jsonl())
    throw UsageError(NEARDUP_OPT("keep_by") " reads a field of JSONL records; the inputs include plain-text files (use " NEARDUP_OPT_IS("keep", "first") " or longest)");
  o.keep = KeepPolicy::Field;
  o.reader.key_field = o.keep_by;
}


std::span<const SigValue> Pipeline::Impl::signatures() const noexcept {
  return sigs_ ? std::span<const SigValue>(*sigs_) : std::span<const SigValue>();
}

// Whether two documents share a band: equal band keys, or equal rows of a band.
bool Pipeline::Impl::share_band(DocId a, DocId b, size_t k) const noexcept {
  if (band_keys_.empty()) return neardup::share_band(signatures().subspan(a * k, k), signatures().subspan(b * k, k), spec_.lsh);
  for (const auto& keys : band_keys_)
    if (keys[a] == keys[b]) return true;
  return false;
}

const std::vector<ScoredPair>& Pipeline::Impl::pairs() const {
  if (expand_on_write_)
    throw UsageError("the pairs of this run are not held (RunOptions::stream_pairs); take them with each_pair()");
  return pairs_;
}

std::string_view Pipeline::Impl::id(DocId doc) const noexcept {
  const uint64_t b = doc == 0 ? 0 : id_end_[doc - 1];
  return std::string_view(id_blob_).substr(b, id_end_[doc] - b);
}

// What the first pass computes per document under the spec, and what it keeps.
struct Pipeline::Impl::SketchLayout {
  explicit SketchLayout(const Impl& p)
      : bottomk(p.spec_.method == SketchMethod::BottomK),
        simhash(p.spec_.method == SketchMethod::SimHash),
        exact(p.spec_.method == SketchMethod::Exact),
        keep_by(!p.options_.reader.key_field.empty()),
        check_unspaced(p.spec_.shingle.kind == ShingleKind::Words && p.spec_.shingle.word_break == WordBreak::Simple),
        k(uses_signatures(p.spec_.method) ? static_cast<size_t>(p.spec_.num_perm) : 0),
        bands(k > 0 ? static_cast<size_t>(p.spec_.lsh.bands) : 0),
        // After the first pass, LSH needs only each document's band keys; the signatures are
        // kept only to estimate similarities, or when they are the smaller of the two.
        keys_only(k > 0 && p.spec_.verify == VerifyMode::Exact && bands * sizeof(uint64_t) < k * sizeof(SigValue)),
        by_position(p.reads_by_position()),
        // With exact verification, a document that shares a band key with one sketched before it
        // is in an LSH bucket, so its set will be verified: made now, from the shingles at hand,
        // it need not be read, parsed and shingled again. Not where a run verifies group by
        // group (by position): there each group's sets are read then, and let go once it is
        // verified, so that the next group's take the same memory. On the crowded mix (2 cores,
        // 9 alternating runs) that took dedup from 2.27 to 1.91 s and its peak from 315-326 to
        // 232-257 MiB; with the sets kept from the first pass, the first pass took 1.3-1.7 s
        // instead of 0.8-0.9 s, much of it in memory touched for the first time. pairs, later:
        // 1.66-1.84 s against 1.85-2.11 s, peak 219-228 against 323-333 MiB (5 runs each).
        early(k > 0 && p.spec_.verify == VerifyMode::Exact && p.options_.first_pass_set_bytes > 0 && !p.in_groups_) {}
  bool bottomk, simhash, exact, keep_by, check_unspaced;
  size_t k, bands;
  bool keys_only, by_position, early;
};

// A batch's result arrays, sized for what the layout computes.
void Pipeline::Impl::prepare_batch(Batch& b, const SketchLayout& l) const {
  const size_t n = b.size();
  b.sigs.resize(n * l.k);
  b.keys.resize(l.keys_only ? n * l.bands : 0);
  b.simhashes.resize(l.simhash ? n : 0);
  b.fp_slot.resize(l.bottomk ? n : 0);
  b.sets.resize(l.exact || l.early ? n : 0);
  b.size_key_fields(l.keep_by);
  b.empty.resize(n);
  b.fps = Fingerprints{};
  b.fps.size = spec_.sketch_size;
}

constexpr size_t kSplitBytes = DocumentSketcher::kSplitBytes;

// Shingles and sketches entry i of a batch on a worker, with that worker's sketcher. A long
// text (kSplitBytes or more) with a signature is shingled and sketched in pieces on every thread
// of the run (DocumentSketcher::signature_split), so that one large record does not leave the
// other threads idle; a SimHash of set weights comes from its set made in pieces
// (DocumentSketcher::simhash_split). The result is the same.
void Pipeline::Impl::sketch_entry(Batch& b, size_t i, std::string_view text, const SketchLayout& l, DocumentSketcher& sk,
                                  std::vector<SigValue>& fp) const {
  const auto t1 = Clock::now();
  const bool split = l.k > 0 && text.size() >= kSplitBytes && sk.can_split();
  const bool split_simhash = l.simhash && text.size() >= kSplitBytes && sk.can_split_simhash();
  const auto sig = l.k > 0 ? std::span<SigValue>(b.sigs).subspan(i * l.k, l.k) : std::span<SigValue>();
  uint64_t simhash = 0;
  const size_t shingles = split            ? sk.signature_split(text, sig, threads_)
                          : split_simhash ? sk.simhash_split(text, simhash, threads_)
                                          : sk.shingle(text).size();
  const auto t2 = Clock::now();
  if (l.bottomk) {
    sk.fingerprint(fp);
    b.fp_slot[i] = static_cast<uint32_t>(b.fps.count());
    b.fps.push_back(fp);
  } else if (l.simhash) {
    b.simhashes[i] = split_simhash ? simhash : sk.simhash();
  } else if (l.exact) {
    b.sets[i] = sk.set();
  } else {
    if (!split) sk.signature(sig);
    if (l.keys_only)
      for (size_t band = 0; band < l.bands; ++band)
        b.keys[i * l.bands + band] = signature_band_key(sig, static_cast<int>(band), spec_.lsh, spec_.shingle.seed);
    if (l.early && shingles > 0) {
      thread_local std::vector<uint64_t> computed;
      std::span<const uint64_t> keys;
      if (l.keys_only) {
        keys = std::span<const uint64_t>(b.keys).subspan(i * l.bands, l.bands);
      } else {
        computed.resize(l.bands);
        for (size_t band = 0; band < l.bands; ++band)
          computed[band] = signature_band_key(sig, static_cast<int>(band), spec_.lsh, spec_.shingle.seed);
        keys = computed;
      }
      for (const uint64_t key : keys) seen_keys_->prefetch(key);
      bool seen = false;  // every key is inserted: a later document must find each of them
      for (const uint64_t key : keys) seen |= seen_keys_->insert(key);
      const uint64_t bytes = shingles * sizeof(ShingleHash);  // at most the set's
      if (seen && early_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes <= options_.first_pass_set_bytes)
        b.sets[i] = sk.set();
    }
  }
  b.t_sketch += seconds_since(t2);
  b.t_shingle += std::chrono::duration<double>(t2 - t1).count();
  b.shingles += shingles;
  b.empty[i] = shingles == 0;
  // Chinese, Japanese or Thai text under the default word definition: a run without spaces is
  // one "word", so a long text has very few. Only such documents are scanned, to count the text
  // the run cannot compare well.
  if (l.check_unspaced && b.text_length[i] >= 256 && shingles * 32 < b.text_length[i]) b.unspaced += unspaced_script_bytes(text);
  sk.trim();
}

// Keeps what the run needs of entry i, in reading order, on the reading thread.
void Pipeline::Impl::keep_entry(Batch& b, size_t i, const SketchLayout& l) {
  const Batch::Entry& e = b.entries[i];
  const auto doc = static_cast<DocId>(lengths_.size());
  // Stored as they come, so that a repeated set's copy is let go for the sets after it.
  if (l.early && !b.sets[i].empty()) early_sets_.set(doc, std::move(b.sets[i]));
  if (l.exact) sets_->set(doc, std::move(b.sets[i]));
  id_blob_.append(b.id_of(i));
  id_end_.push_back(id_blob_.size());
  lengths_.push_back(static_cast<uint32_t>(b.text_length[i]));  // <= max_doc_bytes
  if (l.by_position) pos_.push_back({e.source, e.raw_length, e.offset});
  if (l.keys_only)
    for (size_t band = 0; band < l.bands; ++band) band_keys_[band].push_back(b.keys[i * l.bands + band]);
  else
    sigs_->append(b.sigs.data() + i * l.k, l.k);
  if (l.bottomk) fps_.push_back(b.fps[b.fp_slot[i]]);
  if (l.simhash) simhashes_.push_back(b.simhashes[i]);
  if (l.keep_by) {
    key_kind_.push_back(b.keys_kind[i]);
    key_num_.push_back(b.keys_num[i]);
    key_blob_.append(b.keys_text, b.keys_text_begin[i], b.keys_text_length[i]);
    key_end_.push_back(key_blob_.size());
  }
  empty_.push_back(b.empty[i]);
}

// The run's statistics after the first pass; throws if every record was bad.
void Pipeline::Impl::count_first_pass(const internal::PassTotals& totals, const io::BadRecords& bad, const io::RecordReader& reader) {
  stats_.shingles += totals.shingles;
  stats_.times.parse += totals.t_parse;
  stats_.times.shingle += totals.t_shingle;
  stats_.times.sketch += totals.t_sketch;
  const size_t n = lengths_.size();
  NEARDUP_ASSERT(empty_.size() == n);
  stats_.documents = n;
  stats_.empty = static_cast<uint64_t>(std::count(empty_.begin(), empty_.end(), 1));
  for (const uint32_t l : lengths_) stats_.text_bytes += l;
  stats_.unspaced_bytes = totals.unspaced;
  stats_.left_out = inputs_->left_out();
  io::ReaderStats& r = stats_.reader;
  r.records = n;
  r.invalid_utf8 = totals.invalid_utf8;
  r.skipped = bad.skipped();
  r.first_skips = bad.first();
  r.skip_kinds = bad.kinds();
  r.missing_ids = totals.missing_ids;
  r.binary = reader.stats().binary;
  if (n == 0 && r.skipped > 0)
    throw FormatError("every record was bad (" + std::to_string(r.skipped) + " skipped, the first: " + r.first_skips.front() +
                      "); nothing to deduplicate: check " NEARDUP_OPT("text_field") ", " NEARDUP_OPT("format") " and the inputs");
}

// Verifying group by group reads each group's records again: by position, which a plain file
// does by seeking, but a compressed one only by decompressing from its start, once per group
// (32 times). On 300 MB of the crowded mix, half of it as a .zst file, `dedup` took 1.65 s in
// groups (1.35 s of it verifying) against 0.34 s with the file plain; reading every candidate's
// set in one pass took `pairs` 0.48 s. So a run with a compressed input (or inputs that are not
// JSONL, read whole) reads its candidates' sets at once, in one pass, and holds them all.
//
// A dedup over compressed inputs whose decompressed bytes the first pass keeps
// (RunOptions::decompressed_copies) verifies in groups, reading each group's records from those
// copies, so that its writer copies the kept records while it verifies. The copies are not in
// the page cache (written directly), so each group's reading takes disk reads spread over the
// whole copy; pairs, with no writer to overlap, reads its candidates at once from them: on the
// crowded mix as one .zst file it took 3.0-3.3 s in groups and 2.6 s at once, and dedup 3.8 s
// in groups and 4.2-4.3 s at once.
bool Pipeline::Impl::groups_pay(int compressed, bool copies) const {
  return reads_by_position() && compressed >= 0 && (compressed == 0 || (copies && mode_ == Mode::Dedup));
}

// For a run that reads its records again by position (JSONL only): whether the inputs include a
// compressed file, 1 or 0, opening each input once to read its first bytes; -1 where one has a
// problem or cannot be opened (the first pass reports it), and for other runs (not looked at).
int Pipeline::Impl::compressed_inputs() const {
  if (!reads_by_position()) return -1;
  int compressed = 0;
  try {
    for (const auto& src : inputs_->sources()) {
      if (!src.problem.empty()) return -1;
      if (io::open_stream(src.path, src.display)->compression() != io::Compression::None) compressed = 1;
    }
  } catch (const std::exception&) {
    return -1;
  }
  return compressed;
}

// Where the first pass keeps the decompressed bytes of the compressed JSONL inputs, or empty
// where it keeps none: not asked, or no copy can be made there (a trial one; the reason noted).
std::string Pipeline::Impl::copies_dir() {
  if (!options_.decompressed_copies || !reads_by_position()) return {};
  const std::string dir = io::temp_directory(options_.temp_dir);
  if (io::ScratchCopy::create(dir, options_.temp_keep_free)) return dir;
  stats_.copy_note = io::ScratchCopy::unavailable(dir);
  return {};
}

// The first pass's copies of compressed inputs: later passes read those inputs from them. If one
// was not kept, verification reads its candidates at once, decompressing the inputs again once.
void Pipeline::Impl::take_copies(io::RecordReader& reader) {
  std::string why;
  auto copies = reader.take_decompressed_copies(&why);
  for (size_t i = 0; i < copies.size(); ++i) {
    if (!copies[i]) continue;
    stats_.copied_bytes += copies[i]->size();
    inputs_->read_again_from(i, std::move(copies[i]));
    input_stamps_[i] = file_stamp(inputs_->sources()[i].path);
  }
  stats_.copy_note = why;
  if (!why.empty()) in_groups_ = false;  // a compressed input without its copy
}

void Pipeline::Impl::sketch_pass() {
  const auto t0 = Clock::now();
  const int compressed = compressed_inputs();
  const std::string copy_dir = compressed > 0 ? copies_dir() : std::string();
  in_groups_ = groups_pay(compressed, !copy_dir.empty());
  const SketchLayout layout(*this);
  sigs_ = std::make_unique<internal::GrowArray<SigValue>>();
  band_keys_.clear();
  band_keys_.resize(layout.keys_only ? layout.bands : 0);
  input_stamps_.clear();
  for (const auto& src : inputs_->sources()) input_stamps_.push_back(file_stamp(src.path));
  fps_ = Fingerprints{};
  fps_.size = spec_.sketch_size;
  early_sets_ = ShingleSets();
  if (layout.exact) sets_ = std::make_unique<ShingleSets>();
  early_bytes_ = 0;
  if (layout.early) seen_keys_ = std::make_unique<internal::SeenKeys>();
  io::RecordReader reader(*inputs_, options_.reader);
  if (!copy_dir.empty()) reader.keep_decompressed_copies(copy_dir, options_.temp_keep_free);
  io::BadRecords bad(options_.reader);
  // One sketcher per thread of the pass (pass_runner.h), made on its first batch.
  std::vector<std::optional<DocumentSketcher>> sketchers(internal::pass_slots(threads_));
  std::vector<std::vector<SigValue>> fp(sketchers.size());
  Pass pass;
  pass.stage = "sketch";
  pass.total_bytes = inputs_->total_bytes();
  pass.progress = &options_.progress;
  pass.reader = &options_.reader;
  pass.word_text = Shingler::reads_words_only(spec_.shingle);
  pass.on_bad = [&](const std::string& where, const io::Rejected& r) { bad.report(where, r); };
  pass.start = [&](Batch& b, size_t slot) {
    if (!sketchers[slot]) sketchers[slot].emplace(spec_);
    prepare_batch(b, layout);
  };
  pass.process = [&](Batch& b, size_t i, std::string_view text, size_t slot) {
    sketch_entry(b, i, text, layout, *sketchers[slot], fp[slot]);
  };
  pass.consume = [&](Batch& b, size_t i, DocId) { keep_entry(b, i, layout); };
  count_first_pass(internal::run_pass(reader, *inputs_, threads_, pass), bad, reader);
  if (!copy_dir.empty()) take_copies(reader);
  seen_keys_.reset();
  if (layout.exact) {
    stats_.set_bytes = sets_->total_hashes() * sizeof(ShingleHash);
    stats_.verify_shared = sets_->shared_docs();
  }
  stats_.times.pass1 = seconds_since(t0);
}

std::vector<DocId> Pipeline::Impl::load_sets_pass(const std::vector<uint8_t>& needed) {
  take_first_pass_sets(needed);
  std::vector<DocId> docs;
  for (DocId d = 0; d < needed.size(); ++d)
    if (needed[d]) docs.push_back(d);
  read_missing_sets(docs, true);
  return docs;
}

void Pipeline::Impl::take_first_pass_sets(const std::vector<uint8_t>& needed) {
  sets_ = std::make_unique<ShingleSets>(std::move(early_sets_));
  early_sets_ = ShingleSets();
  sets_->keep_only(needed);
  stats_.set_bytes = sets_->total_hashes() * sizeof(ShingleHash);
  stats_.verify_shared = sets_->shared_docs();
  uint64_t kept = 0;
  for (DocId d = 0; d < needed.size(); ++d) kept += needed[d] && sets_->has(d);
  stats_.verify_kept = kept;
  stats_.verify_docs = 0;
}

void Pipeline::Impl::read_missing_sets(std::span<const DocId> docs, bool progress) {
  std::vector<DocId> missing;
  for (const DocId d : docs)
    if (!sets_->has(d)) missing.push_back(d);
  stats_.verify_docs += missing.size();
  const uint64_t shared_before = sets_->shared_docs();
  if (!missing.empty()) read_sets(missing, progress);
  // Over the run: the most bytes of sets held at once, and every document that shared a copy
  // (a dedup lets each group's sets go before the next group's are read).
  stats_.set_bytes = std::max<uint64_t>(stats_.set_bytes, sets_->total_hashes() * sizeof(ShingleHash));
  stats_.verify_shared += sets_->shared_docs() - shared_before;
}

// Reads the documents again and stores their sets.
void Pipeline::Impl::read_sets(std::span<const DocId> docs, bool progress) {
  check_inputs_unchanged();
  io::RecordReader reader(*inputs_, options_.reader);
  // By position: only the needed records are read, and parsed on the workers; the k-th record
  // read is docs[k]. Otherwise every record is read and parsed here, and only the needed ones
  // are shingled.
  std::function<bool(const io::Record&, DocId)> filter;
  size_t next = 0;
  if (!pos_.empty()) {
    std::vector<io::RecordPos> at;
    at.reserve(docs.size());
    for (const DocId d : docs) at.push_back(pos_[d]);
    reader.select(std::move(at));
  } else {
    filter = [&](const io::Record& r, DocId ordinal) {
      check_same_record(r, ordinal);
      if (next < docs.size() && docs[next] == ordinal) {
        ++next;
        return true;
      }
      return false;
    };
  }
  shingle_set_records(reader, *inputs_, spec_, options_.reader, threads_, [&](ShingledRecord& r) {
    DocId doc = r.ordinal;
    DocId same_as = r.same_as;
    if (!pos_.empty()) {
      if (doc >= docs.size()) throw IoError("the input changed while neardup was running; do not modify inputs during a run");
      doc = docs[doc];
      if (same_as != ShingledRecord::kNone) same_as = docs[same_as];
      if (r.text_length != lengths_[doc])
        throw IoError(std::string("the record at byte ") + std::to_string(r.offset) +
                      " changed while neardup was running; do not modify inputs during a run", ErrorPlace{inputs_->sources()[r.source].display});
    }
    if (same_as != ShingledRecord::kNone) {
      sets_->share(doc, same_as);
      ++stats_.verify_copies;
    } else
      sets_->set(doc, std::move(r.set));
  }, filter, progress ? &options_.progress : nullptr);
}

Scorer Pipeline::Impl::scorer() const noexcept {
  static const ShingleSets kNoSets;  // exact verification before any set was loaded: no pair to score
  if (spec_.verify == VerifyMode::Exact) return Scorer::exact(sets_ ? *sets_ : kNoSets);
  if (spec_.method == SketchMethod::BottomK) return Scorer::bottomk_estimate(fps_);
  if (spec_.method == SketchMethod::SimHash) return Scorer::simhash_estimate(simhashes_);
  return Scorer::signature_estimate(signatures(), static_cast<size_t>(spec_.num_perm));
}

void Pipeline::Impl::check_same_record(const io::Record& r, DocId doc) const {
  if (doc >= lengths_.size() || r.id != id(doc))
    throw IoError(std::string("the input changed while neardup was running (record ") +
                  std::to_string(static_cast<uint64_t>(doc) + 1) +
                  " differs from the first read); do not modify inputs during a run", ErrorPlace{inputs_->sources()[r.source].display});
}

std::vector<std::string> Pipeline::Impl::texts(std::span<const DocId> docs) const {
  if (!std::is_sorted(docs.begin(), docs.end())) throw UsageError("Pipeline::texts: documents must be in ascending order");
  check_inputs_unchanged();
  std::vector<std::string> out;
  io::RecordReader reader(*inputs_, options_.reader);
  io::Record rec;
  if (!pos_.empty()) {
    std::vector<io::RecordPos> at;
    for (const DocId d : docs) at.push_back(pos_.at(d));
    reader.select(std::move(at));
    for (const DocId d : docs) {
      if (!reader.next(rec) || rec.text.size() != lengths_[d])
        throw IoError("the input changed while neardup was running; do not modify inputs during a run", place_of(d));
      out.emplace_back(rec.text);
    }
    return out;
  }
  DocId ordinal = 0;
  size_t next = 0;
  while (next < docs.size() && reader.next(rec)) {
    check_same_record(rec, ordinal);
    if (ordinal++ == docs[next]) {
      out.emplace_back(rec.text);
      ++next;
    }
  }
  if (next < docs.size()) throw IoError("the input changed while neardup was running; do not modify inputs during a run");
  return out;
}

void Pipeline::Impl::check_inputs_unchanged() const {
  const auto& sources = inputs_->sources();
  for (size_t i = 0; i < sources.size() && i < input_stamps_.size(); ++i) {
    if (file_stamp(sources[i].path) != input_stamps_[i])
      throw IoError(std::string("the input changed while neardup was running (its size or modification time ") +
                    "differs from the first read); do not modify inputs during a run", ErrorPlace{sources[i].display});
  }
}

double Pipeline::Impl::similarity(DocId a, DocId b) const {
  return scorer()(std::min(a, b), std::max(a, b));
}

PairFilter Pipeline::Impl::pair_filter() const { return uses_signatures(spec_.method) ? band_filter() : PairFilter(); }

void Pipeline::Impl::verify_candidates(const std::vector<DocPair>& candidates, double threshold) {
  if (spec_.verify == VerifyMode::Exact && !candidates.empty()) {
    std::vector<uint8_t> needed(lengths_.size(), 0);
    for (const DocPair& p : candidates) needed[p.a] = needed[p.b] = 1;
    load_sets_pass(needed);
  }
  pairs_ = verify_pairs(candidates, scorer(), threshold, threads_);
}

LshBuckets Pipeline::Impl::find_buckets() {
  CandidateStats cs;
  std::vector<std::span<const uint64_t>> keys(band_keys_.begin(), band_keys_.end());
  LshBuckets buckets =
      band_keys_.empty()
          ? lsh_buckets(signatures(), static_cast<size_t>(spec_.num_perm), empty_, spec_.lsh, spec_.shingle.seed, threads_, &cs)
          : lsh_buckets_from_keys(keys, empty_, threads_, &cs);
  stats_.largest_bucket = cs.largest_bucket;
  return buckets;
}

PairFilter Pipeline::Impl::band_filter() const {
  const size_t k = static_cast<size_t>(spec_.num_perm);
  return [this, k](DocId a, DocId b) { return share_band(a, b, k); };
}

std::unique_ptr<SetJoin> Pipeline::Impl::build_join(std::span<const DocId> docs) const {
  return std::make_unique<SetJoin>(docs, [this](DocId d) { return sets_->get(d); }, spec_.threshold, threads_);
}

// LSH with exact verification. Star edges first (a bucket of s documents gives s - 1, verified in
// parallel): on clean clusters they connect everything. A bucket the stars left split (its first
// document an outlier, or two clusters meeting in it) is completed exactly: a small one by
// verifying its pairs across clusters, a large one by the exact join over its documents,
// restricted to pairs that share a band, which verifies only pairs not yet connected. So every
// pair that shares a bucket and has J >= t ends up in one cluster. Pairs mode lists every such
// pair: all the pairs of the small buckets are verified, and the join lists those of the large
// ones (here, or as they are written).
void Pipeline::Impl::find_pairs_lsh() {
  auto t = Clock::now();
  if (spec_.verify == VerifyMode::Estimate) return find_pairs_lsh_estimate();
  const LshBuckets buckets = find_buckets();
  std::vector<uint8_t> in_bucket(lengths_.size(), 0);
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
    verified = verify_in_groups(buckets, in_bucket);
  }
  stats_.candidates = verified;
  stats_.times.verify = seconds_since(t);
}

uint64_t Pipeline::Impl::verify_buckets(const LshBuckets& buckets, std::span<const DocId> docs, std::vector<ScoredPair>& out) {
  std::vector<DocPair> stars = star_edges(buckets);
  std::vector<ScoredPair> pairs = verify_pairs(stars, scorer(), spec_.threshold, threads_);
  uint64_t verified = stars.size();

  // Buckets up to this size are completed pair by pair (at most 2,016 pairs each); larger ones
  // by the join, whose cost grows with the pairs it finds rather than with s^2.
  constexpr size_t kDirect = 64;
  const bool pairs_mode = mode_ == Mode::Pairs;
  std::vector<DocId> joined;
  std::vector<DocPair> direct;
  {
    // Over the buckets' documents (their places in docs), not every document of the run: one
    // group of a dedup's verification costs its own size.
    const auto local = [&](DocId d) { return place_in(docs, d); };
    UnionFind uf(docs.size());
    for (const ScoredPair& e : pairs) uf.unite(local(e.a), local(e.b));
    std::vector<uint32_t> root;
    for (size_t i = 0; i < buckets.size(); ++i) {
      const auto b = buckets[i];
      root.resize(b.size());
      bool split = false;
      for (size_t x = 0; x < b.size(); ++x) {
        root[x] = uf.find(local(b[x]));
        split |= root[x] != root[0];
      }
      if (!split && !pairs_mode) continue;
      if (b.size() > kDirect) {
        joined.insert(joined.end(), b.begin(), b.end());
        continue;
      }
      for (size_t y = 2; y < b.size(); ++y)  // the pairs with b[0] are stars
        for (size_t x = 1; x < y; ++x)
          if (pairs_mode || root[x] != root[y]) direct.push_back({b[x], b[y]});
    }
  }
  internal::sort_unique_pairs(direct);
  {  // stars already verified
    std::vector<DocPair> rest;
    std::set_difference(direct.begin(), direct.end(), stars.begin(), stars.end(), std::back_inserter(rest));
    direct.swap(rest);
  }
  verified += direct.size();
  if (!direct.empty()) {
    const auto more = verify_pairs(direct, scorer(), spec_.threshold, threads_);
    std::vector<ScoredPair> merged(pairs.size() + more.size());
    std::merge(pairs.begin(), pairs.end(), more.begin(), more.end(), merged.begin(), by_pair);
    pairs.swap(merged);
  }
  std::vector<DocPair>().swap(direct);
  std::vector<DocPair>().swap(stars);
  if (!joined.empty()) {
    std::sort(joined.begin(), joined.end());
    joined.erase(std::unique(joined.begin(), joined.end()), joined.end());
    std::unique_ptr<SetJoin> join = build_join(joined);
    const std::vector<ScoredPair> more = join->connect(lengths_.size(), pairs, band_filter());
    verified += join->stats().verified;
    // Pairs mode lists the join's pairs with the run's verified ones (expand_pairs), which hold
    // every pair of the small buckets.
    if (pairs_mode) joins_.push_back(std::move(join));
    if (!more.empty()) {
      pairs.insert(pairs.end(), more.begin(), more.end());
      std::sort(pairs.begin(), pairs.end(), by_pair);
    }
  }
  out.insert(out.end(), pairs.begin(), pairs.end());
  return verified;
}

// Verification in groups. A candidate component (documents joined through shared buckets) holds
// every pair that can be verified between its documents, so its clusters depend on its own
// pairs only: verifying a group of components at a time, in the order of their first
// documents, gives the clusters of verifying all at once, and decides the documents of the
// input's start first. The writer of the kept records (run_dedup) then starts while the rest is
// verified. Pairs mode keeps each group's join (its ranks, not the sets) to list the pairs of its
// large buckets when they are written (expand_pairs).
uint64_t Pipeline::Impl::verify_in_groups(const LshBuckets& buckets, const std::vector<uint8_t>& in_bucket) {
  const size_t n = lengths_.size();
  // 32 groups by the place of a component's first document (the union-find's representative)
  // in the input, so the writer can start once the first 32nd is decided.
  constexpr size_t kGroups = 32;
  std::vector<size_t> start(kGroups + 1, 0);
  std::vector<size_t> order(buckets.size());  // bucket indices, group by group
  {
    UnionFind uf(n);
    for (size_t i = 0; i < buckets.size(); ++i) {
      const auto b = buckets[i];
      for (size_t x = 1; x < b.size(); ++x) uf.unite(b[0], b[x]);
    }
    std::vector<uint8_t> group_of(buckets.size());
    for (size_t i = 0; i < buckets.size(); ++i) {
      group_of[i] = static_cast<uint8_t>(uint64_t{uf.find(buckets[i][0])} * kGroups / n);
      ++start[group_of[i] + 1];
    }
    for (size_t g = 0; g < kGroups; ++g) start[g + 1] += start[g];
    std::vector<size_t> at(start.begin(), start.end() - 1);
    for (size_t i = 0; i < buckets.size(); ++i) order[at[group_of[i]]++] = i;
  }
  clustering_.keeper.resize(n);
  std::iota(clustering_.keeper.begin(), clustering_.keeper.end(), DocId{0});  // alone until a group says otherwise
  group_similarity_.assign(n, 0.0);
  if (!kept_outs_.empty()) {
    decisions_ = std::make_unique<Decisions>(n);
    for (DocId d = 0; d < n; ++d)
      if (!in_bucket[d]) decisions_->set(d, true);  // in no bucket: alone, kept
    decisions_->publish();
    start_writer();
  }
  uint64_t verified = 0;
  std::vector<ScoredPair> all;
  LshBuckets group;
  std::vector<DocId> docs;
  std::vector<ScoredPair> found;
  for (size_t g = 0; g < kGroups; ++g) {
    if (start[g] == start[g + 1]) continue;
    group.offsets.assign(1, 0);
    group.members.clear();
    for (size_t k = start[g]; k < start[g + 1]; ++k) {
      const auto b = buckets[order[k]];
      group.members.insert(group.members.end(), b.begin(), b.end());
      group.offsets.push_back(group.members.size());
    }
    docs = group.members;
    std::sort(docs.begin(), docs.end());
    docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
    read_missing_sets(docs, false);
    found.clear();
    verified += verify_buckets(group, docs, found);
    cluster_group(docs, found);
    // A component lies in one group: its sets are not needed again (unless asked to be kept).
    if (!options_.keep_sets) {
      sets_->release(docs);
      sets_released_ = true;
    }
    if (decisions_) throw_if_the_writer_failed();
    all.insert(all.end(), found.begin(), found.end());
    // Every component starting before this group's end is verified: that share of the input.
    if (options_.progress)
      options_.progress({"verify", inputs_->total_bytes() * (g + 1) / kGroups, inputs_->total_bytes(), n * (g + 1) / kGroups});
  }
  std::sort(all.begin(), all.end(), by_pair);
  pairs_ = std::move(all);
  return verified;
}

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

// Leader clustering's test: J >= t, by the run's verification.
bool Pipeline::Impl::reaches_threshold(DocId a, DocId b) const { return similarity(a, b) + kSimilarityEpsilon >= spec_.threshold; }

// LSH with estimated similarities: no sets to join, so each bucket's pairs are compared by their
// signatures (a bucket of s documents costs up to s(s - 1)/2 estimates of num_perm values). For
// clusters, a pair already connected is skipped; pairs mode keeps every pair.
void Pipeline::Impl::find_pairs_lsh_estimate() {
  auto t = Clock::now();
  const LshBuckets buckets = find_buckets();
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  const Scorer score = scorer();
  if (mode_ == Mode::Pairs) {
    const std::vector<DocPair> all = bucket_pairs(buckets);
    stats_.candidates = all.size();
    pairs_ = verify_pairs(all, score, spec_.threshold, threads_);
  } else {
    UnionFind uf(lengths_.size());
    pairs_.clear();
    for (size_t i = 0; i < buckets.size(); ++i) {
      const auto b = buckets[i];
      for (size_t y = 1; y < b.size(); ++y)
        for (size_t x = 0; x < y; ++x) {
          if (uf.find(b[x]) == uf.find(b[y])) continue;
          ++stats_.candidates;
          const double sim = score(b[x], b[y]);
          if (sim + kSimilarityEpsilon < spec_.threshold) continue;
          uf.unite(b[x], b[y]);
          pairs_.push_back({b[x], b[y], sim});
        }
    }
    std::sort(pairs_.begin(), pairs_.end(), by_pair);
  }
  stats_.times.verify = seconds_since(t);
}

// No sketch: every document's shingle set was kept by the first pass; the exact join finds every
// pair (pairs mode, when written or by expand) or connects them (clusters).
void Pipeline::Impl::find_pairs_exact() {
  const auto t = Clock::now();
  std::vector<DocId> joined;
  for (DocId d = 0; d < lengths_.size(); ++d)
    if (!empty_[d]) joined.push_back(d);
  joins_.clear();
  joins_.push_back(build_join(joined));
  const SetJoin& join = *joins_.back();
  stats_.times.lsh = seconds_since(t);
  const auto t2 = Clock::now();
  pairs_ = join.connect(lengths_.size(), {}, {});
  std::sort(pairs_.begin(), pairs_.end(), by_pair);
  stats_.candidates = join.stats().verified;
  stats_.verify_docs = join.size();
  stats_.times.verify = seconds_since(t2);
}

void Pipeline::Impl::find_pairs_bottomk() {
  // The join is exact over the fingerprints; with exact verification it runs at an estimate
  // threshold lowered by the estimator's error, so that true pairs near t are not lost.
  auto t = Clock::now();
  const bool exact = spec_.verify == VerifyMode::Exact;
  const int n = spec_.sketch_size;
  std::vector<ScoredPair> found;
  if (options_.top > 0) {
    found = top_pairs(fps_, options_.top, PairScore::BottomKEstimate, threads_);
    // Exact ranking: the M pairs found have true Jaccard >= j_low (bottomk_lower_bound of the
    // M-th estimate), so the true M-th best does too, and every pair of the true top M has an
    // estimate at or above the screen threshold of j_low.
    if (exact && !found.empty())
      found = pairs_above(fps_, bottomk_screen_threshold(bottomk_lower_bound(found.back().similarity, n), n),
                          PairScore::BottomKEstimate, threads_);
  } else {
    found = pairs_above(fps_, exact ? bottomk_candidate_threshold(spec_.threshold, n) : spec_.threshold,
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
  const std::vector<HammingPair> near = simhash_find_all(simhashes_, plan, threads_, empty_);
  stats_.candidates = near.size();
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  std::vector<DocPair> candidates(near.size());
  for (size_t i = 0; i < near.size(); ++i) candidates[i] = {near[i].a, near[i].b};
  verify_candidates(candidates, spec_.threshold);
  stats_.times.verify = seconds_since(t);
}

namespace {

// "FIELD", "FIELD:desc" or "FIELD:asc" into `o`; what is wrong with it (examples worded as
// `option`), or "".
std::string keep_field(RunOptions& o, std::string_view spelling, std::string_view option) {
  std::string_view field = spelling;
  bool descending = true;
  if (const size_t colon = spelling.rfind(':'); colon != std::string_view::npos) {
    const std::string_view order = spelling.substr(colon + 1);
    if (order != "asc" && order != "desc") return "the order after ':' is asc or desc (for example " + option_ref(option, "score:desc") + ")";
    descending = order == "desc";
    field = spelling.substr(0, colon);
  }
  if (field.empty()) return "it needs a field's name (for example " + option_ref(option, "score") + ")";
  o.keep = KeepPolicy::Field;
  o.keep_by = std::string(field);
  o.keep_descending = descending;
  return "";
}

}  // namespace

void set_keep_by(RunOptions& o, std::string_view spelling) {
  if (const std::string problem = keep_field(o, spelling, "keep_by"); !problem.empty())
    throw UsageError(option_ref("keep_by", spelling) + ": " + problem);
}

void set_keep(RunOptions& o, std::string_view spelling) {
  o.keep_by.clear();
  o.keep_descending = true;
  if (spelling == "first" || spelling == "longest") {
    o.keep = spelling == "first" ? KeepPolicy::First : KeepPolicy::Longest;
    return;
  }
  if (const std::string problem = keep_field(o, spelling, "keep"); !problem.empty())
    throw UsageError(option_ref("keep", spelling) + ": " + problem + "; or first or longest");
}

ClusterMode cluster_mode(std::string_view spelling) {
  if (spelling == "components") return ClusterMode::Components;
  if (spelling == "leader") return ClusterMode::Leader;
  throw UsageError(option_ref("cluster", spelling) + " is not one of components, leader");
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

namespace {

// Gives the heap's free pages back to the system (RunOptions::release_memory_after_first_pass).
// A pass's large records leave free blocks in the heap once their buffers are let go (glibc
// raises its mmap threshold after freeing a large block, so later blocks of up to 32 MiB come
// from the heap), which would otherwise stay resident through verification, the run's peak.
void release_free_memory() noexcept {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace

void Pipeline::Impl::run(Mode mode) {
  const ThreadPool::Use use(options_.pool);
  const auto t_start = Clock::now();
  if (options_.top > 0 && (mode != Mode::Pairs || spec_.method != SketchMethod::BottomK))
    throw UsageError(NEARDUP_OPT("top") " applies to pairs with " NEARDUP_OPT_IS("method", "bottomk") " only");
  mode_ = mode;
  sets_released_ = false;
  clustering_ = Clustering{};
  sketch_pass();
  if (options_.release_memory_after_first_pass) release_free_memory();
  check_duplicate_ids();
  rank_ = keep_ranks();
  if (spec_.method == SketchMethod::BottomK)
    find_pairs_bottomk();
  else if (spec_.method == SketchMethod::SimHash)
    find_pairs_simhash();
  else if (spec_.method == SketchMethod::Exact)
    find_pairs_exact();
  else
    find_pairs_lsh();
  stats_.verified = pairs_.size();

  auto t = Clock::now();
  cluster();
  std::vector<uint32_t>().swap(rank_);
  stats_.clusters = clustering_.clusters;
  stats_.removed = clustering_.removed;
  // Each removed document's similarity to its kept one, in input order: counted here, written by
  // write_removed. Computed on every thread, a chunk of removed documents at a time: an exact one
  // merges two sets, which for two long texts takes milliseconds (on the crowded mix 11,168 of
  // them took 24 ms on one thread while the others waited).
  std::vector<DocId> removed;
  for (DocId i = 0; i < lengths_.size(); ++i)
    if (!clustering_.kept(i)) removed.push_back(i);
  removed_similarity_.assign(removed.size(), 0.0);
  if (!group_similarity_.empty()) {  // verified group by group: taken then
    for (size_t k = 0; k < removed.size(); ++k) removed_similarity_[k] = group_similarity_[removed[k]];
    std::vector<double>().swap(group_similarity_);
  } else {
    each_removed_similarity(removed, [&](size_t k, double sim) { removed_similarity_[k] = sim; });
  }
  stats_.removed_below_threshold = static_cast<uint64_t>(std::count_if(
      removed_similarity_.begin(), removed_similarity_.end(), [&](double s) { return s + kSimilarityEpsilon < spec_.threshold; }));
  stats_.times.cluster = seconds_since(t);

  // The bottomk join and the SimHash tables already found every pair, and so did LSH with
  // estimates; with exact verification the pairs found so far only connect the clusters, and the
  // exact join lists them all (here, or as they are written).
  const bool expand = mode == Mode::Pairs && !joins_.empty();
  expand_on_write_ = expand && options_.stream_pairs;
  if (expand && !expand_on_write_) {
    t = Clock::now();
    std::vector<ScoredPair> all;
    expand_pairs([&](std::span<const ScoredPair> chunk) { all.insert(all.end(), chunk.begin(), chunk.end()); });
    pairs_ = std::move(all);
    stats_.times.verify += seconds_since(t);
  }
  stats_.pairs = pairs_.size();  // with stream_pairs, write_pairs counts them
  stats_.seconds = seconds_since(t_start);
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

uint64_t Pipeline::Impl::state_bytes() const noexcept {
  uint64_t b = id_blob_.size() + id_end_.size() * sizeof(uint64_t) + lengths_.size() * sizeof(uint32_t) + empty_.size() +
               pos_.size() * sizeof(io::RecordPos) + simhashes_.size() * sizeof(uint64_t);
  if (sigs_) b += sigs_->size() * sizeof(SigValue);
  for (const auto& keys : band_keys_) b += keys.size() * sizeof(uint64_t);
  b += fps_.values.size() * sizeof(SigValue) + (fps_.offsets.size() - 1) * sizeof(uint64_t);
  b += key_kind_.size() + key_num_.size() * sizeof(double) + key_blob_.size() + key_end_.size() * sizeof(uint64_t);
  return b;
}

MemoryEstimate Pipeline::Impl::estimate_memory(uint64_t sample_bytes) const {
  MemoryEstimate m;
  Shingler shingler(spec_.shingle);
  double distinct = 0;  // shingles, distinct per document, over the sample
  m.input = io::sample_inputs(*inputs_, options_.reader, sample_bytes,
                              [&](std::string_view, std::string_view text) { distinct += static_cast<double>(shingler.shingle_set(text).size()); });
  const double n = m.input.records;
  // Distinct shingles per byte of text sampled, times the text of an average document. When no
  // text could be sampled (no record short enough to read whole), one distinct shingle per 6
  // bytes of text with word shingles, one per byte with character shingles: the most we have
  // measured on real text (source code; byte n-grams of unique text).
  const double per_byte = m.input.sampled_text_bytes > 0 ? distinct / static_cast<double>(m.input.sampled_text_bytes)
                          : spec_.shingle.kind == ShingleKind::Words ? 1.0 / 6
                                                                      : 1.0;
  const double per_doc_distinct = n > 0 ? per_byte * m.input.text_bytes / n : 0;
  double fixed = 0;  // bytes that do not grow with the documents
  // Kept for the whole run: the id and where it ends, the text length, the empty flag, the
  // record's position (JSONL), and the sketch (below).
  double per_doc = (n > 0 ? m.input.id_bytes / n : 0) + sizeof(uint64_t) + sizeof(uint32_t) + 1;
  if (inputs_->all_jsonl()) per_doc += sizeof(io::RecordPos);
  double search_per_doc = 0;
  const size_t k = static_cast<size_t>(spec_.num_perm);
  switch (spec_.method) {
    case SketchMethod::MinHash:
    case SketchMethod::Oph: {
      const size_t bands = static_cast<size_t>(spec_.lsh.bands);
      const bool keys_only = spec_.verify == VerifyMode::Exact && bands * sizeof(uint64_t) < k * sizeof(SigValue);
      per_doc += keys_only ? static_cast<double>(bands * sizeof(uint64_t)) : static_cast<double>(k * sizeof(SigValue));
      const LshMemory lsh = lsh_search_memory(spec_.lsh, threads_, keys_only ? bands : 1);
      // The arrays round up to huge pages only once they pass one (internal/big_array.h).
      const double array_bytes = n * (keys_only ? sizeof(uint64_t) : static_cast<double>(k * sizeof(SigValue)));
      if (array_bytes > static_cast<double>(2 << 20)) fixed += lsh.fixed;
      search_per_doc = lsh.per_document;
      break;
    }
    case SketchMethod::BottomK: {
      const double values = std::min(per_doc_distinct, static_cast<double>(spec_.sketch_size));
      per_doc += values * sizeof(SigValue) + sizeof(uint64_t);
      search_per_doc = fingerprint_join_bytes_per_document(values);
      break;
    }
    case SketchMethod::SimHash:
      per_doc += sizeof(uint64_t);
      search_per_doc = kSimHashSearchBytesPerDocument;
      // Each thread's SimHasher keeps its tables for distinct shingles: up to 20 MiB, reached
      // only by documents of 2^18 shingles (80 B each; a document has at most one per 2 bytes).
      fixed += static_cast<double>(threads_) *
               std::min(static_cast<double>(SimHasher::kept_scratch_bytes(spec_.weights)), 40.0 * m.input.data_bytes);
      break;
    case SketchMethod::Exact:
      break;  // the sets themselves, below (verify_per_document)
  }
  // The duplicate-id check sorts 2 x 16 bytes per document before the search starts.
  search_per_doc = std::max(search_per_doc, 32.0);
  // The program, and per thread the batches of about 1 MiB of records (raw, parsed, sketched)
  // queued and in flight with their shingle buffers (measured: BENCHMARKS.md).
  fixed += 10.0 * (1 << 20) + std::min(28.0 * (1 << 20) * threads_, 1.5 * m.input.data_bytes);
  // The reader's free buffers kept for reuse, where files are read with read(2) rather than mapped
  // (io::MemoryMap): on the kernel tree the peak was 13 MB higher read than mapped. Where they are
  // mapped, the parsers keep as much in all for long lines' word text instead (io::JsonlParser).
  fixed += std::min(static_cast<double>(io::kKeptReadBufferBytes), m.input.data_bytes);
  // The buffers of kept records written directly to the disk (io::AtomicFile::append_from).
  fixed += std::min(static_cast<double>(io::kDirectBufferBytes * io::kDirectBuffers), m.input.data_bytes);
  // Word text (io::JsonlParser): each thread keeps the copy of the longest text below 4 MiB it
  // has read, escapes blanked; records of that size are likely among many shorter ones.
  constexpr auto kWordTextLine = static_cast<double>(io::kWordTextMaxLine);
  if (inputs_->all_jsonl() && Shingler::reads_words_only(spec_.shingle) && n > 0 && m.input.data_bytes / n < kWordTextLine)
    fixed += std::min(kWordTextLine * threads_, m.input.data_bytes);
  // Texts of kSplitBytes or more are shingled in pieces, and each thread keeps its pieces' word
  // and shingle buffers from one such text to the next (up to about 6 x kPieceBytes, measured:
  // BENCHMARKS.md). Only inputs that can hold such a text pay it.
  if (shingler.splits_at_spaces() && m.input.data_bytes >= static_cast<double>(kSplitBytes))
    fixed += 6.0 * static_cast<double>(DocumentSketcher::kPieceBytes) * threads_;
  // A record being worked holds its line, its parsed text and its shingling's scratch: per byte of
  // the record, 1.35 with minhash and oph (a long text is shingled a piece at a time), 3.0 with
  // SimHash and 3.8 with bottom-k, measured on one record of 55 MB against 55 records of 1 MB
  // (BENCHMARKS.md), and counted here with a margin. For the average record, on as many threads
  // as work at once; the sample cannot see a few records much longer than the rest
  // (docs/robustness.md).
  if (n > 0) {
    const double per_byte_in_flight = spec_.method == SketchMethod::SimHash ? 3.2 : spec_.method == SketchMethod::BottomK ? 4.0 : 1.5;
    fixed += per_byte_in_flight * (m.input.data_bytes / n) * std::min(static_cast<double>(threads_), std::ceil(n));
  }
  m.per_document = per_doc;
  m.state = n * per_doc + fixed;
  m.search = n * search_per_doc;
  if (spec_.verify == VerifyMode::Exact) {
    // A sorted vector of 8-byte hashes per document (plus its header and heap overhead).
    m.verify_per_document = per_doc_distinct * sizeof(ShingleHash) + 40;
    m.verify_all = n * (m.verify_per_document + 5);
  }
  return m;
}


void Pipeline::Impl::each_pair(const std::function<void(std::span<const ScoredPair>)>& emit) {
  const ThreadPool::Use use(options_.pool);
  if (!expand_on_write_) {
    emit(pairs_);
    return;
  }
  // Pairs streamed from the join are verified as they are handed out: what the caller does with
  // them (write_pairs: the write stage) is not verification.
  const auto t = Clock::now();
  uint64_t n = 0;
  double in_emit = 0;
  expand_pairs([&](std::span<const ScoredPair> chunk) {
    const auto t_emit = Clock::now();
    emit(chunk);
    in_emit += seconds_since(t_emit);
    n += chunk.size();
  });
  stats_.pairs = n;
  stats_.times.verify += seconds_since(t) - in_emit;
}

void Pipeline::Impl::expand_pairs(const std::function<void(std::span<const ScoredPair>)>& emit) const {
  // pairs_ (sorted by pair) holds every pair verified directly, and the joins' connecting edges,
  // which they list again with the same scores: the merge keeps one of each.
  PairMerger merge(pairs_, emit);
  std::vector<const SetJoin*> joins;
  for (const auto& j : joins_) joins.push_back(j.get());
  SetJoin::pairs_of(joins, pair_filter(), [&](std::span<const ScoredPair> chunk) { merge.add(chunk); });
  merge.finish();
}

void Pipeline::Impl::write_pairs(io::AtomicFile& out, const std::function<void(std::span<const ScoredPair>)>& also) {
  const auto id_of = [this](DocId d) { return id(d); };
  const std::span<const uint64_t> distances = spec_.method == SketchMethod::SimHash ? std::span<const uint64_t>(simhashes_) : std::span<const uint64_t>();
  double spent = 0;
  each_pair([&](std::span<const ScoredPair> chunk) {
    const auto t = Clock::now();
    io::write_pairs(out, chunk, id_of, distances);
    if (also) also(chunk);
    spent += seconds_since(t);
  });
  stats_.times.write += spent;
}

std::vector<io::AtomicFile*> Pipeline::Impl::every_source_to(io::AtomicFile& out) const {
  return std::vector<io::AtomicFile*>(inputs_->sources().size(), &out);
}

void Pipeline::Impl::write_kept(io::AtomicFile& out) { write_kept(every_source_to(out)); }

void Pipeline::Impl::write_kept(std::span<io::AtomicFile* const> outs) {
  const ThreadPool::Use use(options_.pool);
  const auto t = Clock::now();
  if (outs.size() != inputs_->sources().size()) throw UsageError("write_kept: one output per source is needed");
  write_kept_records(outs, nullptr);
  stats_.times.write += seconds_since(t);
}

void Pipeline::Impl::write_kept_records(std::span<io::AtomicFile* const> outs, Decisions* decisions) {
  check_inputs_unchanged();
  const auto kept = [&](DocId d) { return decisions ? decisions->kept(d) : clustering_.kept(d); };
  // Progress from this thread when it is the run's, or counted for the run's thread to report.
  const auto progress = [&](uint64_t bytes, uint64_t docs) {
    if (decisions) {
      writer_bytes_.store(bytes, std::memory_order_relaxed);
      writer_docs_.store(docs, std::memory_order_relaxed);
    } else if (options_.progress) {
      options_.progress({"write", bytes, inputs_->total_bytes(), docs});
    }
  };
  if (!pos_.empty()) {
    // JSONL: the kept lines are copied by position, runs of consecutive kept lines at once,
    // without parsing them again (a plain file is copied in the kernel). Following the decisions,
    // what is known is appended before waiting for more, and at least every 32 MiB.
    constexpr uint64_t kAppendBytes = uint64_t{32} << 20;
    const auto& sources = inputs_->sources();
    std::vector<io::ByteRange> ranges;
    uint64_t bytes_done = 0, pending = 0;
    size_t d = 0;
    const size_t n = pos_.size();
    for (uint32_t s = 0; s < sources.size(); ++s) {
      std::optional<io::RangeAppender> appender;
      const auto append = [&] {
        if (ranges.empty()) return;
        if (!appender) appender.emplace(sources[s].path, sources[s].display, inputs_->read_from_copy(s));
        appender->append(ranges, *outs[s]);
        ranges.clear();
        pending = 0;
      };
      for (; d < n && pos_[d].source == s; ++d) {
        const DocId doc = static_cast<DocId>(d);
        if (decisions && !decisions->decided(doc)) {
          append();
          progress(bytes_done + pos_[d].offset, d);
        }
        if (!kept(doc)) continue;
        const uint64_t begin = pos_[d].offset, len = uint64_t{pos_[d].length} + 1;  // with its newline
        if (!ranges.empty() && ranges.back().offset + ranges.back().length == begin)
          ranges.back().length += len;
        else
          ranges.push_back({begin, len});
        pending += len;
        if (decisions && pending >= kAppendBytes) {
          append();
          progress(bytes_done + begin + len, d + 1);
        }
      }
      append();
      // The writes still running count as writing (and their errors are this writer's); an
      // output left for another holds no buffers.
      if (s + 1 == sources.size() || outs[s + 1] != outs[s]) outs[s]->flush_appends();
      bytes_done += input_stamps_[s].first;
      progress(bytes_done, d);
    }
    return;
  }
  io::RecordReader reader(*inputs_, options_.reader);
  io::Record rec;
  uint64_t ordinal = 0;
  const uint64_t n = lengths_.size();
  while (reader.next(rec)) {
    const DocId doc = static_cast<DocId>(ordinal++);
    check_same_record(rec, doc);
    if (!kept(doc)) continue;
    io::AtomicFile& out = *outs[rec.source];
    out.write(rec.raw);
    out.put('\n');
    if ((ordinal & 0x3FFF) == 0) progress(reader.bytes_read(), ordinal);
  }
  if (ordinal != n)
    throw IoError("the input changed while neardup was running (" + std::to_string(ordinal) + " records instead of " +
                  std::to_string(n) + "); do not modify inputs during a run");
}

// Dedup with the kept records written while verification still runs (verify_in_groups starts
// the writer once the documents in no bucket are known to be kept). The writes and their disk
// traffic then overlap the verification instead of following it. Methods and inputs that are
// not verified in groups write after the run, as write_kept.
void Pipeline::Impl::run_dedup(std::span<io::AtomicFile* const> outs) {
  if (outs.size() != inputs_->sources().size()) throw UsageError("run_dedup: one output per source is needed");
  kept_outs_.assign(outs.begin(), outs.end());
  try {
    run(Mode::Dedup);
  } catch (...) {
    stop_writer();
    kept_outs_.clear();
    throw;
  }
  if (!writer_.joinable()) {
    kept_outs_.clear();
    return write_kept(outs);
  }
  const auto t = Clock::now();
  {
    std::unique_lock<std::mutex> lock(writer_m_);
    while (!writer_cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return writer_done_; }))
      if (options_.progress)
        options_.progress({"write", writer_bytes_.load(std::memory_order_relaxed), inputs_->total_bytes(),
                           writer_docs_.load(std::memory_order_relaxed)});
  }
  stats_.times.write_during_run = std::chrono::duration<double>(t - writer_start_).count();
  join_writer();
  stats_.times.write = seconds_since(t);
}

void Pipeline::Impl::start_writer() {
  writer_done_ = false;
  writer_error_ = nullptr;
  writer_start_ = Clock::now();
  writer_ = std::thread([this] {
    try {
      write_kept_records(kept_outs_, decisions_.get());
    } catch (const Decisions::Stopped&) {
      // the run stopped: its own error is the one reported
    } catch (...) {
      writer_error_ = std::current_exception();
    }
    {
      const std::lock_guard<std::mutex> lock(writer_m_);
      writer_done_ = true;
    }
    writer_cv_.notify_all();
  });
}

void Pipeline::Impl::join_writer() {
  writer_.join();
  decisions_.reset();
  kept_outs_.clear();
  if (writer_error_) std::rethrow_exception(std::exchange(writer_error_, nullptr));
}

void Pipeline::Impl::throw_if_the_writer_failed() {
  {
    const std::lock_guard<std::mutex> lock(writer_m_);
    if (!writer_done_ || !writer_error_) return;
  }
  join_writer();
}

void Pipeline::Impl::stop_writer() noexcept {
  if (!writer_.joinable()) return;
  decisions_->stop();
  writer_.join();
  decisions_.reset();
  writer_error_ = nullptr;
}

void Pipeline::Impl::write_removed(io::AtomicFile& out) const {
  io::write_removed(out, clustering_, removed_similarity_, [this](DocId d) { return id(d); });
}

void Pipeline::Impl::write_clusters(io::AtomicFile& out) const {
  io::write_clusters(out, clustering_, [this](DocId d) { return id(d); });
}

// ---- The public face: each call forwards to the run's state ----

Pipeline::Pipeline(const std::vector<std::string>& inputs, RunOptions options)
    : impl_(std::make_unique<Impl>(inputs, std::move(options))) {}
Pipeline::Pipeline(std::vector<io::Document> documents, RunOptions options)
    : impl_(std::make_unique<Impl>(std::move(documents), std::move(options))) {}
Pipeline::~Pipeline() = default;
void Pipeline::run(Mode mode) { impl_->run(mode); }
MemoryEstimate Pipeline::estimate_memory(uint64_t sample_bytes) const { return impl_->estimate_memory(sample_bytes); }
const PipelineSpec& Pipeline::spec() const noexcept { return impl_->spec_; }
const RunStats& Pipeline::stats() const noexcept { return impl_->stats_; }
size_t Pipeline::size() const noexcept { return impl_->lengths_.size(); }
std::string_view Pipeline::id(DocId doc) const noexcept { return impl_->id(doc); }
const std::vector<ScoredPair>& Pipeline::pairs() const { return impl_->pairs(); }
void Pipeline::each_pair(const std::function<void(std::span<const ScoredPair>)>& emit) { impl_->each_pair(emit); }
const Clustering& Pipeline::clustering() const noexcept { return impl_->clustering_; }
std::span<const double> Pipeline::removed_similarity() const noexcept { return impl_->removed_similarity_; }
double Pipeline::similarity(DocId a, DocId b) const {
  if (impl_->sets_released_ && impl_->sets_ && !(impl_->sets_->has(a) && impl_->sets_->has(b)))
    throw UsageError("the shingle sets of this run were let go once verified; set RunOptions::keep_sets to ask for similarities after the run");
  return impl_->similarity(a, b);
}
std::span<const SigValue> Pipeline::signatures() const noexcept { return impl_->signatures(); }
const Fingerprints& Pipeline::fingerprints() const noexcept { return impl_->fps_; }
std::span<const uint64_t> Pipeline::simhashes() const noexcept { return impl_->simhashes_; }
const io::InputSet& Pipeline::inputs() const noexcept { return *impl_->inputs_; }
std::vector<std::string> Pipeline::texts(std::span<const DocId> docs) const { return impl_->texts(docs); }
bool Pipeline::share_band(DocId a, DocId b) const {
  if (!uses_signatures(impl_->spec_.method) || a >= size() || b >= size()) return false;
  return impl_->share_band(a, b, static_cast<size_t>(impl_->spec_.num_perm));
}
int64_t Pipeline::source_of(DocId doc) const noexcept {
  return doc < impl_->pos_.size() ? static_cast<int64_t>(impl_->pos_[doc].source) : -1;
}
uint64_t Pipeline::state_bytes() const noexcept { return impl_->state_bytes(); }
void Pipeline::write_pairs(io::AtomicFile& out, const std::function<void(std::span<const ScoredPair>)>& also) { impl_->write_pairs(out, also); }
void Pipeline::write_kept(io::AtomicFile& out) { impl_->write_kept(out); }
void Pipeline::write_kept(std::span<io::AtomicFile* const> outs) { impl_->write_kept(outs); }
void Pipeline::run_dedup(io::AtomicFile& out) { impl_->run_dedup(impl_->every_source_to(out)); }
void Pipeline::run_dedup(std::span<io::AtomicFile* const> outs) { impl_->run_dedup(outs); }
void Pipeline::write_removed(io::AtomicFile& out) const { impl_->write_removed(out); }
void Pipeline::write_clusters(io::AtomicFile& out) const { impl_->write_clusters(out); }

}  // namespace neardup
