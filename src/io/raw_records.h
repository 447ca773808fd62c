// The library's reading passes below the public reader (neardup/io/reader.h): records taken
// unparsed from a RecordReader (next_raw), their lines handed to worker threads without a copy
// (share_line), and the JSONL parser those threads run (one per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "neardup/io/reader.h"

namespace neardup::io {

/// Parses JSONL lines into records (one per thread: it owns simdjson's buffers).
class JsonlParser {
 public:
  /// With word_text, a text whose words are all that is needed (word or character shingles
  /// without normalisation) may come as its JSON string's contents with each escape turned into
  /// two spaces but in the 64-byte blocks that hold a \uXXXX escape, which are decoded: the same
  /// words, found without decoding the rest (kernels/json_text_kernels.h). Whether a text comes so
  /// or decoded depends on its line alone. text_length() is the decoded length either way.
  /// A line of kWordTextMaxLine or more is made word text in parts on up to `threads` threads of
  /// the current pool (neardup/thread_pool.h).
  explicit JsonlParser(const ReaderOptions& options, bool word_text = false, int threads = 1);
  ~JsonlParser();
  JsonlParser(const JsonlParser&) = delete;
  JsonlParser& operator=(const JsonlParser&) = delete;

  /// Parses `line`, which must be followed by at least kPadding readable bytes. On success sets
  /// out.id and out.text (valid until the next call) and returns true; otherwise sets `problem`
  /// (what is wrong, without the place) and returns false. A record without an id gets
  /// `<file>:<line>`. `overwritable` is null, or line.data() as memory the parser may overwrite:
  /// word text of a line of kWordTextMaxLine or more is then made in place (out.text points into
  /// the line), where it would otherwise be written to a buffer of the parser's. The line is
  /// overwritten only when it parses as word text: a line rejected or parsed whole keeps its bytes.
  bool parse(std::string_view line, const Source& source, uint64_t line_no, Record& out, std::string& problem,
             char* overwritable = nullptr);
  /// The length of the last record's text once decoded (and cut to max_doc_bytes).
  uint64_t text_length() const noexcept;
  /// Whether the last line parsed had invalid UTF-8 (parsed after replacing it with U+FFFD).
  bool replaced_invalid_utf8() const noexcept;
  /// Whether the last record parsed had no id field (and was named FILE:LINE).
  bool missing_id() const noexcept;
  /// The kind of the last problem (a short phrase, for counting).
  const char* problem_kind() const noexcept;
  /// Readable bytes a line given to parse() must have after it.
  static const size_t kPadding;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Lines shorter than this are made word text in one run into a copy that each parser keeps (the
/// room of the longest); lines this long or longer in parts, on several threads, in place where
/// the caller lets the parser overwrite them, else into a buffer the parser keeps for the next
/// long line, cut to its share of kKeptReadBufferBytes before a short one (JsonlParser::parse).
/// The full parse would decode such a line on one thread into fresh buffers: a mapped record of
/// 50 MB took 66-111 ms that way, and 41-43 ms in parts on 2 threads.
inline constexpr size_t kWordTextMaxLine = size_t{4} << 20;

/// Drops this process's mapping of the whole pages inside `line`, a line of a read-only file
/// mapping (RawRecord::mapped) that is parsed and will not be read again: they stay in the page
/// cache, and would be mapped again from it if touched. A record of tens of MB otherwise holds
/// its line's pages in the process's memory while it is shingled from the parser's copy.
void release_mapped_line(std::string_view line) noexcept;

/// The most bytes of free read buffers a reader keeps for reuse (the buffers its shared lines are
/// in come on top, bounded with the records in flight): part of the memory estimate.
inline constexpr size_t kKeptReadBufferBytes = size_t{32} << 20;

/// Lines shorter than this are parsed whole even for word text (JsonlParser), where the fast path
/// gains nothing; returns the previous value. For tests, which take the fast path on short lines.
size_t set_word_text_min_line(size_t bytes) noexcept;

/// A record before parsing, for parsing on other threads (RecordReader::next_raw).
struct RawRecord {
  enum class Kind {
    Line,    ///< a JSONL line to parse (bytes), not blank
    Parsed,  ///< a text file: id and text (bytes) are the record
    Bad,     ///< a bad input (an empty file): report(source's display, problem)
  };
  Kind kind = Kind::Line;
  std::string_view bytes;  ///< Line: the line without its newline (kPadding readable bytes follow); Parsed: the text
  /// Line: the bytes are the reader's to give away (read into a buffer, not a read-only mapping,
  /// and no other line's padding overlaps them): once share_line() has handed over their buffer,
  /// its holder may overwrite them.
  bool writable = false;
  /// Line: the bytes lie in a read-only mapping of the file (release_mapped_line).
  bool mapped = false;
  std::string_view id;     ///< Parsed
  std::string problem;     ///< Bad
  const char* problem_kind = "";  ///< Bad
  size_t source = 0;
  uint64_t line = 0;    ///< Line: 1-based line number (0 when read by position)
  uint64_t offset = 0;  ///< Line: where the line starts in the source's decompressed bytes
};

/// What the reading passes take from a RecordReader besides its records (friend of RecordReader).
struct RawReading {
  /// The next record unparsed (views valid until the next call), or false at the end. The
  /// caller parses lines (JsonlParser) and reports bad ones (BadRecords) itself, in order, so
  /// the reader's stats() then count neither.
  static bool next_raw(RecordReader& reader, RawRecord& out);
  /// Right after next_raw() returned `line` (a Line): while the returned owner lives, the line's
  /// bytes (and kPadding allocated bytes past its end) stay valid and unchanged, so that a reading
  /// pass hands lines to its workers without copying them; the reader reads on in another buffer.
  /// Null (copy the line) when reading by position (select()) a line under 1 MiB.
  static std::shared_ptr<const void> share_line(RecordReader& reader, const RawRecord& line);
};

inline bool next_raw(RecordReader& reader, RawRecord& out) { return RawReading::next_raw(reader, out); }
inline std::shared_ptr<const void> share_line(RecordReader& reader, const RawRecord& line) { return RawReading::share_line(reader, line); }

}  // namespace neardup::io
