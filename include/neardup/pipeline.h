// The end-to-end pipeline: inputs -> sketches -> LSH candidates -> verification -> clusters ->
// outputs. Three streaming passes over the inputs at most:
//   1. read every record, shingle and sketch it (parallel, in batches); keep per document only
//      its id, its text length and its signature;
//   2. (exact verification) read again and compute the shingle sets of the documents that
//      appear in candidate pairs, then score the pairs;
//   3. (dedup) read again and write the kept records exactly as they were.
// Every result is independent of the number of threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/bottomk.h"
#include "neardup/cluster.h"
#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/lsh_index.h"
#include "neardup/setjoin.h"
#include "neardup/spec.h"
#include "neardup/types.h"

namespace neardup {
namespace internal {
template <class T>
class GrowArray;
}

namespace io {
class AtomicFile;
}
class ThreadPool;

struct Progress {
  const char* stage = "";  ///< "sketch", "verify", "write"
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  uint64_t documents = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

/// Two records with the same id: an error (FormatError naming both), or kept as two documents.
enum class DuplicateIds { Error, Keep };

struct RunOptions {
  PipelineSpec spec;
  io::ReaderOptions reader;
  int threads = 0;  ///< 0: all hardware threads
  KeepPolicy keep = KeepPolicy::First;
  /// Keep by a JSONL field (sets keep to KeepPolicy::Field): numbers or strings, the largest
  /// first (keep_descending) or the smallest; records without it last; ties by input order.
  std::string keep_by;
  bool keep_descending = true;
  ClusterMode cluster = ClusterMode::Components;
  DuplicateIds duplicate_ids = DuplicateIds::Error;
  /// Pairs mode with bottomk: report the `top` most similar pairs instead of those above the
  /// threshold (0: off).
  size_t top = 0;
  /// Pairs mode with minhash or oph: do not hold the pairs within clusters in memory (a cluster
  /// of m documents has up to m(m-1)/2, about 50 bytes each); each_pair() and write_pairs()
  /// find, verify and hand them over a chunk at a time, and set stats().pairs. pairs() then
  /// refuses (UsageError): set this to false to hold every pair. The output is the same.
  bool stream_pairs = true;
  /// The pool the run's parallel work takes its threads from (thread_pool.h); null: the
  /// calling thread's current pool.
  ThreadPool* pool = nullptr;
  ProgressFn progress;  ///< called from the reading thread, after each batch
};

/// Seconds per stage (lsh is the all-pairs join with bottomk, the table search with simhash).
/// pass1 is the wall time of the first pass (read, parse, shingle and sketch overlapped); parse,
/// shingle and sketch are its CPU time, summed over worker threads; the others are wall time.
struct StageTimes {
  double pass1 = 0, parse = 0, shingle = 0, sketch = 0, lsh = 0, verify = 0, cluster = 0, write = 0;
};

struct RunStats {
  uint64_t documents = 0;
  uint64_t empty = 0;          ///< documents without a single word (never paired)
  uint64_t skipped = 0;        ///< bad records skipped under --on-error skip
  uint64_t invalid_utf8 = 0;   ///< JSONL lines with invalid UTF-8 (parsed after replacement)
  uint64_t duplicate_ids = 0;  ///< documents whose id an earlier one has (DuplicateIds::Keep)
  uint64_t text_bytes = 0;
  uint64_t shingles = 0;       ///< shingles over all documents, repeats within a document included
  uint64_t candidates = 0;     ///< candidate pairs: LSH star edges (minhash), join results (bottomk) or pairs within the distance (simhash)
  uint64_t verified = 0;       ///< candidate pairs with similarity >= threshold
  uint64_t pairs = 0;          ///< pairs reported (pairs mode)
  uint64_t clusters = 0;
  uint64_t removed = 0;
  /// Removed documents less similar than the threshold to their kept one (components chain;
  /// always 0 with ClusterMode::Leader).
  uint64_t removed_below_threshold = 0;
  uint64_t verify_docs = 0;    ///< documents whose shingle sets were recomputed for exact verification
  uint64_t largest_bucket = 0;
  std::vector<std::string> skip_messages;  ///< the first few
  std::vector<std::pair<std::string, uint64_t>> skip_kinds;  ///< skipped records by kind, in order of first sight
  uint64_t missing_ids = 0;   ///< JSONL records without the id field (named FILE:LINE)
  /// Text bytes in scripts written without spaces, in documents with very few words for their
  /// size (default word shingles; see --words icu and --chars).
  uint64_t unspaced_bytes = 0;
  uint64_t binary_files = 0;  ///< binary files found in directories, left out
  io::WalkCounts left_out;    ///< hidden, excluded and special files left out of directories
  StageTimes times;
  double seconds = 0;
};

/// The expected memory of a run, estimated before it starts from a sample of its inputs
/// (Pipeline::estimate_memory). Bytes; approximate: the sizes of the records are extrapolated.
struct MemoryEstimate {
  io::InputSample input;
  double per_document = 0;  ///< state kept per document for the whole run, its id included
  double state = 0;         ///< that over all documents, plus the reading buffers
  double search = 0;        ///< more, for a while, to find candidates (LSH, bottom-k join, SimHash tables)
  /// Exact verification: bytes per document that is in a candidate pair (its shingle set), and
  /// that over every document, the most it can take (near-duplicates are usually a fraction).
  double verify_per_document = 0;
  double verify_all = 0;
  /// The expected peak before verification.
  double peak() const noexcept { return state + search; }
};


class Pipeline {
 public:
  enum class Mode {
    Dedup,  ///< star edges are verified and clustered
    Pairs,  ///< additionally, every pair of a cluster that shares an LSH bucket is scored
  };

  /// Expands the inputs (stdin is spooled to a temporary file). Throws on bad options or paths.
  Pipeline(const std::vector<std::string>& inputs, RunOptions options);
  /// Documents held in memory (ids and texts from the caller), in this order: every pass reads
  /// them from memory. Kept "records" are written as their ids.
  Pipeline(std::vector<io::Document> documents, RunOptions options);
  ~Pipeline();

  /// Runs passes 1 and 2 and clusters. Throws FormatError / IoError on bad input.
  void run(Mode mode);
  /// Estimates the memory run() will take from the first `sample_bytes` of the inputs.
  MemoryEstimate estimate_memory(uint64_t sample_bytes = uint64_t{4} << 20) const;

  const PipelineSpec& spec() const noexcept { return spec_; }
  const RunStats& stats() const noexcept { return stats_; }
  size_t size() const noexcept { return lengths_.size(); }
  std::string_view id(DocId doc) const noexcept;
  /// Pairs mode: every reported pair; Dedup mode: the verified edges that connect the clusters.
  /// Sorted by (a, b). Throws UsageError in pairs mode with RunOptions::stream_pairs and minhash
  /// or oph, where the pairs are not held: use each_pair().
  const std::vector<ScoredPair>& pairs() const;
  /// Pairs mode: every reported pair, in (a, b) order, a chunk at a time (found and verified
  /// now with RunOptions::stream_pairs, so memory does not grow with the number of pairs).
  /// Sets stats().pairs.
  void each_pair(const std::function<void(std::span<const ScoredPair>)>& emit);
  const Clustering& clustering() const noexcept { return clustering_; }
  /// The similarity of two documents by the configured verification (exact needs both sets).
  double similarity(DocId a, DocId b) const;
  /// The signatures, row-major n x num_perm (minhash, oph), when the run keeps them: with
  /// estimated verification, or when they take less memory than the band keys. Otherwise empty:
  /// only each document's band keys are kept after the first pass.
  std::span<const SigValue> signatures() const noexcept;
  /// The fingerprints (bottomk).
  const Fingerprints& fingerprints() const noexcept { return fps_; }
  /// The SimHashes (simhash; 0 for documents without a shingle).
  std::span<const uint64_t> simhashes() const noexcept { return simhashes_; }
  const io::InputSet& inputs() const noexcept { return *inputs_; }
  /// Bytes of the per-document state held after the first pass (ids, lengths, positions,
  /// sketches, keep-by keys), measured from the containers' sizes: what
  /// MemoryEstimate::per_document predicts per document.
  uint64_t state_bytes() const noexcept;

  /// `id1 TAB id2 TAB similarity` per pair, and TAB distance with simhash (io/tsv.h), from
  /// each_pair().
  void write_pairs(io::AtomicFile& out);
  /// Pass 3: the kept records as they were (JSONL lines, or paths for text-file inputs).
  void write_kept(io::AtomicFile& out);
  /// The same, each source's kept records to its own file: `out[s]` for source s (JSONL inputs;
  /// entries may repeat).
  void write_kept(std::span<io::AtomicFile* const> out);
  /// `removed_id TAB kept_id TAB similarity` per removed document, in input order.
  void write_removed(io::AtomicFile& out) const;
  /// `cluster TAB id TAB kept|removed` for each document of a cluster of two or more.
  void write_clusters(io::AtomicFile& out) const;

 private:
  void init();
  void sketch_pass();
  void load_sets_pass(const std::vector<uint8_t>& needed);
  /// The exact join over the documents with joined[d] != 0 (their sets loaded).
  void build_join(const std::vector<uint8_t>& joined);
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
  void check_duplicate_ids();
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
  std::unique_ptr<SetJoin> join_;  // exact verification with minhash or oph, and the exact method
  Mode mode_ = Mode::Dedup;
  std::vector<ScoredPair> direct_pairs_;
  std::vector<double> removed_similarity_;  // of each removed document to its kept one, in input order  // pairs mode with a join: the pairs verified one by one
  std::vector<ScoredPair> pairs_;
  bool expand_on_write_ = false;  // pairs mode with stream_pairs: write_pairs expands the clusters
  Clustering clustering_;
};

}  // namespace neardup
