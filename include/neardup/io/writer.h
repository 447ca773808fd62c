// Output files that never leave a half-written file in place: data goes to a temporary file in
// the destination's directory, which commit() flushes, syncs and renames over the destination.
// A writer destroyed without commit() (an error, an exception) removes its temporary file, so an
// existing file at the destination is never damaged. "-" writes to standard output directly.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace neardup::io {

class AtomicFile {
 public:
  /// Creates the temporary file next to `path`. Throws IoError if it cannot.
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view data);
  void put(char c);
  /// Flushes, fsyncs and renames into place. Throws IoError (for example on a full disk).
  void commit();
  /// Appends `length` bytes of the file open as `fd` from `offset` (copy_file_range, falling
  /// back to pread); returns how many there were (fewer only at its end).
  uint64_t append_from(int fd, uint64_t offset, uint64_t length, const std::string& display);
  const std::string& path() const noexcept { return path_; }

 private:
  [[noreturn]] void fail(const char* what);
  void write_behind();
  static constexpr uint64_t kWriteBehind = uint64_t{32} << 20;
  uint64_t written_ = 0;  ///< bytes written so far
  uint64_t synced_ = 0;   ///< bytes whose disk writes were started
  std::string path_;
  std::string temp_;
  int temp_slot_ = -1;  ///< in the list of temporary files
  std::FILE* f_ = nullptr;
  bool stdout_ = false;
};

/// Temporary files (AtomicFile's, the spooled copy of stdin) are listed while they exist, so
/// that a signal handler can remove them: remove_temporary_files() is async-signal-safe (it only
/// reads the list and calls unlink). Up to 128 files at a time are listed.
void remove_temporary_files() noexcept;
/// Lists `path`; returns its slot, or -1 if the list is full or the path too long.
int register_temporary_file(const std::string& path) noexcept;
/// Takes a slot off the list (-1: nothing).
void unregister_temporary_file(int slot) noexcept;

/// A byte range of a source's decompressed data.
struct ByteRange {
  uint64_t offset = 0, length = 0;
};

/// Appends the ranges (in increasing, non-overlapping order) of the decompressed data of `path`
/// to `out`: a plain file is copied in the kernel (copy_file_range), a compressed one is
/// decompressed, skipping the gaps. If the data ends exactly one byte short of the last range, a
/// newline is written in its place (a last line without one). Throws IoError naming `display`
/// if the data ends earlier (the input changed).
void append_ranges(const std::string& path, const std::string& display, std::span<const ByteRange> ranges, AtomicFile& out);

}  // namespace neardup::io
