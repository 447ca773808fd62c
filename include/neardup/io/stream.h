// Byte streams over files: plain, gzip (zlib, multi-member), zstd, xz (liblzma) or bzip2 (libbz2),
// recognised by magic bytes (1f 8b gzip, 28 b5 2f fd zstd, fd '7zXZ' 00 xz, 'BZh' 1-9 bzip2),
// never by the file name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace neardup::io {

enum class Compression { None, Gzip, Zstd, Xz, Bzip2 };
inline constexpr int kCompressionKinds = 5;
const char* compression_name(Compression c) noexcept;
/// The compression a file's first bytes announce by their magic number (gzip, zstd, xz, bzip2),
/// or None; `n` may be short (at most 6 bytes are looked at).
Compression compression_of_magic(const unsigned char* b, size_t n) noexcept;
/// The compression a file name's suffix stands for (.gz, .zst or .zstd, .xz, .bz2), or None: what
/// is known of a file not opened. Reading goes by the magic, whatever the name.
Compression compression_of_name(std::string_view name) noexcept;

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  /// Reads up to n bytes of (decompressed) data; returns 0 only at the end of the data.
  /// Throws IoError on a read failure, FormatError on a corrupt or truncated compressed stream.
  virtual size_t read(char* buf, size_t n) = 0;
  /// Bytes consumed from the underlying file so far (for progress).
  virtual uint64_t raw_bytes_read() const noexcept = 0;
  virtual Compression compression() const noexcept = 0;
  /// Skips n bytes of (decompressed) data; returns how many were skipped (fewer only at the
  /// end). A plain file seeks; a compressed stream decompresses and discards.
  virtual uint64_t skip(uint64_t n);
  /// The descriptor of an uncompressed file, whose bytes may be mapped into memory and read in
  /// place when it is a regular file (-1 for a compressed stream).
  virtual int mappable_fd() const noexcept { return -1; }
  /// For a reader of mappable_fd() going through the file in order: its bytes up to `offset` are
  /// in hand, so the kernel may be asked to read the ones after it (as read() does by itself).
  virtual void reading_at(uint64_t offset) { (void)offset; }
};

/// Opens `path` (display name `display` in messages), detecting compression from its first bytes.
std::unique_ptr<ByteStream> open_stream(const std::string& path, const std::string& display);

/// Asks the kernel to start reading bytes [from, to) of the file open as `fd` into the page
/// cache, and returns without waiting (POSIX_FADV_WILLNEED). The kernel reads no more than the
/// device's readahead for one advice (128 KiB by default) and drops the rest of the range, so it
/// is given in parts of that size.
void ask_for_pages(int fd, uint64_t from, uint64_t to) noexcept;

/// The decompressed size a compressed file states about itself, where it states one: the
/// content size in the header of a zstd file's first frame (the zstd tool writes it when it
/// knows its input's size), or the ISIZE at the end of a gzip file (the size of its last member
/// modulo 2^32). Only a hint: a file of several frames or members states its first frame's or
/// last member's. std::nullopt for other files, or where it cannot be read.
std::optional<uint64_t> stated_decompressed_size(const std::string& path);

/// Reads the whole (decompressed) content of `path`.
std::string read_all(const std::string& path, const std::string& display);
/// Reads the (decompressed) content of `path` into `out` unless it is longer than `max_bytes`:
/// then returns false after reading no more than max_bytes + 64 KiB (a decompression bomb
/// costs no more memory than the cap).
bool read_all_capped(const std::string& path, const std::string& display, uint64_t max_bytes, std::string& out);

}  // namespace neardup::io
