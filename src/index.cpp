#include "neardup/index.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal/flat_multimap.h"
#include "internal/fuzzing.h"
#include "internal/hash.h"
#include "internal/parallel.h"
#include "internal/sorted_merge.h"
#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/io/writer.h"
#include "neardup/lsh_index.h"

namespace neardup {

bool internal::g_fuzz_ignore_index_checksums = false;

namespace {

// ---- The file layout (docs/format.md) ----
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
  uint64_t checksum;  // XXH3-64 of every byte before it
};
static_assert(sizeof(Header) <= kHeaderBytes);

bool is_empty_sig(std::span<const SigValue> sig) noexcept {
  return std::all_of(sig.begin(), sig.end(), [](SigValue v) { return v == kEmptySigValue; });
}

// Format 1 differs from 2 only in the MinHash definition: its other indexes are read as they are.
constexpr uint32_t kMinHashV1IndexVersion = 1;

uint64_t checksum(const void* p, size_t n) noexcept { return internal::hash_bytes(p, n, 0x4E44555049445831ULL); }
// Whether a stored checksum disagrees with the bytes (never, for the fuzz targets).
bool checksum_mismatch(uint64_t stored, const void* p, size_t n) noexcept {
  return checksum(p, n) != stored && !internal::g_fuzz_ignore_index_checksums;
}

template <class T>
std::span<const T> section_span(const uint8_t* base, const SectionEntry& e) {
  return {reinterpret_cast<const T*>(base + e.offset), e.bytes / sizeof(T)};
}

}  // namespace

// ---- Sketching ----

IndexSketcher::IndexSketcher(const PipelineSpec& spec) : shingler_(spec.shingle), hasher_(spec) {}

void IndexSketcher::sketch(std::string_view text, IndexSketch& out) {
  out.set = shingler_.shingle_set(text);
  out.sig.resize(static_cast<size_t>(hasher_.num_perm()));
  hasher_.sketch(out.set, out.sig);
}

// ---- The mapping ----

struct NearDupIndex::Mapping {
  void* addr = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) ::munmap(addr, bytes);
  }
};

struct NearDupIndex::PendingBands {
  std::vector<internal::FlatMultimap> bands;
  std::vector<uint64_t> keys;  // scratch for insert
};

NearDupIndex::NearDupIndex(const PipelineSpec& spec) : spec_(spec.resolved()), pending_bands_(std::make_unique<PendingBands>()) {
  if (!uses_signatures(spec_.method))
    throw UsageError("a persistent index uses " NEARDUP_OPT_IS("method", "minhash") " or oph (LSH bands); bottomk and simhash are batch-only here");
  num_perm_ = static_cast<size_t>(spec_.num_perm);
  pending_bands_->bands.resize(static_cast<size_t>(spec_.lsh.bands));
}

NearDupIndex::~NearDupIndex() = default;

std::unique_ptr<NearDupIndex> NearDupIndex::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw IoError(std::string("cannot open the index: ") + std::strerror(errno) +
                  (errno == ENOENT ? "; create it with 'neardup index create'" : ""), ErrorPlace{path});
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw IoError(std::string("cannot read the index: ") + std::strerror(e), ErrorPlace{path});
  }
  const auto bytes = static_cast<size_t>(st.st_size);
  const auto bad = [&](const std::string& what) {
    return FormatError(path + ": " + what + "; the index is damaged or not a neardup index (rebuild it with 'neardup index create' and 'add')");
  };
  if (bytes < kHeaderBytes) {
    ::close(fd);
    throw bad("file of " + std::to_string(bytes) + " bytes is shorter than an index header");
  }
  auto map = std::make_unique<Mapping>();
  map->addr = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  map->bytes = bytes;
  ::close(fd);
  if (map->addr == MAP_FAILED) throw IoError(std::string("cannot map the index: ") + std::strerror(errno), ErrorPlace{path});
  const auto* base = static_cast<const uint8_t*>(map->addr);
  Header h;
  std::memcpy(&h, base, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) throw bad("no index magic at the start");
  if (h.endian != kEndianCheck) throw bad("written on a machine of the other byte order");
  if (h.version != kIndexFormatVersion && h.version != kMinHashV1IndexVersion)
    throw FormatError(std::string("index format version ") + std::to_string(h.version) + ", this neardup reads version " +
                      std::to_string(kIndexFormatVersion) + "; rebuild the index with this version", ErrorPlace{path});
  if (checksum_mismatch(h.checksum, base, offsetof(Header, checksum))) throw bad("header checksum mismatch");
  if (h.file_bytes != bytes)
    throw bad("file is " + std::to_string(bytes) + " bytes, the header says " + std::to_string(h.file_bytes) + " (truncated?)");
  if (h.spec_bytes >= sizeof h.spec) throw bad("spec too long");
  std::unique_ptr<NearDupIndex> idx;
  try {  // a spec that parses may still be refused when resolved (found by fuzz_index)
    idx = std::make_unique<NearDupIndex>(PipelineSpec::parse(std::string_view(h.spec, h.spec_bytes)));
  } catch (const Error& e) {
    throw bad(std::string("bad parameters: ") + e.what());
  }
  if (h.version == kMinHashV1IndexVersion && idx->spec_.method == SketchMethod::MinHash)
    throw FormatError("a " NEARDUP_OPT_IS("method", "minhash") " index of format version 1, whose signatures used the MinHash "
                      "definition before version 2 (minhash.h); rebuild it with 'neardup index create' and 'add', "
                      "or keep the neardup that made it", ErrorPlace{path});
  if (static_cast<uint32_t>(idx->spec_.num_perm) != h.num_perm || static_cast<uint32_t>(idx->spec_.lsh.bands) != h.bands ||
      static_cast<uint32_t>(idx->spec_.lsh.rows) != h.rows || (idx->spec_.verify == VerifyMode::Exact) != (h.has_sets != 0))
    throw bad("parameters disagree with the spec '" + std::string(h.spec, h.spec_bytes) + "'");
  const uint64_t n = h.documents;
  // Every document takes at least 8 bytes of id offsets: a larger count cannot fit the file
  // (and would overflow the section sizes computed from it).
  if (n > bytes / 8 || h.num_perm > 65536 || h.bands > 65536) throw bad("document or permutation count out of range");
  const uint64_t want[kSections] = {n * 8,
                                    h.sections[kIdBlob].bytes,
                                    n * h.num_perm * 4,
                                    h.has_sets ? n * 8 : 0,
                                    h.has_sets ? n * 8 : 0,
                                    h.sections[kSetValues].bytes,
                                    n * h.bands * 8,
                                    n * h.bands * 4};
  // Every byte is covered: the header page past the header and the padding between sections
  // must be zero, so that no flipped bit goes unnoticed.
  const auto zero = [&](uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i)
      if (base[i]) return false;
    return true;
  };
  if (!zero(sizeof(Header), kHeaderBytes)) throw bad("non-zero bytes after the header");
  for (int s = 0; s < kSections; ++s) {
    const SectionEntry& e = h.sections[s];
    const uint64_t next = s + 1 < kSections ? h.sections[s + 1].offset : h.file_bytes;
    if (e.offset > bytes || e.bytes > bytes - e.offset || next > bytes)
      throw bad(std::string("section '") + kSectionNames[s] + "' is out of place");
    if (next < e.offset + e.bytes || next - (e.offset + e.bytes) >= kAlign || !zero(e.offset + e.bytes, next))
      throw bad(std::string("bad padding after section '") + kSectionNames[s] + "'");
  }
  for (int s = 0; s < kSections; ++s) {
    const SectionEntry& e = h.sections[s];
    if (e.bytes != want[s] || e.offset % kAlign != 0 || e.offset < kHeaderBytes || e.offset > bytes || e.bytes > bytes - e.offset)
      throw bad(std::string("section '") + kSectionNames[s] + "' is out of place");
    // The shingle values carry one checksum per document, checked when used.
    if (s != kSetValues && checksum_mismatch(e.checksum, base + e.offset, e.bytes))
      throw bad(std::string("checksum mismatch in section '") + kSectionNames[s] + "'");
  }
  idx->base_n_ = n;
  idx->id_ends_ = section_span<uint64_t>(base, h.sections[kIdEnds]);
  idx->id_blob_ = std::string_view(reinterpret_cast<const char*>(base + h.sections[kIdBlob].offset), h.sections[kIdBlob].bytes);
  idx->sigs_ = section_span<SigValue>(base, h.sections[kSigs]);
  idx->set_ends_ = section_span<uint64_t>(base, h.sections[kSetEnds]);
  idx->set_sums_ = section_span<uint64_t>(base, h.sections[kSetSums]);
  idx->set_values_ = section_span<ShingleHash>(base, h.sections[kSetValues]);
  idx->band_keys_ = section_span<uint64_t>(base, h.sections[kBandKeys]);
  idx->band_docs_ = section_span<DocId>(base, h.sections[kBandDocs]);
  // Offsets must be non-decreasing and inside their blobs (a damaged file never reads astray).
  for (uint64_t i = 0; i < n; ++i) {
    if (idx->id_ends_[i] > idx->id_blob_.size() || (i && idx->id_ends_[i] < idx->id_ends_[i - 1]))
      throw bad("id offsets out of order");
    if (h.has_sets && (idx->set_ends_[i] > idx->set_values_.size() || (i && idx->set_ends_[i] < idx->set_ends_[i - 1])))
      throw bad("set offsets out of order");
  }
  for (const DocId d : idx->band_docs_)
    if (d >= n) throw bad("band entry names a document past the end");
  idx->live_ = n;
  idx->map_ = std::move(map);
  return idx;
}

std::string_view NearDupIndex::id(DocId d) const noexcept {
  if (d >= base_n_) return pending_ids_[d - base_n_];
  const uint64_t start = d ? id_ends_[d - 1] : 0;
  return id_blob_.substr(start, id_ends_[d] - start);
}

std::span<const SigValue> NearDupIndex::sig_of(DocId d) const noexcept {
  if (d >= base_n_) return std::span<const SigValue>(pending_sigs_).subspan((d - base_n_) * num_perm_, num_perm_);
  return sigs_.subspan(static_cast<size_t>(d) * num_perm_, num_perm_);
}

std::span<const ShingleHash> NearDupIndex::set_of(DocId d) const {
  if (d >= base_n_) return pending_sets_[d - base_n_];
  const uint64_t start = d ? set_ends_[d - 1] : 0;
  const auto s = set_values_.subspan(start, set_ends_[d] - start);
  if (checksum_mismatch(set_sums_[d], s.data(), s.size_bytes()))
    throw FormatError("index: the shingle set of document '" + std::string(id(d)) +
                      "' fails its checksum; the index file is damaged (rebuild it)");
  return s;
}

void NearDupIndex::query(const IndexSketch& q, double threshold, std::vector<IndexMatch>& out) const {
  out.clear();
  if (q.set.empty()) return;  // an empty document is never similar to anything
  const int bands = spec_.lsh.bands;
  std::vector<DocId> cand;
  for (int b = 0; b < bands; ++b) {
    const uint64_t key = signature_band_key(q.sig, b, spec_.lsh, spec_.shingle.seed);
    if (base_n_) {
      const auto keys = band_keys_.subspan(static_cast<size_t>(b) * base_n_, base_n_);
      const auto [lo, hi] = std::equal_range(keys.begin(), keys.end(), key);
      const auto docs = band_docs_.subspan(static_cast<size_t>(b) * base_n_, base_n_);
      for (auto it = lo; it != hi; ++it) cand.push_back(docs[static_cast<size_t>(it - keys.begin())]);
    }
    pending_bands_->bands[b].for_each(key, [&](DocId d) { cand.push_back(d); });
  }
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
  for (const DocId d : cand) {
    if (removed(d) || is_empty_sig(sig_of(d))) continue;
    const double s = spec_.verify == VerifyMode::Exact ? jaccard(q.set, set_of(d)) : estimate_jaccard(q.sig, sig_of(d));
    if (s + kSimilarityEpsilon >= threshold) out.push_back({d, s});
  }
  std::sort(out.begin(), out.end(), [](const IndexMatch& a, const IndexMatch& b) {
    return a.similarity != b.similarity ? a.similarity > b.similarity : a.doc < b.doc;
  });
}

// Built once, on the first call from any thread: queries (contains) are documented as safe from
// many threads at once, and a lazily filled map without the once-flag was a data race.
void NearDupIndex::build_id_map() const {
  std::call_once(id_map_once_, [this] {
    id_map_.reserve(slots());
    for (DocId d = 0; d < slots(); ++d)
      if (!removed(d)) id_map_.emplace(id(d), d);
    id_map_built_.store(true, std::memory_order_release);
  });
}

bool NearDupIndex::contains(std::string_view id) const {
  build_id_map();
  return id_map_.count(id) != 0;
}

DocId NearDupIndex::insert(std::string_view doc_id, IndexSketch sketch) {
  if (sketch.sig.size() != num_perm_) throw UsageError("index insert: signature of the wrong length");
  const auto d = static_cast<DocId>(slots());
  if (slots() >= UINT32_MAX) throw UsageError("index: more than 2^32 - 1 documents");
  pending_ids_.emplace_back(doc_id);
  pending_sigs_.insert(pending_sigs_.end(), sketch.sig.begin(), sketch.sig.end());
  pending_sets_.push_back(spec_.verify == VerifyMode::Exact ? std::move(sketch.set) : std::vector<ShingleHash>{});
  // Empty documents (all-0xFFFFFFFF signatures) would share every band with each other: they
  // are stored but never bucketed, as in the batch pipeline.
  if (!is_empty_sig(sketch.sig)) {
    // All keys first, their slots prefetched, then the inserts: the bands' cache misses overlap.
    auto& tables = pending_bands_->bands;
    auto& keys = pending_bands_->keys;
    const int bands = spec_.lsh.bands;
    keys.resize(static_cast<size_t>(bands));
    for (int b = 0; b < bands; ++b) {
      keys[b] = signature_band_key(sketch.sig, b, spec_.lsh, spec_.shingle.seed);
      tables[b].prefetch(keys[b]);
    }
    for (int b = 0; b < bands; ++b) tables[b].insert(keys[b], d);
  }
  if (!removed_.empty()) removed_.push_back(0);
  ++live_;
  if (id_map_built_.load(std::memory_order_acquire)) id_map_.emplace(pending_ids_.back(), d);
  return d;
}

size_t NearDupIndex::remove(std::span<const std::string> ids) {
  build_id_map();
  size_t found = 0;
  for (const auto& s : ids) {
    const auto it = id_map_.find(s);
    if (it == id_map_.end()) continue;
    if (removed_.empty()) removed_.assign(slots(), 0);
    removed_[it->second] = 1;
    id_map_.erase(it);
    --live_;
    ++found;
  }
  return found;
}

void NearDupIndex::save(const std::string& path) const {
  const bool sets = spec_.verify == VerifyMode::Exact;
  const int bands = spec_.lsh.bands;
  std::vector<DocId> keep;  // old slot of each saved document
  for (DocId d = 0; d < slots(); ++d)
    if (!removed(d)) keep.push_back(d);
  const uint64_t n = keep.size();
  std::vector<uint64_t> id_ends(n), set_ends(sets ? n : 0), set_sums(sets ? n : 0);
  std::string id_blob;
  std::vector<SigValue> sigs(n * num_perm_);
  std::vector<ShingleHash> values;
  std::vector<uint64_t> band_keys(n * bands);
  std::vector<DocId> band_docs(n * bands);
  for (uint64_t i = 0; i < n; ++i) {
    const DocId d = keep[i];
    id_blob += id(d);
    id_ends[i] = id_blob.size();
    const auto sig = sig_of(d);
    std::copy(sig.begin(), sig.end(), sigs.begin() + static_cast<std::ptrdiff_t>(i * num_perm_));
    if (sets) {
      const auto s = set_of(d);
      values.insert(values.end(), s.begin(), s.end());
      set_ends[i] = values.size();
      set_sums[i] = checksum(s.data(), s.size_bytes());
    }
  }
  // Each band: (key, doc) sorted by key, then doc. Empty documents are listed too (a regular
  // layout); queries skip them (query() never pairs an empty document).
  std::vector<std::pair<uint64_t, DocId>> tmp(n);
  for (int b = 0; b < bands; ++b) {
    for (uint64_t i = 0; i < n; ++i) {
      const auto sig = std::span<const SigValue>(sigs).subspan(i * num_perm_, num_perm_);
      tmp[i] = {signature_band_key(sig, b, spec_.lsh, spec_.shingle.seed), static_cast<DocId>(i)};
    }
    std::sort(tmp.begin(), tmp.end());
    for (uint64_t i = 0; i < n; ++i) {
      band_keys[b * n + i] = tmp[i].first;
      band_docs[b * n + i] = tmp[i].second;
    }
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kIndexFormatVersion;
  h.endian = kEndianCheck;
  h.documents = n;
  h.num_perm = static_cast<uint32_t>(num_perm_);
  h.bands = static_cast<uint32_t>(bands);
  h.rows = static_cast<uint32_t>(spec_.lsh.rows);
  h.has_sets = sets;
  const std::string spec = spec_.to_string();
  if (spec.size() >= sizeof h.spec) throw UsageError("index: the spec is too long to store");
  h.spec_bytes = static_cast<uint32_t>(spec.size());
  std::memcpy(h.spec, spec.data(), spec.size());
  const std::pair<const void*, uint64_t> data[kSections] = {
      {id_ends.data(), n * 8},         {id_blob.data(), id_blob.size()},   {sigs.data(), sigs.size() * 4},
      {set_ends.data(), set_ends.size() * 8}, {set_sums.data(), set_sums.size() * 8}, {values.data(), values.size() * 8},
      {band_keys.data(), band_keys.size() * 8}, {band_docs.data(), band_docs.size() * 4}};
  uint64_t off = kHeaderBytes;
  for (int s = 0; s < kSections; ++s) {
    h.sections[s] = {off, data[s].second, checksum(data[s].first, data[s].second)};
    off = (off + data[s].second + kAlign - 1) / kAlign * kAlign;
  }
  h.file_bytes = off;
  h.checksum = checksum(&h, offsetof(Header, checksum));
  io::AtomicFile f(path);
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
  f.commit();
}

IndexStats NearDupIndex::stats() const {
  IndexStats s;
  s.documents = live_;
  s.file_bytes = map_ ? map_->bytes : 0;
  s.id_bytes = id_blob_.size() + id_ends_.size_bytes();
  s.signature_bytes = sigs_.size_bytes();
  s.band_bytes = band_keys_.size_bytes() + band_docs_.size_bytes();
  s.set_bytes = set_values_.size_bytes() + set_ends_.size_bytes() + set_sums_.size_bytes();
  s.shingles = set_values_.size();
  for (int b = 0; b < spec_.lsh.bands && base_n_; ++b) {
    const auto keys = band_keys_.subspan(static_cast<size_t>(b) * base_n_, base_n_);
    for (size_t i = 0; i < keys.size();) {
      size_t j = i + 1;
      while (j < keys.size() && keys[j] == keys[i]) ++j;
      s.largest_bucket = std::max<uint64_t>(s.largest_bucket, j - i);
      i = j;
    }
  }
  return s;
}

WalkStats index_walk(NearDupIndex& index, const io::InputSet& inputs, const io::ReaderOptions& reader,
                     const WalkOptions& options, const std::function<void(const WalkRecord&)>& fn) {
  constexpr size_t kBatch = 1024;
  const int threads = internal::resolve_threads(options.threads);
  std::vector<IndexSketcher> sketchers;
  for (int t = 0; t < threads; ++t) sketchers.emplace_back(index.spec());
  io::RecordReader rr(inputs, reader);
  struct Owned {
    std::string id, text, raw;
    size_t source;
    uint64_t line;
  };
  std::vector<Owned> batch;
  std::vector<IndexSketch> sketches(kBatch);
  std::vector<IndexMatch> matches;
  WalkStats st;
  io::Record r;
  bool more = true;
  while (more) {
    batch.clear();
    while (batch.size() < kBatch && (more = rr.next(r)))
      batch.push_back({std::string(r.id), std::string(r.text), std::string(r.raw), r.source, r.line});
    internal::parallel_for(batch.size(), threads, [&](size_t i, size_t t) { sketchers[t].sketch(batch[i].text, sketches[i]); });
    for (size_t i = 0; i < batch.size(); ++i) {
      Owned& b = batch[i];
      WalkRecord w;
      w.record.id = b.id;
      w.record.text = b.text;
      w.record.raw = b.raw;
      w.record.source = b.source;
      w.record.line = b.line;
      ++st.documents;
      if (sketches[i].set.empty()) ++st.empty;
      if (options.threshold <= 1.0)
        index.query(sketches[i], options.threshold, matches);
      else
        matches.clear();  // nothing can be that similar: add without querying
      if (!matches.empty()) {
        w.matches = matches;
        ++st.duplicates;
      } else if (options.insert_new) {
        if (index.contains(b.id)) {
          switch (options.on_duplicate_id) {
            case OnDuplicateId::Error:
              throw FormatError(inputs.sources()[b.source].display + (b.line ? ":" + std::to_string(b.line) : std::string()) +
                                ": id '" + b.id +
                                "' is already in the index; remove it with 'neardup index remove', or pass "
                                NEARDUP_OPT_IS("on_duplicate_id", "skip") " or replace");
            case OnDuplicateId::Skip:
              w.id_skipped = true;
              ++st.id_skipped;
              break;
            case OnDuplicateId::Replace:
              index.remove(std::span<const std::string>(&b.id, 1));
              ++st.replaced;
              break;
          }
        }
        if (!w.id_skipped) {
          index.insert(b.id, std::move(sketches[i]));
          w.inserted = true;
          ++st.inserted;
        }
      }
      fn(w);
    }
  }
  st.reader = rr.stats();
  if (st.documents == 0 && st.reader.skipped > 0)
    throw FormatError("every record was bad (" + std::to_string(st.reader.skipped) + " skipped, the first: " +
                      st.reader.first_skips.front() + "); check " NEARDUP_OPT("text_field") ", " NEARDUP_OPT("format") " and the inputs");
  return st;
}

std::unique_ptr<NearDupIndex> NearDupIndex::open_for_update(const std::string& path) {
  auto lock = std::make_unique<IndexLock>(path);
  auto idx = open(path);
  idx->lock_ = std::move(lock);
  idx->update_path_ = path;
  return idx;
}

std::unique_ptr<NearDupIndex> NearDupIndex::create(const std::string& path, const PipelineSpec& spec) {
  auto lock = std::make_unique<IndexLock>(path);
  auto idx = std::make_unique<NearDupIndex>(spec);
  idx->save(path);
  idx->lock_ = std::move(lock);
  idx->update_path_ = path;
  return idx;
}

void NearDupIndex::save() const {
  if (!lock_) throw UsageError("this index was not opened for update (NearDupIndex::open_for_update); save it with save(path)");
  save(update_path_);
}

IndexLock::IndexLock(const std::string& index_path) {
  const std::string p = index_path + ".lock";
  fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw IoError(std::string("cannot create the index lock file: ") + std::strerror(errno), ErrorPlace{p});
  if (::flock(fd_, LOCK_EX) != 0) {
    const int e = errno;
    ::close(fd_);
    throw IoError(std::string("cannot lock the index: ") + std::strerror(e), ErrorPlace{p});
  }
}

IndexLock::~IndexLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace neardup
