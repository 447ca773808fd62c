// Columns of 64-bit values kept on disk instead of in memory: written in order, a buffer at a
// time, to temporary files without a name, and read back by position from any thread. A run
// whose memory is limited keeps its LSH band keys there (RunTuning::spill_band_keys): 8 bytes
// per band and document, most of what a run otherwise holds per document.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace neardup::internal {

class SpilledColumns {
 public:
  /// `columns` empty columns in directory `dir` (a file each, unlinked at once, so nothing is
  /// left of them however the process ends). IoError naming `dir` if they cannot be made.
  SpilledColumns(const std::string& dir, size_t columns);
  ~SpilledColumns();
  SpilledColumns(const SpilledColumns&) = delete;
  SpilledColumns& operator=(const SpilledColumns&) = delete;

  /// Appends v to a column (one thread at a time). IoError naming the directory when the disk
  /// refuses a write (full, failing).
  void push(size_t column, uint64_t v) {
    std::vector<uint64_t>& b = buffer_[column];
    b.push_back(v);
    if (b.size() == kBuffer) flush(column);
  }
  /// Writes what the buffers hold; reading needs it done.
  void finish();
  /// Reads values [begin, begin + count) of a column into out. Any thread, after finish().
  void read(size_t column, uint64_t begin, size_t count, uint64_t* out) const;
  /// Values in each column (after finish()), and bytes on disk in all.
  uint64_t rows() const noexcept { return written_.empty() ? 0 : written_[0]; }
  uint64_t bytes() const noexcept;
  const std::string& dir() const noexcept { return dir_; }

 private:
  static constexpr size_t kBuffer = 8192;  // values: 64 KiB per column
  void flush(size_t column);
  [[noreturn]] void fail(const char* what, const char* advice) const;
  std::string dir_;
  std::vector<int> fd_;
  std::vector<std::vector<uint64_t>> buffer_;
  std::vector<uint64_t> written_;  // values on disk, per column
};

}  // namespace neardup::internal
