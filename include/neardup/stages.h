// The engine's stages as pieces a host can drive on its own data: sketch documents, find
// candidate pairs, verify them, cluster. Pipeline composes the same pieces over files, in
// streaming passes; a Python caller, an MPI rank or a server composes them over what it holds.
//
//   sketch_documents(texts, spec)      -> Sketches (one row per document)
//   find_candidates(sketches, sets)    -> candidate pairs (LSH star edges for minhash and oph,
//                                         the fingerprint join for bottomk, Manku's tables for
//                                         simhash, the exact set join for exact)
//   shingle_sets(texts, spec, needed)  -> the exact sets of the documents in candidate pairs
//   verify_pairs(candidates, scorer_for(sketches, sets), threshold)   (verify.h)
//   cluster_documents(n, verified, policy)                             (cluster.h)
//
// Sketches can be written to a file and read back (write_sketches, read_sketches) so that
// sketches made in one process are joined in another; docs/format.md ("Sketch file") gives the layout.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/bottomk.h"
#include "neardup/io/reader.h"
#include "neardup/shingle.h"
#include "neardup/simhash.h"
#include "neardup/spec.h"
#include "neardup/types.h"
#include "neardup/verify.h"

namespace neardup {

/// The sketches of documents 0..size()-1 under one resolved spec.
struct Sketches {
  PipelineSpec spec;
  std::vector<SigValue> signatures;  ///< minhash, oph: size() x num_perm, row-major
  Fingerprints fingerprints;         ///< bottomk
  std::vector<uint64_t> simhashes;   ///< simhash (0 for an empty document)
  std::vector<uint8_t> empty;        ///< 1: the document has no shingle (never paired)
  uint64_t shingles = 0;             ///< shingles over all documents, repeats included

  size_t size() const noexcept { return empty.size(); }
  /// The signature of `doc` (minhash, oph).
  std::span<const SigValue> signature(DocId doc) const noexcept;
  /// Appends `other` (same spec): its documents follow these.
  void append(const Sketches& other);
};

/// Turns one text at a time into its shingles and sketch, under a resolved spec. It owns its
/// scratch memory: one sketcher per thread. What it keeps between documents is bounded
/// (kScratchKeepBytes per buffer): a 60 MB document does not pin 60 MB once it is done.
class DocumentSketcher {
 public:
  explicit DocumentSketcher(const PipelineSpec& spec);
  ~DocumentSketcher();
  DocumentSketcher(DocumentSketcher&&) noexcept;
  DocumentSketcher& operator=(DocumentSketcher&&) noexcept;

  /// Shingles `text`; the sketch functions below then work on these shingles.
  std::span<const ShingleHash> shingle(std::string_view text);
  /// minhash, oph: the signature (num_perm values) into `out`.
  void signature(std::span<SigValue> out) const;
  /// bottomk: the fingerprint (sorted, distinct, at most sketch_size values).
  void fingerprint(std::vector<SigValue>& out);
  /// simhash.
  uint64_t simhash();
  /// The shingle set (sorted, distinct): what exact verification compares.
  std::vector<ShingleHash> set() const;
  /// Whether signature_split() applies: minhash or oph over word shingles without
  /// normalisation or ICU word breaks.
  bool can_split() const noexcept;
  /// shingle() then signature() for a long text, its work split over `threads` threads of the
  /// current pool: the text is cut after ASCII whitespace about every `piece_bytes` (a cut never
  /// falls inside a word), each piece's words are hashed on its own, the shingles across a cut
  /// take the k - 1 words before it, and the pieces' signatures merge (OPH bins, then one
  /// densification). The signature is bit for bit that of signature() after shingle(), and
  /// set() works as after shingle() (shingling the text again: it must outlive the call).
  /// Returns the number of shingles (repeats included).
  size_t signature_split(std::string_view text, std::span<SigValue> out, int threads, size_t piece_bytes = kPieceBytes);
  /// Texts this long are shingled and sketched in pieces on every thread of a run (signature_split,
  /// simhash_split, piecewise_shingle_set): one large record would otherwise leave the other
  /// threads idle, and need scratch for all its words at once.
  static constexpr size_t kSplitBytes = size_t{4} << 20;
  /// shingle() then signature(), or signature_split() on `threads` threads for a text of
  /// kSplitBytes or more where it applies. Returns the number of shingles (repeats included).
  size_t shingle_and_sign(std::string_view text, std::span<SigValue> out, int threads);
  /// Whether simhash_split() applies: simhash with set weights over word shingles without
  /// normalisation or ICU word breaks.
  bool can_split_simhash() const noexcept;
  /// The SimHash of a long text (set weights) from its shingle set made in pieces on `threads`
  /// threads (piecewise_shingle_set): bit for bit simhash() after shingle(), with scratch for a
  /// piece rather than for the whole text; set() then works as after signature_split(). Returns
  /// the number of shingles (repeats included).
  size_t simhash_split(std::string_view text, uint64_t& out, int threads, size_t piece_bytes = kPieceBytes);
  /// The pieces' size (about) in the *_split() methods: a little under kScratchKeepBytes, so that
  /// the scratch that grows with a piece's bytes (the word scan's lowercased copy) is kept from
  /// one piece to the next rather than freed, faulted in and zeroed again for each (pieces of
  /// just over 1 MiB did that: one 55 MB record, 13.5k page faults against 9.1k).
  static constexpr size_t kPieceBytes = kScratchKeepBytes - (size_t{64} << 10);
  /// Frees scratch beyond the bound (kScratchKeepBytes); call it when done with a document.
  void trim() noexcept;
  /// Bytes of scratch held now (the shingles of the last document).
  size_t scratch_bytes() const noexcept;

  const PipelineSpec& spec() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Sketches `texts` under `spec` (resolved here) on `threads` threads of the current pool
/// (0: all). The result does not depend on the number of threads.
Sketches sketch_documents(std::span<const std::string_view> texts, const PipelineSpec& spec, int threads = 0);

/// A record read and sketched by sketch_records, handed over in input order. The views are
/// valid during the call that hands it over.
struct SketchedRecord {
  std::string_view id;
  uint32_t source = 0;       ///< its source in the InputSet
  uint64_t line = 0;         ///< JSONL: its 1-based line (0 when read by position)
  uint64_t offset = 0;       ///< of the record in its source's (decompressed) bytes
  uint32_t raw_length = 0;   ///< JSONL: the bytes of its line; a text file: of its text
  uint64_t text_length = 0;  ///< the bytes of its text (decoded)
  io::KeyValue key;          ///< the field ReaderOptions::key_field names (Missing without one)
  std::span<const SigValue> signature;  ///< num_perm values
  bool empty = false;                   ///< no shingle (never paired)
};

/// What sketch_records counted over all its records.
struct SketchTotals {
  uint64_t shingles = 0;      ///< repeats included
  uint64_t invalid_utf8 = 0;  ///< records whose invalid UTF-8 was replaced
  uint64_t missing_ids = 0;   ///< records without the id field
};

/// A record read for its shingle set by shingle_set_records, handed over in input order.
struct ShingledRecord {
  DocId ordinal = 0;  ///< the k-th record read (from 0), or the ordinal `filter` accepted it with
  std::string_view id;
  uint32_t source = 0;
  uint64_t offset = 0;       ///< of the record in its source's (decompressed) bytes
  uint64_t text_length = 0;  ///< the bytes of its text (decoded)
  std::vector<ShingleHash> set;  ///< sorted, distinct; the callee may move it away
  /// The ordinal of a record handed over before, with the same text, whose set this one has
  /// (`set` is then empty); kNone otherwise.
  static constexpr DocId kNone = 0xFFFFFFFFu;
  DocId same_as = kNone;
};

/// Pipeline's reading for exact verification, for a host that keeps the sets: the records
/// `reader` gives (its selection by position; or, with `filter`, every record, parsed on the
/// calling thread, and those it accepts by record and ordinal) are shingled on `threads`
/// threads of the current pool (a text of DocumentSketcher::kSplitBytes or more in pieces on all
/// of them), and each set is handed to `take` in input order on the calling thread. Of records with
/// the same text, only the first to be shingled (not always the first read) gets a set: the others
/// are handed over after every record with a set, in input order, with ShingledRecord::same_as
/// naming it; texts of up to `distinct_up_to` bytes are not looked up, for a caller that knows
/// them to be distinct (a dedup that told their copies apart before). A bad record read again
/// means an input changed since the first pass: IoError naming it.
void shingle_set_records(io::RecordReader& reader, const io::InputSet& inputs, const PipelineSpec& spec,
                         const io::ReaderOptions& options, int threads, const std::function<void(ShingledRecord&)>& take,
                         const std::function<bool(const io::Record&, DocId)>& filter = {}, const ProgressFn* progress = nullptr,
                         size_t distinct_up_to = 0);

/// Pipeline's first pass over what `reader` gives, for a host that keeps the results itself (an
/// MPI rank over its share of the inputs): records are read on the calling thread, parsed,
/// shingled and sketched on `threads` threads of the current pool (a text of
/// DocumentSketcher::kSplitBytes or more over all of them), and each good record is handed to
/// `take` in input order on the calling thread; each bad one goes to `bad`, which throws or
/// counts it by its policy, with the message Pipeline gives. `spec` must be resolved, with a
/// signature (minhash or oph); UsageError otherwise.
SketchTotals sketch_records(io::RecordReader& reader, const io::InputSet& inputs, const PipelineSpec& spec,
                            const io::ReaderOptions& options, int threads, io::BadRecords& bad,
                            const std::function<void(const SketchedRecord&)>& take);

/// shingler.shingle_set(text), made a piece of about `piece_bytes` at a time on `threads`
/// threads, so that a long text needs scratch for a piece, not for the whole text. The
/// shingler's words must be plain runs between ASCII whitespace (Shingler::splits_at_spaces).
/// `shingles`, when given, receives the number of shingles of the text (repeats included).
std::vector<ShingleHash> piecewise_shingle_set(Shingler& shingler, std::string_view text, int threads,
                                               size_t piece_bytes = DocumentSketcher::kPieceBytes, size_t* shingles = nullptr);

/// The shingle sets of the documents with needed[d] != 0 (all when `needed` is empty).
ShingleSets shingle_sets(std::span<const std::string_view> texts, const PipelineSpec& spec,
                         std::span<const uint8_t> needed = {}, int threads = 0);

/// Candidate pairs (a < b, sorted, distinct) by the spec's method: LSH star edges (minhash, oph),
/// the pairs whose bottom-k estimate reaches the threshold (bottomk), the pairs within the
/// Hamming distance (simhash), or, for exact, the pairs of `sets` whose Jaccard reaches the
/// threshold (then `sets` must hold every document's set).
std::vector<DocPair> find_candidates(const Sketches& sketches, const ShingleSets* sets = nullptr, int threads = 0);

/// The documents that appear in `pairs`: needed[d] = 1.
std::vector<uint8_t> documents_in(std::span<const DocPair> pairs, size_t num_docs);

/// The scorer of the spec's verification: exact Jaccard over `sets` (VerifyMode::Exact), or the
/// sketch's estimate. `sketches` and `sets` must outlive it.
Scorer scorer_for(const Sketches& sketches, const ShingleSets* sets);

/// Writes sketches with the documents' ids (one per document, or none) to `path`, atomically.
/// The file is checksummed; docs/format.md ("Sketch file") gives the layout.
void write_sketches(const std::string& path, const Sketches& sketches, std::span<const std::string> ids = {});

/// What read_sketches returns.
struct SketchFile {
  Sketches sketches;
  std::vector<std::string> ids;  ///< empty if none were written
};
/// Reads a file of write_sketches. Throws FormatError naming the file if it is damaged,
/// truncated, of another version, or not a sketch file; IoError if it cannot be read.
SketchFile read_sketches(const std::string& path);

}  // namespace neardup
