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
#include <span>
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
namespace io {
class AtomicFile;
}
class ThreadPool;


/// Two records with the same id: an error (FormatError naming both), or kept as two documents.
enum class DuplicateIds { Error, Keep };

/// Sets `o`'s keep policy from its one spelling, as every driver takes it: "first", "longest", or
/// a JSONL field, "FIELD" or "FIELD:desc" (the largest value kept) or "FIELD:asc" (the
/// smallest). UsageError (naming the `keep` option) for an empty field or another order.
struct RunOptions;
void set_keep(RunOptions& o, std::string_view spelling);
/// The field form alone ("FIELD[:asc|:desc]", the CLI's --keep-by): a field named first is a field.
void set_keep_by(RunOptions& o, std::string_view spelling);
/// Checks a keep-by field against the inputs (JSONL ones only) and points the reader at it: what
/// a Pipeline does before it reads, and neardup-mpi too. UsageError naming the problem.
void apply_keep(RunOptions& o, const io::InputSet& inputs);
/// "components" or "leader"; UsageError (naming the `cluster` option) for anything else.
ClusterMode cluster_mode(std::string_view spelling);

/// What a pair's similarity is: the Jaccard similarity of the two shingle sets, or the
/// containment of the smaller in the larger, |A ∩ B| / min(|A|, |B|) (pairs with method exact
/// only: the exact join of containment.h; sketches estimate containment through Jaccard, which
/// is tiny when the sizes differ).
enum class Measure { Jaccard, Containment };
/// "jaccard" or "containment"; UsageError (naming the `measure` option) for anything else.
Measure measure_of(std::string_view spelling);

/// What only the speed and the memory of a run depend on: any of these settings gives the same
/// outputs.
struct RunTuning {
  int threads = 0;  ///< 0: all hardware threads
  /// Pairs mode with minhash or oph: do not hold the pairs within clusters in memory (a cluster
  /// of m documents has up to m(m-1)/2, about 50 bytes each); each_pair() and write_pairs()
  /// find, verify and hand them over a chunk at a time, and set stats().pairs. pairs() then
  /// refuses (UsageError): set this to false to hold every pair.
  bool stream_pairs = true;
  /// Pairs mode: also cluster the documents (clustering(), removed_similarity(), the clusters and
  /// removals of stats()). A caller that takes only the pairs sets false: the run then skips
  /// what only clusters need, most of all connecting each large bucket's documents before its
  /// pairs are listed (on dense licence boilerplate 8% of the run, BENCHMARKS.md), and
  /// clustering() and removed_similarity() refuse (UsageError).
  bool cluster_pairs = true;
  /// Exact verification with minhash or oph: the first pass keeps, up to this many bytes, the
  /// shingle set of each document that shares a band key with one sketched before it (so it
  /// is in an LSH bucket and will be verified); verification reads again only the documents
  /// whose set was not kept. 0: every needed document is read again. A run over uncompressed
  /// JSONL inputs keeps none: it verifies group by group, reading each group's sets then (see
  /// keep_sets).
  uint64_t first_pass_set_bytes = uint64_t{1} << 30;
  /// Keep the verified documents' shingle sets after the run, for similarity() (the HTML report
  /// asks). Otherwise a run over uncompressed JSONL inputs lets each group's sets go once its
  /// clusters are decided, and the next group's take their memory; similarity() then refuses
  /// (UsageError). A dedup whose band keys spilled (spill_band_keys) also keeps the index of its
  /// buckets by document for share_band(), which otherwise it builds group by group (share_band()
  /// then refuses).
  bool keep_sets = false;
  /// A run over uncompressed JSONL inputs verifies its candidates in groups of whole candidate
  /// components, in the order of their first documents, each group's sets read then and let go
  /// once its clusters are decided: consecutive components are one group while their text, and
  /// 256 bytes per document, stay under this many bytes (a larger component is a group of its
  /// own). Larger groups hold more sets at once; smaller ones read the inputs more often, each
  /// group its records wherever they lie.
  uint64_t verify_group_bytes = uint64_t{32} << 20;
  /// After the first pass, give the heap's free pages back to the system (glibc's malloc_trim):
  /// a pass's large records leave free blocks behind, and where threads allocate from heaps of
  /// their own (glibc's arenas) those need not be the ones verification allocates from. A
  /// program whose threads share one heap (the CLI's batch runs) sets false: verification reuses
  /// that memory, and giving it back only has it faulted in again.
  bool release_memory_after_first_pass = true;
  /// JSONL inputs compressed with gzip, zstd, xz or bzip2: the first pass keeps their
  /// decompressed bytes in a temporary file without a name (io::ScratchCopy) in temp_dir, and
  /// later passes (verification, dedup's copy of the kept records) read them from there by
  /// position instead of decompressing the inputs again. Only on ext4, and only while at least
  /// temp_keep_free bytes stay free there (0: the larger of 1 GiB and 5% of the file system);
  /// otherwise, or with false here, the inputs are decompressed again.
  bool decompressed_copies = true;
  /// Dedup with minhash or oph and exact verification: a document whose text is a copy of an
  /// earlier one's (by their XXH3-128 hashes) stays out of the LSH buckets and is verified
  /// through its original, in a bucket of the original and its copies (shared set, J = 1).
  bool collapse_copies = true;
  /// Minhash and oph with exact verification: the band keys (8 bytes per band and document,
  /// most of the state a run keeps per document) are written to temporary files in temp_dir
  /// during the first pass instead of kept in memory, and the buckets found from there (each
  /// band's keys read twice: lsh_buckets_from_reader), the files let go, and share_band
  /// answered from the buckets (indexed by document). Needs 8 bytes per band and document free
  /// in temp_dir.
  bool spill_band_keys = false;
  /// Minhash and oph with exact verification, the band keys in memory: a run of at most this
  /// many documents of short texts (as a sample of its inputs expects: estimate_memory; at most
  /// 128 distinct shingles on average, where the keys are much of what a document keeps) keeps
  /// the top 4 bytes of each key instead of 8. Two documents share such a key by chance for
  /// about one pair in 2^32 per band, 2,400 pairs among a million documents in 21 bands, which
  /// exact verification rejects; at 4 million, 40,000 pairs. 0: always 8 bytes.
  uint64_t narrow_band_keys_up_to = uint64_t{1} << 22;
  /// The document table (ids, text lengths, record positions: about 30 bytes per document and
  /// the id) is written to temporary files in temp_dir during the first pass and mapped from
  /// there, its pages let go after each pass over them. Any method.
  /// A dedup that spills its table holds no verified pair (pairs() and each_pair() refuse).
  bool spill_documents = false;
  /// The most memory the run should take (bytes; 0: no limit). Before the first pass, a run
  /// whose expected peak (estimate_memory) is above it spills its document table
  /// (spill_documents) and, with minhash or oph and exact verification, its band keys
  /// (spill_band_keys), after checking that temp_dir has the room (IoError if not). The rest of
  /// a run's state stays in memory (MemoryEstimate::spill_saves).
  uint64_t memory_limit = 0;
  std::string temp_dir;  ///< empty: $TMPDIR, or /tmp
  uint64_t temp_keep_free = 0;
  /// The pool the run's parallel work takes its threads from (thread_pool.h); null: the
  /// calling thread's current pool.
  ThreadPool* pool = nullptr;
  ProgressFn progress;  ///< called from the reading thread, after each batch
};

/// What a run's outputs depend on, and how it runs (`tuning`, which leaves them the same).
struct RunOptions {
  PipelineSpec spec;
  io::ReaderOptions reader;
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
  Measure measure = Measure::Jaccard;
  RunTuning tuning;
};

/// Seconds per stage (lsh is the all-pairs join with bottomk, the table search with simhash).
/// pass1 is the wall time of the first pass (read, parse, shingle and sketch overlapped); parse,
/// shingle and sketch are its CPU time, summed over worker threads; the others are wall time.
struct StageTimes {
  double pass1 = 0, parse = 0, shingle = 0, sketch = 0, lsh = 0, verify = 0, cluster = 0;
  /// The write of the outputs after the run; with Pipeline::run_dedup, the kept records' write
  /// that went on after the run, and how long it had run before (during verification); with
  /// write_pairs of pairs listed as they are written, the time the listing waited for the
  /// writer and its tail, and the writer's time while the pairs were listed.
  double write = 0, write_during_run = 0;
};

struct RunStats {
  uint64_t documents = 0;
  uint64_t empty = 0;          ///< documents without a single word (never paired)
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
  uint64_t verify_kept = 0;    ///< documents verified with the set the first pass made (not read again)
  uint64_t verify_groups = 0;  ///< groups of candidate components verified one after another (RunTuning::verify_group_bytes); 0: all at once
  uint64_t set_bytes = 0;      ///< the most bytes of shingle sets held at once for exact verification (8 per distinct shingle, a shared copy once)
  uint64_t verify_shared = 0;  ///< documents whose set was identical to another's and shares its copy (ShingleSets)
  /// Of verify_docs, those whose text another document of the same reading had: not shingled,
  /// its set shared. Copies are told by their texts as parsed (shingle_set_records): the same
  /// text spelled with other JSON escapes may not be found, but the count is the same in every run.
  uint64_t verify_copies = 0;
  /// Dedup (RunTuning::collapse_copies): documents whose text an earlier document had, left out
  /// of the LSH buckets and verified through that one.
  uint64_t text_copies = 0;
  uint64_t largest_bucket = 0;
  /// Decompressed bytes of compressed inputs kept by the first pass and read again from there
  /// (RunTuning::decompressed_copies), and why none or not all were kept (empty: all were, or
  /// there were no compressed inputs).
  uint64_t copied_bytes = 0;
  uint64_t spilled_bytes = 0;  ///< the document table and band keys written to disk (RunTuning::spill_documents, spill_band_keys)
  std::string copy_note;
  /// What the reading found: bad records skipped (OnError::Skip) by kind and the first
  /// messages, lines with invalid UTF-8, records without an id, binary files left out.
  io::ReaderStats reader;
  /// Text bytes in scripts written without spaces, in documents with very few words for their
  /// size (default word shingles; see --words icu and --chars).
  uint64_t unspaced_bytes = 0;
  io::WalkCounts left_out;    ///< hidden, excluded and special files left out of directories
  StageTimes times;
  /// The run's time: run() or run_dedup(), and the verification of pairs listed as they are
  /// taken (each_pair, write_pairs of a pairs run whose joins list them); not their writing.
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
  double shingles_per_document = 0;  ///< distinct shingles of the average document sampled
  double verify_all = 0;
  /// The expected peak before verification.
  double peak() const noexcept { return state + search; }
  /// The disk a spilled run takes (RunTuning::spill_documents and spill_band_keys), and the
  /// memory that saves: the document table, and with minhash and oph and exact verification
  /// the band keys and the search's arrays of every document (it then holds the entries of
  /// documents whose keys may repeat; spill_keys).
  double spill_disk = 0;
  double spill_saves = 0;
  bool spill_keys = false;
  double peak_spilled() const noexcept { return peak() - spill_saves; }
  /// Whether a run under this memory limit (0: none) spills.
  bool spills_under(uint64_t limit) const noexcept { return limit > 0 && spill_disk > 0 && peak() > static_cast<double>(limit); }
};


/// The memory available now (MemAvailable of /proc/meminfo), in bytes; 0 if unknown.
uint64_t available_memory() noexcept;
/// The memory limit the drivers default to (RunTuning::memory_limit): 80% of available_memory(),
/// so that a run that would not fit spills rather than fails; 0 (none) if that is unknown.
uint64_t default_memory_limit() noexcept;

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

  const PipelineSpec& spec() const noexcept;
  const RunStats& stats() const noexcept;
  size_t size() const noexcept;
  std::string_view id(DocId doc) const noexcept;
  /// Pairs mode: every reported pair; Dedup mode: the verified edges that connect the clusters.
  /// Sorted by (a, b). Throws UsageError in pairs mode with RunTuning::stream_pairs and minhash
  /// or oph, where the pairs are not held: use each_pair(); and in a dedup that spilled its
  /// state (RunTuning::spill_documents), which holds none.
  const std::vector<ScoredPair>& pairs() const;
  /// Pairs mode: every reported pair, in (a, b) order, a chunk at a time (found and verified
  /// now with RunTuning::stream_pairs, so memory does not grow with the number of pairs).
  /// Sets stats().pairs.
  void each_pair(const std::function<void(std::span<const ScoredPair>)>& emit);
  /// Throws UsageError after a pairs run without RunTuning::cluster_pairs, which does not cluster.
  const Clustering& clustering() const;
  /// The similarity of each removed document to its kept one, in input order (what
  /// write_removed prints). Throws as clustering() does.
  std::span<const double> removed_similarity() const;
  /// The similarity of two documents by the configured verification (exact needs both sets:
  /// after a dedup, RunTuning::keep_sets).
  double similarity(DocId a, DocId b) const;
  /// The signatures, row-major n x num_perm (minhash, oph), when the run keeps them: with
  /// estimated verification, or when they take less memory than the band keys. Otherwise empty:
  /// only each document's band keys are kept after the first pass.
  std::span<const SigValue> signatures() const noexcept;
  /// The fingerprints (bottomk).
  const Fingerprints& fingerprints() const noexcept;
  /// The SimHashes (simhash; 0 for documents without a shingle).
  std::span<const uint64_t> simhashes() const noexcept;
  const io::InputSet& inputs() const noexcept;
  /// The texts of `docs` (ascending), read again from the inputs as the run read them (at most
  /// max_doc_bytes each). For reports and explanations: a few documents, not the corpus.
  std::vector<std::string> texts(std::span<const DocId> docs) const;
  /// Whether two documents agree on all rows of some LSH band (minhash, oph; false otherwise),
  /// by their band keys: with narrow keys (RunTuning::narrow_band_keys_up_to) also, by chance,
  /// for about one pair in 2^32 per band. UsageError after a dedup whose band keys spilled
  /// without RunTuning::keep_sets.
  bool share_band(DocId a, DocId b) const;
  /// The source (inputs().sources()) of a JSONL document; -1 for other inputs.
  int64_t source_of(DocId doc) const noexcept;
  /// Bytes of the per-document state held after the first pass (ids, lengths, positions,
  /// sketches, keep-by keys), measured from the containers' sizes: what
  /// MemoryEstimate::per_document predicts per document.
  uint64_t state_bytes() const noexcept;

  /// `id1 TAB id2 TAB similarity` per pair, and TAB distance with simhash (io/tsv.h), from
  /// each_pair(). Where the run's joins list the pairs as they are taken (stream_pairs), the
  /// lines are written, and also(chunk) called, in order on a thread of the call's own while the
  /// next pairs are found; the call returns once all are written.
  void write_pairs(io::AtomicFile& out, const std::function<void(std::span<const ScoredPair>)>& also = {});
  /// Pass 3: the kept records as they were (JSONL lines, or paths for text-file inputs).
  void write_kept(io::AtomicFile& out);
  /// The same, each source's kept records to its own file: `out[s]` for source s (JSONL inputs;
  /// entries may repeat).
  void write_kept(std::span<io::AtomicFile* const> out);
  /// run(Mode::Dedup) and write_kept(out) in one, the same results: with LSH and exact
  /// verification of JSONL inputs, the kept records are written while verification still runs,
  /// each as soon as its cluster is decided (candidates are verified a group of components at a
  /// time, in input order), so the writes overlap the work instead of following it. Otherwise
  /// the write follows the run. Throws as both; on an error the outputs are left uncommitted.
  void run_dedup(io::AtomicFile& out);
  /// The same with one output per source, as write_kept.
  void run_dedup(std::span<io::AtomicFile* const> out);
  /// `removed_id TAB kept_id TAB similarity` per removed document, in input order.
  void write_removed(io::AtomicFile& out) const;
  /// `cluster TAB id TAB kept|removed` for each document of a cluster of two or more.
  void write_clusters(io::AtomicFile& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup
