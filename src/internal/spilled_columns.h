// Columns of bytes kept on disk instead of in memory: written in order, a buffer at a time, to
// temporary files without a name, then read back by position from any thread, or mapped. A run
// whose memory is limited keeps its LSH band keys there (RunTuning::spill_band_keys: 8 bytes per
// band and document, a column of 64-bit values per band) and its document table
// (RunTuning::spill_documents: ids, text lengths, record positions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace neardup::internal {

class SpilledColumns {
 public:
  /// `columns` empty columns in directory `dir` (a file each, unlinked at once, so nothing is
  /// left of them however the process ends). `what` names them in errors ("the band keys").
  /// IoError naming `dir` if they cannot be made.
  SpilledColumns(const std::string& dir, size_t columns, std::string what = "the band keys");
  ~SpilledColumns();
  SpilledColumns(const SpilledColumns&) = delete;
  SpilledColumns& operator=(const SpilledColumns&) = delete;

  /// Appends a 64-bit value to a column (one thread at a time). IoError naming the directory
  /// when the disk refuses a write (full, failing).
  void push(size_t column, uint64_t v) {
    Buffer& b = buffer_[column];
    if (b.used + sizeof v > kBufferBytes) flush(column);
    std::memcpy(b.bytes.get() + b.used, &v, sizeof v);
    b.used += sizeof v;
  }
  /// Appends n bytes to a column, as push.
  void append(size_t column, const void* p, size_t n);
  /// Writes what the buffers hold; reading and mapping need it done.
  void finish();
  /// Reads 64-bit values [begin, begin + count) of a column into out. Any thread, after finish().
  void read(size_t column, uint64_t begin, size_t count, uint64_t* out) const;
  /// A column's bytes mapped into memory (read only; empty for an empty column), valid while
  /// this lives. After finish(). The pages read count as the process's memory until the kernel
  /// takes them back under pressure, or drop_pages() lets them go.
  std::span<const std::byte> map(size_t column);
  /// Lets the mapped pages go from the process (the kernel keeps them cached while it has room):
  /// a run calls it after each pass over a mapped column, so that the pages it read do not add
  /// up. Harmless while another thread reads: a page is read again from the file.
  void drop_pages() const noexcept;
  /// The same for bytes [from, to) of a mapped column (whole pages: the page holding `from` and
  /// those after it up to the one holding `to - 1`).
  void drop_pages(size_t column, uint64_t from, uint64_t to) const noexcept;
  /// 64-bit values in the first column (after finish()), and bytes on disk in all.
  uint64_t rows() const noexcept { return written_.empty() ? 0 : written_[0] / sizeof(uint64_t); }
  uint64_t bytes() const noexcept;
  const std::string& dir() const noexcept { return dir_; }
  static constexpr size_t kBufferBytes = size_t{64} << 10;  // of memory per column

 private:
  struct Buffer {
    std::unique_ptr<std::byte[]> bytes;
    size_t used = 0;
  };
  void flush(size_t column);
  [[noreturn]] void fail(const char* what, const char* advice) const;
  std::string dir_, what_;
  std::vector<int> fd_;
  std::vector<Buffer> buffer_;
  std::vector<uint64_t> written_;  // bytes on disk, per column
  std::vector<std::span<const std::byte>> map_;
};

}  // namespace neardup::internal
