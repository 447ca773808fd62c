// Readers: inputs (paths) become a stream of records {id, text}.
//
// * JSONL: one JSON object per line; the text is the string field `text_field`, the id the field
//   `id_field` (a string, or a number taken as written); a record without an id gets
//   `<file>:<line>`. Blank lines are not records. Parsed with simdjson; a line with invalid
//   UTF-8 is parsed after replacing each invalid byte with U+FFFD (which separates words exactly
//   as the invalid byte would), while the raw line is kept untouched for output.
//   Fields may be nested: `meta.content` is the field "content" of the object "meta" (unless the
//   record has a field named "meta.content" itself). Ids holding a TAB, CR or LF are bad records:
//   every TSV output would be corrupted by them.
// * Plain text: each file is one document with id = its path as given; a directory is walked
//   recursively, its regular files sorted by relative path, each one document with id = the
//   directory as given joined with the relative path (`docs/a/b.txt`; unique across folders).
//   Hidden files and folders (a name starting with '.') are left out unless
//   ReaderOptions::hidden, binary files (a NUL byte in the first 8 KiB) found in a folder are
//   left out, and --include / --exclude globs choose files; each kind is counted.
// * Format: by name (.jsonl/.ndjson/.json before a compression suffix); in Auto mode, a file
//   named otherwise and given directly is JSONL if its first non-blank line is a JSON object.
// * Compression (.gz, .zst, .xz, .bz2) is recognised by magic bytes; `-` is standard input,
//   copied to a temporary file first so that it can be read again (exact verification, dedup
//   output).
// Memory: one record at a time; nothing grows with the bytes of the corpus.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace neardup::io {

class ScratchCopy;

enum class InputFormat { Auto, Jsonl, Text };
enum class OnError { Fail, Skip };
/// What happens to a text longer than ReaderOptions::max_doc_bytes.
enum class LongDocs { Truncate, Skip };

/// A bad record skipped under OnError::Skip.
struct Rejected {
  std::string_view input;   ///< the source's display name
  uint64_t line = 0;        ///< 1-based line (0: a whole file, or unknown)
  uint64_t offset = 0;      ///< where the record starts in the source's decompressed bytes
  std::string_view kind;    ///< its kind, as counted: "malformed JSON", "missing text field", ...
  std::string_view reason;  ///< what is wrong, with what to do
  bool has_record = false;  ///< whether `record` holds the bytes (not for over-long lines or files)
  std::string_view record;  ///< the record as it was (a JSONL line without its newline)
};

/// ReaderOptions::memory_map.
enum class MemoryMap : uint8_t {
  /// Plain files are copied by read(2), never mapped.
  Never,
  /// Mapped unless mapping is much dearer than read(2) on this machine, measured once per process
  /// on the first plain file of at least 4 MiB (the same 4 MiB read both ways, a few
  /// milliseconds; mapped unless mapping took over twice the copy, since that measurement
  /// favours read(2));
  /// smaller files before that measurement are read by read(2). The two costs differ by several
  /// times, one way on some virtual machines and the other way on others: mapping pays a
  /// page-table entry and a TLB miss for every 4 KiB page, read(2) a copy into a buffer that
  /// stays mapped.
  Auto,
  /// Plain files are always mapped (where the system can map them).
  Always,
};

struct ReaderOptions {
  std::string text_field = "text";
  std::string id_field = "id";
  InputFormat format = InputFormat::Auto;  ///< Auto: .jsonl/.ndjson/.json (before .gz/.zst/.xz/.bz2) and stdin are JSONL
  OnError on_error = OnError::Fail;
  /// The longest JSONL line, or plain-text file, read (bytes, decompressed); a longer one is a
  /// bad record (its bytes are never held). Bounds memory against a file without newlines or a
  /// decompression bomb. At most kMaxRecordBytes.
  uint64_t max_record_bytes = uint64_t{1} << 30;
  /// A text longer than this (bytes, after JSON decoding) is cut to its first max_doc_bytes
  /// bytes, back to a character boundary (LongDocs::Truncate: the record itself is output
  /// unchanged), or is a bad record (LongDocs::Skip).
  uint64_t max_doc_bytes = uint64_t{64} << 20;
  LongDocs long_docs = LongDocs::Truncate;
  /// JSONL: a field read into Record::key (empty: none), e.g. a quality score or a date that
  /// decides which document of a cluster is kept.
  std::string key_field;
  /// Directories: globs a file must match (any of them; none given: every file) and globs that
  /// leave files and folders out. A glob without '/' matches the name, one with '/' the path
  /// relative to the directory walked (fnmatch).
  std::vector<std::string> include, exclude;
  /// Directories: also read hidden files and folders.
  bool hidden = false;
  /// Called for every bad record skipped under OnError::Skip (never under Fail), in reading
  /// order, on the thread that reads: what `--rejects` writes.
  std::function<void(const Rejected&)> on_reject;
  /// How JSONL in a plain regular file is read: in place, mapped into memory a window at a time,
  /// or copied into the reader's buffers by read(2), as every other stream is. Which of the two
  /// costs less is a property of the machine (see MemoryMap::Auto). A file truncated while it is
  /// mapped makes the process die of SIGBUS (the command-line programs report it as an I/O
  /// error); Never reads such files like any other stream.
  MemoryMap memory_map = MemoryMap::Auto;
  /// Inputs that were read once already by the caller (neardup-mpi: rank 0 reads standard input
  /// or a FIFO and sends its bytes to every rank): the path as given (`-` for standard input)
  /// and the copy to read instead (OnceCopy::path). Messages and ids name the path as given.
  std::vector<std::pair<std::string, std::string>> copied_once;
};

/// A copy of an input that can be read only once (standard input, a pipe, a FIFO) in a temporary
/// file that later passes read again: without a name where the file system can make one
/// (O_TMPFILE), otherwise listed for removal by the signal handlers; gone when destroyed.
class OnceCopy {
 public:
  /// `fill(fd)` writes every byte of the input to fd (write_copy), or throws; the copy is then
  /// removed. `display` names the input in messages; `dir` is the folder ("": $TMPDIR or /tmp).
  OnceCopy(const std::string& display, const std::string& dir, const std::function<void(int fd)>& fill);
  ~OnceCopy();
  OnceCopy(const OnceCopy&) = delete;
  OnceCopy& operator=(const OnceCopy&) = delete;
  /// The name to read it by.
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  int slot_ = -1, fd_ = -1;
};

/// Whether an id holds a TAB, CR or LF, which would corrupt the TSV outputs: refused in every
/// input and by every driver.
bool bad_id_char(std::string_view id) noexcept;

/// Writes n bytes to a copy's descriptor, retrying interrupted and short writes; IoError naming
/// `display` and the folder `dir` ("": $TMPDIR) when the disk is full or the write fails.
void write_copy(int fd, const char* p, size_t n, const std::string& display, const std::string& dir);


/// The input file that a reader has mapped (ReaderOptions::memory_map) at `address`, its display
/// name copied into `name` (cut to size - 1 bytes, then a NUL): how a SIGBUS handler names an
/// input that shrank while it was mapped. Async-signal-safe. False when no mapped window of a
/// reader holds the address.
bool mapped_input_at(const void* address, char* name, size_t size) noexcept;

/// Positions and lengths of records are 32-bit (RecordPos).
inline constexpr uint64_t kMaxRecordBytes = UINT32_MAX;

/// Applies max_doc_bytes to `text`: true with `text` kept or cut, or false (a bad record, with
/// `problem` set) under LongDocs::Skip.
bool limit_doc_text(std::string_view& text, const ReaderOptions& options, std::string& problem);

enum class SourceKind {
  Jsonl,
  TextFile,
  Memory,  ///< documents held by the InputSet (given by a caller, not read from a file)
};

/// A document given in memory: its id and its text.
struct Document {
  std::string id;
  std::string text;
};

/// One file to read, after expanding directories and spooling stdin.
struct Source {
  std::string path;     ///< what is opened
  std::string display;  ///< how messages name it (the path as the user gave it, or <stdin>)
  std::string doc_id;   ///< TextFile: the document id
  SourceKind kind = SourceKind::Jsonl;
  bool from_directory = false;  ///< TextFile found by walking a directory (an empty file is then an empty document)
  std::string problem;  ///< found walking a directory: why it cannot be read (reported as a bad input)
  std::string problem_kind;  ///< its kind, as counted
  /// The name of its output under --output-dir: the path relative to the directory walked, or
  /// the file's own name.
  std::string name;
};

/// What walking the inputs left out, by kind.
struct WalkCounts {
  uint64_t hidden = 0;    ///< hidden files and folders in directories
  uint64_t excluded = 0;  ///< files and folders left out by --include / --exclude
  uint64_t other = 0;     ///< FIFOs, sockets, devices in directories
};

/// The inputs of a run. Owns the temporary copy of stdin, removed when destroyed.
class InputSet {
 public:
  /// Expands `paths` (files, directories, `-`) in order. Throws IoError for a missing or
  /// unreadable path. `stdin_dir` is where stdin is spooled (empty: $TMPDIR or /tmp).
  InputSet(const std::vector<std::string>& paths, InputFormat format, const std::string& stdin_dir = "");
  /// The same with the directory options of `options` (hidden, include, exclude), and JSONL
  /// recognised by content in Auto mode.
  InputSet(const std::vector<std::string>& paths, const ReaderOptions& options, const std::string& stdin_dir = "");
  /// Documents from the caller, in this order: one source, "<memory>", read again from memory
  /// by every later pass (record N is named `<memory>:N` in messages).
  explicit InputSet(std::vector<Document> documents);
  ~InputSet();
  InputSet(const InputSet&) = delete;
  InputSet& operator=(const InputSet&) = delete;

  const std::vector<Source>& sources() const noexcept { return sources_; }
  /// Sum of the file sizes (compressed), for progress.
  uint64_t total_bytes() const noexcept { return total_bytes_; }
  bool all_jsonl() const noexcept;
  bool all_text() const noexcept;
  const WalkCounts& left_out() const noexcept { return left_out_; }
  /// The documents of the Memory source.
  const std::vector<Document>& documents() const noexcept { return documents_; }
  /// From now on source `source` is read from `copy`, its decompressed bytes as a pass read them
  /// (RecordReader::keep_decompressed_copies): its path becomes the copy's, which this set owns.
  void read_again_from(size_t source, std::unique_ptr<ScratchCopy> copy);
  /// Whether source `source` is read from such a copy.
  bool read_from_copy(size_t source) const noexcept;

 private:
  void expand(const std::vector<std::string>& paths, const ReaderOptions& options, const std::string& stdin_dir);
  void add_stdin(InputFormat format, const std::string& stdin_dir);
  void add_copied(const std::string& path, const std::string& copy, InputFormat format);
  void add_directory(const std::string& path, const ReaderOptions& options);
  void add_file(const std::string& path, bool regular, InputFormat format, const std::string& stdin_dir);
  WalkCounts left_out_;
  std::vector<Document> documents_;
  std::vector<Source> sources_;

  std::vector<std::unique_ptr<ScratchCopy>> copies_;  ///< per source (read_again_from), or null
  std::vector<std::unique_ptr<OnceCopy>> once_copies_;  ///< standard input, pipes and FIFOs, copied
  std::string own(std::unique_ptr<OnceCopy> copy);
  uint64_t total_bytes_ = 0;
};

/// A document as read. The views are valid until the next call to RecordReader::next.
/// A record's value of ReaderOptions::key_field: a number, a string, or missing (absent or null).
struct KeyValue {
  enum class Kind : uint8_t { Missing, Number, String };
  Kind kind = Kind::Missing;
  double number = 0;
  std::string_view text;  ///< String; valid as long as Record::id
};

struct Record {
  std::string_view id;
  std::string_view text;
  std::string_view raw;  ///< JSONL: the line as it was (without its newline); TextFile: the path
  size_t source = 0;     ///< index into InputSet::sources()
  uint64_t line = 0;     ///< JSONL: 1-based line number (0 when read by position); TextFile: 0
  uint64_t offset = 0;   ///< JSONL: where the line starts in the source's (decompressed) bytes
  KeyValue key;          ///< JSONL with ReaderOptions::key_field
};

/// Where a JSONL record lies: its source, the offset of its line in the source's decompressed
/// bytes, and the line's length without its newline (Record::raw.size()).
struct RecordPos {
  uint32_t source = 0;
  uint32_t length = 0;
  uint64_t offset = 0;
};

struct ReaderStats {
  uint64_t records = 0;         ///< records returned
  uint64_t skipped = 0;         ///< bad records skipped under OnError::Skip
  uint64_t invalid_utf8 = 0;    ///< JSONL lines parsed after replacing invalid UTF-8
  uint64_t binary = 0;          ///< binary files found in directories, left out
  uint64_t missing_ids = 0;     ///< JSONL records without the id field (named FILE:LINE)
  std::vector<std::string> first_skips;  ///< the first 10 skip messages
  std::vector<std::pair<std::string, uint64_t>> skip_kinds;  ///< skipped records by kind
};

/// A bad record as BadRecords::report takes it: where messages place it (record_where, or the
/// file alone for a bad whole file), and its Rejected fields. `record` is its line when there is
/// one (none for a whole file or an over-long line).
struct BadRecord {
  std::string where;
  Rejected rejected;
};
BadRecord bad_record(const Source& source, uint64_t line, uint64_t offset, std::string_view kind, std::string_view reason,
                     std::optional<std::string_view> record = std::nullopt);

/// What happens to bad records: under OnError::Fail, report() throws FormatError
/// (`<where>: <what>; fix the input, or skip bad records with on_error=skip`); under
/// OnError::Skip it counts them by kind, keeps the first 10 messages and hands each to
/// ReaderOptions::on_reject.
class BadRecords {
 public:
  explicit BadRecords(const ReaderOptions& options) : policy_(options.on_error), on_reject_(options.on_reject) {}
  /// `r.reason` is what is wrong; the message is `<where>: <reason>`.
  void report(const std::string& where, const Rejected& r);
  void report(const BadRecord& b) { report(b.where, b.rejected); }
  /// Counts the records another reader skipped after those counted here (a host that reads its
  /// inputs in parts, such as the ranks of neardup-mpi, in input order), as if reported here.
  void add(uint64_t skipped, const std::vector<std::string>& first, const std::vector<std::pair<std::string, uint64_t>>& kinds);
  uint64_t skipped() const noexcept { return skipped_; }
  /// The messages of the first kFirstKept records skipped.
  const std::vector<std::string>& first() const noexcept { return first_; }
  static constexpr size_t kFirstKept = 10;
  const std::vector<std::pair<std::string, uint64_t>>& kinds() const noexcept { return kinds_; }

 private:
  OnError policy_;
  std::function<void(const Rejected&)> on_reject_;
  uint64_t skipped_ = 0;
  std::vector<std::string> first_;
  std::vector<std::pair<std::string, uint64_t>> kinds_;
};

/// How messages name a record: `<file>:<line>`, or `<file>: the line at byte N` when it was
/// read by position (line 0).
std::string record_where(const Source& source, uint64_t line, uint64_t offset);
/// The 1-based number of the line that starts at `offset` of the source's decompressed bytes,
/// by reading up to it (for messages about records found by position). 0 if it cannot be read.
uint64_t line_number_at(const Source& source, uint64_t offset);

/// What the first bytes of the inputs say about all of them, for planning a run (the expected
/// memory) before it starts. Counts are exact when every input was read whole.
struct InputSample {
  double records = 0;     ///< documents over all inputs (bad JSONL lines are not counted)
  double data_bytes = 0;  ///< decompressed bytes over all inputs
  double compressed_jsonl_bytes = 0;  ///< of them, those of compressed JSONL inputs (kept decompressed on disk by a run)
  double text_bytes = 0;  ///< document text over all inputs
  double id_bytes = 0;    ///< document ids over all inputs
  uint64_t sampled_bytes = 0;    ///< decompressed bytes looked at
  uint64_t sampled_records = 0;  ///< documents looked at (given to on_record)
  uint64_t sampled_text_bytes = 0;  ///< their text
  bool whole = false;            ///< every input was read whole
};

/// Reads about `budget` decompressed bytes from the start of the inputs: the first JSONL source
/// of each compression kind (for its compression ratio and its records' sizes) and the first
/// text files, then scales by the inputs' file sizes. Calls on_record(id, text) for each
/// document looked at. Bad records are passed over (the run reports them); throws IoError only
/// if an input cannot be opened.
InputSample sample_inputs(const InputSet& inputs, const ReaderOptions& options, uint64_t budget,
                          const std::function<void(std::string_view id, std::string_view text)>& on_record);

/// Reads every source of an InputSet in order. Throws FormatError on a bad record under
/// OnError::Fail (message: `<file>:<line>: <what>; <what to do>`), IoError on a read failure.
class RecordReader {
 public:
  RecordReader(const InputSet& inputs, const ReaderOptions& options);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  /// The next record, or false at the end of all inputs.
  bool next(Record& out);
  /// From now on, next() returns only the records at these positions (JSONL sources, in
  /// reading order), skipping the bytes between them (a plain file seeks). Throws IoError
  /// naming the file if a position no longer holds a line of that length (the input changed).
  void select(std::vector<RecordPos> positions);
  /// Reads only sources [first, last) (records keep their source numbers and line numbers): a
  /// share of the inputs, as one rank of a distributed run reads. Of JSONL source `first`, only
  /// the lines that start at or after byte `begin`; of source last - 1, only those that start
  /// before byte `end` (offsets in the decompressed bytes; the lines before are scanned, not
  /// parsed). Call it before the first record.
  void read_sources(size_t first, size_t last, uint64_t begin = 0, uint64_t end = UINT64_MAX);
  const ReaderStats& stats() const noexcept;
  /// Compressed bytes consumed so far over all sources.
  uint64_t bytes_read() const noexcept;
  /// Keeps the decompressed bytes of every compressed JSONL source, as they are read, in a
  /// ScratchCopy in `dir` (keeping `keep_free` bytes free there; 0: ScratchCopy's default), for
  /// InputSet::read_again_from. Call it before the first record.
  void keep_decompressed_copies(const std::string& dir, uint64_t keep_free = 0);
  /// The copies of the sources read to their end, by source index (null where none was kept:
  /// plain sources, sources not read to their end, copies given up); `why` gets the reason of
  /// the first one given up, if any.
  std::vector<std::unique_ptr<ScratchCopy>> take_decompressed_copies(std::string* why = nullptr);
 private:
  friend struct RawReading;  // the library's reading passes (src/io/raw_records.h)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::io
