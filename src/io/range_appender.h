// Appending byte ranges of a source to an output a batch at a time (the dedup writer's copy of
// the kept records as they are decided); io::append_ranges (neardup/io/writer.h) is the
// one-batch form the library's users call.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "neardup/io/reader.h"
#include "neardup/io/writer.h"

namespace neardup::io {

/// Adds the line of the record at `pos`, its newline included, to `ranges` (the records given in
/// increasing order), extending the last range when the record follows it. Returns its bytes.
inline uint64_t add_record_line(std::vector<ByteRange>& ranges, const RecordPos& pos) {
  const uint64_t begin = pos.offset, len = uint64_t{pos.length} + 1;
  if (!ranges.empty() && ranges.back().offset + ranges.back().length == begin)
    ranges.back().length += len;
  else
    ranges.push_back({begin, len});
  return len;
}

/// Copies byte ranges of one source's decompressed data to an output, a batch at a time, in
/// increasing, non-overlapping order across batches: a plain file by AtomicFile::append_from
/// (written directly on ext4, copy_file_range elsewhere), or small ranges close together a
/// window at a time, read with their gaps; a compressed one decompressed once, skipping the
/// gaps. So a writer can append the ranges it has as soon as it has them (a dedup writing while
/// it still decides).
class RangeAppender {
 public:
  /// Opens `path` (named `display` in errors). Throws IoError. With `read_directly`, a plain
  /// file that is not in the page cache (a ScratchCopy) is read with O_DIRECT into a buffer of
  /// the appender's own, where the system allows it: read through the page cache, its bytes
  /// would each take a page cache page for nothing.
  RangeAppender(const std::string& path, const std::string& display, bool read_directly = false);
  ~RangeAppender();
  RangeAppender(const RangeAppender&) = delete;
  RangeAppender& operator=(const RangeAppender&) = delete;
  /// Appends the ranges to `out`. If the data ends exactly one byte short of a range, a newline
  /// is written in its place (a last line without one); any range after it, or data ending
  /// earlier, throws IoError naming the source (the input changed).
  void append(std::span<const ByteRange> ranges, AtomicFile& out);

 private:
  void short_of(uint64_t missing, const ByteRange& r, AtomicFile& out);
  static size_t window_of(std::span<const ByteRange> ranges);
  size_t append_window(std::span<const ByteRange> ranges, AtomicFile& out);
  // A plain file's windows: ranges of at most kWindowRange bytes (a longer one is copied without
  // passing through memory twice), at most kWindowGap apart (a read call costs about what copying
  // a few KiB does), read into buf_ up to kWindowBytes at a time.
  static constexpr uint64_t kWindowRange = 16384, kWindowGap = 4096, kWindowBytes = uint64_t{1} << 20;
  std::string display_;
  std::unique_ptr<DirectReader> direct_in_;  // a plain file read with O_DIRECT
  int fd_ = -1;                    // a plain file
  std::unique_ptr<ByteStream> stream_;  // a compressed one
  std::vector<char> buf_;  // a compressed source's reads, a plain file's windows
  uint64_t pos_ = 0;   // where the stream is
  bool ended_ = false;  // the last line lacked its newline
};

}  // namespace neardup::io
