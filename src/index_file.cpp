#include "index_file.h"
#include "io/retry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "internal/fuzzing.h"
#include "internal/hash.h"
#include "neardup/error.h"
#include "neardup/index.h"
#include "neardup/io/writer.h"

namespace neardup::internal {

bool g_fuzz_ignore_index_checksums = false;

namespace {

constexpr char kMagic[8] = {'N', 'D', 'U', 'P', 'I', 'D', 'X', '\n'};
constexpr uint32_t kEndianCheck = 0x01020304u;
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kAlign = 64;
enum Section : int { kIdEnds, kIdBlob, kSigs, kSetEnds, kSetSums, kSetValues, kBandKeys, kBandDocs, kSections };
const char* const kSectionNames[kSections] = {"id offsets", "ids", "signatures", "set offsets", "set checksums",
                                              "shingle values", "band keys", "band documents"};

struct SectionEntry {
  uint64_t offset, bytes, checksum;
};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t endian;
  uint64_t file_bytes;
  uint64_t documents;
  uint32_t num_perm, bands, rows, has_sets;
  uint32_t spec_bytes;
  uint32_t reserved;
  char spec[256];
  SectionEntry sections[kSections];
  uint64_t checksum;  // of every byte before it
};
static_assert(sizeof(Header) <= kHeaderBytes);

template <class T>
std::span<const T> section_span(const uint8_t* base, const SectionEntry& e) {
  return {reinterpret_cast<const T*>(base + e.offset), e.bytes / sizeof(T)};
}

// The header: magic, byte order, version, checksum, size, counts in range.
void check_header(const std::string& path, const Header& h, const uint8_t* base, size_t bytes) {
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) damaged_index(path, "no index magic at the start");
  if (h.endian != kEndianCheck) damaged_index(path, "written on a machine of the other byte order");
  if (h.version != kIndexFormatVersion && h.version != kMinHashV1IndexVersion)
    throw FormatError(std::string("index format version ") + std::to_string(h.version) + ", this neardup reads version " +
                          std::to_string(kIndexFormatVersion) + "; rebuild the index with this version",
                      ErrorPlace{path});
  if (index_checksum_mismatch(h.checksum, base, offsetof(Header, checksum))) damaged_index(path, "header checksum mismatch");
  if (h.file_bytes != bytes)
    damaged_index(path, "file is " + std::to_string(bytes) + " bytes, the header says " + std::to_string(h.file_bytes) + " (truncated?)");
  if (h.spec_bytes >= sizeof h.spec) damaged_index(path, "spec too long");
  // Every document takes at least 8 bytes of id offsets: a larger count cannot fit the file
  // (and would overflow the section sizes computed from it).
  if (h.documents > bytes / 8 || h.num_perm > 65536 || h.bands > 65536) damaged_index(path, "document or permutation count out of range");
}

// The sections: each where and as large as the counts say, aligned, followed by zero padding
// (every byte is covered, so that no flipped bit goes unnoticed), with its checksum.
void check_sections(const std::string& path, const Header& h, const uint8_t* base, size_t bytes) {
  const uint64_t n = h.documents;
  const uint64_t want[kSections] = {n * 8, h.sections[kIdBlob].bytes, n * h.num_perm * 4, h.has_sets ? n * 8 : 0,
                                    h.has_sets ? n * 8 : 0, h.sections[kSetValues].bytes, n * h.bands * 8, n * h.bands * 4};
  const auto zero = [&](uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i)
      if (base[i]) return false;
    return true;
  };
  if (!zero(sizeof(Header), kHeaderBytes)) damaged_index(path, "non-zero bytes after the header");
  for (int s = 0; s < kSections; ++s) {
    const SectionEntry& e = h.sections[s];
    const uint64_t next = s + 1 < kSections ? h.sections[s + 1].offset : h.file_bytes;
    if (e.offset > bytes || e.bytes > bytes - e.offset || next > bytes)
      damaged_index(path, std::string("section '") + kSectionNames[s] + "' is out of place");
    if (next < e.offset + e.bytes || next - (e.offset + e.bytes) >= kAlign || !zero(e.offset + e.bytes, next))
      damaged_index(path, std::string("bad padding after section '") + kSectionNames[s] + "'");
    if (e.bytes != want[s] || e.offset % kAlign != 0 || e.offset < kHeaderBytes)
      damaged_index(path, std::string("section '") + kSectionNames[s] + "' is out of place");
  }
  for (int s = 0; s < kSections; ++s) {
    const SectionEntry& e = h.sections[s];
    // The shingle values carry one checksum per document, checked when used.
    if (s != kSetValues && index_checksum_mismatch(e.checksum, base + e.offset, e.bytes))
      damaged_index(path, std::string("checksum mismatch in section '") + kSectionNames[s] + "'");
  }
}

// Offsets non-decreasing and inside their blobs, documents in range: a damaged file never reads
// astray.
void check_offsets(const std::string& path, const IndexFileContents& c) {
  for (uint64_t i = 0; i < c.documents; ++i) {
    if (c.id_ends[i] > c.id_blob.size() || (i && c.id_ends[i] < c.id_ends[i - 1])) damaged_index(path, "id offsets out of order");
    if (c.has_sets && (c.set_ends[i] > c.set_values.size() || (i && c.set_ends[i] < c.set_ends[i - 1])))
      damaged_index(path, "set offsets out of order");
  }
  for (const DocId d : c.band_docs)
    if (d >= c.documents) damaged_index(path, "band entry names a document past the end");
}

}  // namespace

void damaged_index(const std::string& path, const std::string& what) {
  throw FormatError(what + "; the index is damaged or not a neardup index (rebuild it with 'neardup index create' and 'add')",
                    ErrorPlace{path});
}

uint64_t index_checksum(const void* p, size_t n) noexcept { return hash_bytes(p, n, 0x4E44555049445831ULL); }

bool index_checksum_mismatch(uint64_t stored, const void* p, size_t n) noexcept {
  return index_checksum(p, n) != stored && !g_fuzz_ignore_index_checksums;
}

MappedIndexFile::MappedIndexFile(const std::string& path) : addr_(MAP_FAILED) {
  const int fd = io::retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0)
    throw IoError(std::string("cannot open the index: ") + std::strerror(errno) +
                      (errno == ENOENT ? "; create it with 'neardup index create'" : ""),
                  ErrorPlace{path});
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw IoError(std::string("cannot read the index: ") + std::strerror(e), ErrorPlace{path});
  }
  bytes_ = static_cast<size_t>(st.st_size);
  if (bytes_ < kHeaderBytes) {
    ::close(fd);
    damaged_index(path, "file of " + std::to_string(bytes_) + " bytes is shorter than an index header");
  }
  addr_ = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (addr_ == MAP_FAILED) throw IoError(std::string("cannot map the index: ") + std::strerror(errno), ErrorPlace{path});
  try {
    const auto* base = static_cast<const uint8_t*>(addr_);
    Header h;
    std::memcpy(&h, base, sizeof h);
    check_header(path, h, base, bytes_);
    check_sections(path, h, base, bytes_);
    c_.version = h.version;
    c_.identity = h.checksum;
    c_.spec.assign(h.spec, h.spec_bytes);
    c_.documents = h.documents;
    c_.num_perm = h.num_perm;
    c_.bands = h.bands;
    c_.rows = h.rows;
    c_.has_sets = h.has_sets != 0;
    c_.id_ends = section_span<uint64_t>(base, h.sections[kIdEnds]);
    c_.id_blob = std::string_view(reinterpret_cast<const char*>(base + h.sections[kIdBlob].offset), h.sections[kIdBlob].bytes);
    c_.sigs = section_span<SigValue>(base, h.sections[kSigs]);
    c_.set_ends = section_span<uint64_t>(base, h.sections[kSetEnds]);
    c_.set_sums = section_span<uint64_t>(base, h.sections[kSetSums]);
    c_.set_values = section_span<ShingleHash>(base, h.sections[kSetValues]);
    c_.band_keys = section_span<uint64_t>(base, h.sections[kBandKeys]);
    c_.band_docs = section_span<DocId>(base, h.sections[kBandDocs]);
    check_offsets(path, c_);
  } catch (...) {
    ::munmap(addr_, bytes_);
    throw;
  }
}

MappedIndexFile::~MappedIndexFile() {
  if (addr_ != MAP_FAILED) ::munmap(addr_, bytes_);
}

namespace {
constexpr char kLogMagic[8] = {'N', 'D', 'U', 'P', 'W', 'A', 'L', '\n'};
constexpr uint32_t kLogVersion = 1;
constexpr uint64_t kLogSeed = 0x4E44555057414C31ULL;  // "NDUPWAL1"
}  // namespace

std::string log_path(const std::string& index_path) { return index_path + ".wal"; }

// Magic, version, byte-order check, the identity, zeros, and at offset 56 a checksum of the bytes
// before it.
std::string log_header(uint64_t identity) {
  std::string h(kLogHeaderBytes, '\0');
  std::memcpy(h.data(), kLogMagic, sizeof kLogMagic);
  std::memcpy(h.data() + 8, &kLogVersion, 4);
  std::memcpy(h.data() + 12, &kEndianCheck, 4);
  std::memcpy(h.data() + 16, &identity, 8);
  const uint64_t sum = hash_bytes(h.data(), kLogHeaderBytes - 8, kLogSeed);
  std::memcpy(h.data() + kLogHeaderBytes - 8, &sum, 8);
  return h;
}

uint64_t parse_log_header(std::string_view bytes, std::string& problem) {
  problem.clear();
  if (bytes.size() < kLogHeaderBytes || std::memcmp(bytes.data(), kLogMagic, sizeof kLogMagic) != 0) {
    problem = "no log header";
    return 0;
  }
  uint32_t version, endian;
  uint64_t identity, sum;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&endian, bytes.data() + 12, 4);
  std::memcpy(&identity, bytes.data() + 16, 8);
  std::memcpy(&sum, bytes.data() + kLogHeaderBytes - 8, 8);
  if (hash_bytes(bytes.data(), kLogHeaderBytes - 8, kLogSeed) != sum)
    problem = "log header checksum mismatch";
  else if (version != kLogVersion || endian != kEndianCheck)
    problem = "log version " + std::to_string(version) + " (this neardup writes version " + std::to_string(kLogVersion) + ")";
  return identity;
}

uint64_t unfolded_log_bytes(const std::string& index_path, uint64_t identity) {
  const int fd = io::retry_eintr([&] { return ::open(log_path(index_path).c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0) return 0;
  char h[kLogHeaderBytes];
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && ::pread(fd, h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  ::close(fd);
  if (!ok) return 0;
  std::string problem;
  const uint64_t base = parse_log_header(std::string_view(h, sizeof h), problem);
  const auto bytes = static_cast<uint64_t>(st.st_size);
  return problem.empty() && base == identity && bytes > kLogHeaderBytes ? bytes - kLogHeaderBytes : 0;
}

void write_index_file(io::AtomicFile& f, const IndexFileContents& c) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kIndexFormatVersion;
  h.endian = kEndianCheck;
  h.documents = c.documents;
  h.num_perm = c.num_perm;
  h.bands = c.bands;
  h.rows = c.rows;
  h.has_sets = c.has_sets;
  if (c.spec.size() >= sizeof h.spec) throw UsageError("index: the spec is too long to store");
  h.spec_bytes = static_cast<uint32_t>(c.spec.size());
  std::memcpy(h.spec, c.spec.data(), c.spec.size());
  const std::pair<const void*, uint64_t> data[kSections] = {
      {c.id_ends.data(), c.id_ends.size_bytes()},       {c.id_blob.data(), c.id_blob.size()},
      {c.sigs.data(), c.sigs.size_bytes()},             {c.set_ends.data(), c.set_ends.size_bytes()},
      {c.set_sums.data(), c.set_sums.size_bytes()},     {c.set_values.data(), c.set_values.size_bytes()},
      {c.band_keys.data(), c.band_keys.size_bytes()},   {c.band_docs.data(), c.band_docs.size_bytes()}};
  uint64_t off = kHeaderBytes;
  for (int s = 0; s < kSections; ++s) {
    h.sections[s] = {off, data[s].second, index_checksum(data[s].first, data[s].second)};
    off = (off + data[s].second + kAlign - 1) / kAlign * kAlign;
  }
  h.file_bytes = off;
  h.checksum = index_checksum(&h, offsetof(Header, checksum));
  std::string page(kHeaderBytes, '\0');
  std::memcpy(page.data(), &h, sizeof h);
  f.write(page);
  uint64_t at = kHeaderBytes;
  const std::string zeros(kAlign, '\0');
  for (int s = 0; s < kSections; ++s) {
    f.write(std::string_view(static_cast<const char*>(data[s].first), data[s].second));
    at += data[s].second;
    const uint64_t pad = (kAlign - at % kAlign) % kAlign;
    f.write(std::string_view(zeros.data(), pad));
    at += pad;
  }
}

}  // namespace neardup::internal
