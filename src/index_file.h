// The persistent index's file format, apart from the index logic (docs/format.md): a header page
// with the spec and a table of sections, then eight 64-byte-aligned sections, each with its
// checksum. Reading maps the file and checks every byte of the layout; writing goes through an
// AtomicFile (temporary name, fsync, rename).
#pragma once

#include "neardup/io/writer.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "neardup/types.h"

namespace neardup::internal {

/// Index format 1 differs from 2 only in the MinHash definition.
inline constexpr uint32_t kMinHashV1IndexVersion = 1;

/// What an index file holds, as views (into the mapping when read).
struct IndexFileContents {
  uint32_t version = 0;
  uint64_t identity = 0;  ///< the header's checksum: names this saved state (the log's base)
  std::string spec;  ///< PipelineSpec::to_string()
  uint64_t documents = 0;
  uint32_t num_perm = 0, bands = 0, rows = 0;
  bool has_sets = false;
  std::span<const uint64_t> id_ends;  ///< per document, the end of its id in id_blob
  std::string_view id_blob;
  std::span<const SigValue> sigs;           ///< documents x num_perm
  std::span<const uint64_t> set_ends;       ///< per document, the end of its set in set_values
  std::span<const uint64_t> set_sums;       ///< per document, the checksum of its set
  std::span<const ShingleHash> set_values;
  std::span<const uint64_t> band_keys;  ///< bands x documents, each band sorted by (key, doc)
  std::span<const DocId> band_docs;
};

/// A read-only mapping of an index file whose layout has been checked: sizes, alignment, zero
/// padding, offsets in order, checksums (a set's own checksum is checked when it is used).
class MappedIndexFile {
 public:
  /// Throws IoError if the file cannot be read, FormatError naming the file and what is wrong
  /// if it is not an index, of another version, or damaged.
  explicit MappedIndexFile(const std::string& path);
  ~MappedIndexFile();
  MappedIndexFile(const MappedIndexFile&) = delete;
  MappedIndexFile& operator=(const MappedIndexFile&) = delete;

  const IndexFileContents& contents() const noexcept { return c_; }
  size_t bytes() const noexcept { return bytes_; }

 private:
  void* addr_;
  size_t bytes_ = 0;
  IndexFileContents c_;
};

/// The checksum of the format (a set's, a section's, the header's).
uint64_t index_checksum(const void* p, size_t n) noexcept;
/// Whether a stored checksum disagrees with the bytes (never for the fuzz targets).
bool index_checksum_mismatch(uint64_t stored, const void* p, size_t n) noexcept;

/// Writes `c` (version set to the current one) to `f`, which the caller commits. Throws
/// UsageError if the spec is too long to store, IoError if the file cannot be written.
void write_index_file(io::AtomicFile& f, const IndexFileContents& c);

/// A FormatError for a damaged index file: names the file and what to do.
[[noreturn]] void damaged_index(const std::string& path, const std::string& what);

// ---- The index's write-ahead log (LiveIndex; docs/format.md): its path and header ----
// The header is what every user of an index needs to tell whether the file is up to date; the
// records after it are LiveIndex's (live_index.cpp).

inline constexpr size_t kLogHeaderBytes = 64;
/// The log of the index at `index_path`.
std::string log_path(const std::string& index_path);
/// The 64-byte header of a log whose changes apply to the index file of this identity.
std::string log_header(uint64_t identity);
/// The identity a log header names, or "" in `problem` (what is wrong) when `bytes` does not start
/// with a good header of this version.
uint64_t parse_log_header(std::string_view bytes, std::string& problem);
/// The bytes of changes in the index's log not yet folded into the index file of this identity:
/// 0 if there is no log, it is empty, it is not a log (LiveIndex::open says what is wrong), or it
/// names another saved state (folded already).
uint64_t unfolded_log_bytes(const std::string& index_path, uint64_t identity);

}  // namespace neardup::internal
