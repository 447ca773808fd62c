// The run's expected memory, from a sample of its inputs, and what a limit on it makes spill.
#include "pipeline/impl.h"

#include <sys/statvfs.h>

#include "io/raw_records.h"

namespace neardup {

namespace {

std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

}  // namespace

uint64_t available_memory() noexcept {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  std::fclose(f);
  return static_cast<uint64_t>(kb) * 1024;
}

uint64_t default_memory_limit() noexcept { return available_memory() / 5 * 4; }

void Pipeline::Impl::choose_spill() {
  const uint64_t limit = options_.tuning.memory_limit;
  if (limit == 0 || options_.tuning.spill_band_keys || options_.tuning.spill_documents) return;
  const MemoryEstimate m = estimate_memory(kSampleBytes);
  if (!m.spills_under(limit)) return;
  const std::string dir = io::temp_directory(options_.tuning.temp_dir);
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0) {
    const double free = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
    if (free < m.spill_disk)
      throw IoError("the expected memory (" + megabytes(m.peak()) + ") is over the memory limit (" + megabytes(static_cast<double>(limit)) +
                    "), and spilling needs " + megabytes(m.spill_disk) + " free in " + dir + ", which has " +
                    megabytes(free) + "; set TMPDIR to a directory on a larger disk, or raise the limit");
  }
  options_.tuning.spill_band_keys = m.spill_keys;
  options_.tuning.spill_documents = true;
}

// The bands the chunked search works at once with the band keys spilled. Each holds the entries
// of the documents whose key may repeat, 24 bytes each with its sort's copy: counted for a
// quarter of the documents (15% of 10 million short documents with 43% near-copies). Under a
// memory limit, no more bands at once than a third of it holds: at 1 GB, two for 10 million
// documents, one for 50 million.
int Pipeline::Impl::spilled_search_threads(double n) const noexcept {
  const double per_band = 0.25 * n * 24.0;
  const double limit = static_cast<double>(options_.tuning.memory_limit);
  if (limit <= 0 || per_band <= 0) return threads_;
  return static_cast<int>(std::clamp(std::floor(limit / 3 / per_band), 1.0, static_cast<double>(std::max(threads_, 1))));
}

uint64_t Pipeline::Impl::state_bytes() const noexcept { return first_pass_state_ > 0 ? first_pass_state_ : docs_.bytes() + sketches_.bytes(); }

// What the run's buffers take besides its state (the `fixed` part of estimate_memory): the
// program, the reading and sketching threads' batches and scratch, the writer's buffers. Of
// those, `first_pass_only` (optional) gets what a first pass over texts of the sample's kind
// holds: neither the writer's buffers nor the pieces of a text longer than the sample shows.
double Pipeline::Impl::buffer_bytes(const io::InputSample& in, const Shingler& shingler, double* first_pass_only) const {
  const double n = in.records;
  double b = 0;
  // The program, and per thread the batches of about 1 MiB of records (raw, parsed, sketched)
  // queued and in flight with their shingle buffers (measured: BENCHMARKS.md).
  b += 10.0 * (1 << 20) + std::min(28.0 * (1 << 20) * threads_, 1.5 * in.data_bytes);
  // The reader's free buffers kept for reuse, where files are read with read(2) rather than mapped
  // (io::MemoryMap): on the kernel tree the peak was 13 MB higher read than mapped. Where they are
  // mapped, the parsers keep as much in all for long lines' word text instead (io::JsonlParser).
  b += std::min(static_cast<double>(io::kKeptReadBufferBytes), in.data_bytes);
  // The buffers of kept records written directly to the disk (io::AtomicFile::append_from).
  const double direct = std::min(static_cast<double>(io::kDirectBufferBytes * io::kDirectBuffers), in.data_bytes);
  b += direct;
  // Word text (io::JsonlParser): each thread keeps the copy of the longest text below 4 MiB it
  // has read, escapes blanked; records of that size are likely among many shorter ones.
  constexpr auto kWordTextLine = static_cast<double>(io::kWordTextMaxLine);
  if (inputs_->all_jsonl() && Shingler::reads_words_only(spec_.shingle) && n > 0 && in.data_bytes / n < kWordTextLine)
    b += std::min(kWordTextLine * threads_, in.data_bytes);
  // Texts of kSplitBytes or more are shingled in pieces, and each thread keeps its pieces' word
  // and shingle buffers from one such text to the next (up to about 6 x kPieceBytes, measured:
  // BENCHMARKS.md). Only inputs that can hold such a text pay it.
  double pieces = 0;
  if (shingler.splits_at_spaces() && in.data_bytes >= static_cast<double>(kSplitBytes))
    pieces = 6.0 * static_cast<double>(DocumentSketcher::kPieceBytes) * threads_;
  b += pieces;
  // A record being worked holds its line, its parsed text and its shingling's scratch: per byte of
  // the record, 1.35 with minhash and oph (a long text is shingled a piece at a time), 3.0 with
  // SimHash and 3.8 with bottom-k, measured on one record of 55 MB against 55 records of 1 MB
  // (BENCHMARKS.md), and counted here with a margin. For the average record, on as many threads
  // as work at once; the sample cannot see a few records much longer than the rest
  // (docs/robustness.md).
  if (n > 0) {
    const double per_byte_in_flight = spec_.method == SketchMethod::SimHash ? 3.2 : spec_.method == SketchMethod::BottomK ? 4.0 : 1.5;
    b += per_byte_in_flight * (in.data_bytes / n) * std::min(static_cast<double>(threads_), std::ceil(n));
  }
  if (first_pass_only) *first_pass_only = b - direct - (n > 0 && in.data_bytes / n < static_cast<double>(kSplitBytes) ? pieces : 0);
  return b;
}

MemoryEstimate Pipeline::Impl::estimate_memory(uint64_t sample_bytes) const {
  if (last_estimate_ && last_estimate_->first == sample_bytes) return last_estimate_->second;
  MemoryEstimate m;
  Shingler shingler(spec_.shingle);
  double distinct = 0;  // shingles, distinct per document, over the sample
  m.input = io::sample_inputs(*inputs_, options_.reader, sample_bytes,
                              [&](std::string_view, std::string_view text) { distinct += static_cast<double>(shingler.shingle_set(text).size()); });
  const double n = m.input.records;
  // Distinct shingles per byte of text sampled, times the text of an average document. When no
  // text could be sampled (no record short enough to read whole), one distinct shingle per 6
  // bytes of text with word shingles, one per byte with character shingles: the most we have
  // measured on real text (source code; byte n-grams of unique text).
  const double per_byte = m.input.sampled_text_bytes > 0 ? distinct / static_cast<double>(m.input.sampled_text_bytes)
                          : spec_.shingle.kind == ShingleKind::Words ? 1.0 / 6
                                                                      : 1.0;
  const double per_doc_distinct = n > 0 ? per_byte * m.input.text_bytes / n : 0;
  double fixed = 0;  // bytes that do not grow with the documents
  // Kept for the whole run: the id and where it ends, the text length, the empty flag, the
  // record's position (JSONL), and the sketch (below).
  double table_per_doc = (n > 0 ? m.input.id_bytes / n : 0) + sizeof(uint64_t) + sizeof(uint32_t);
  if (inputs_->all_jsonl()) table_per_doc += sizeof(io::RecordPos);
  double per_doc = table_per_doc + 1;
  // Spilled, the document table goes to disk (RunTuning::spill_documents).
  m.spill_disk = n * table_per_doc;
  double search_per_doc = 0, spilled_search_per_doc = 0;
  const size_t k = static_cast<size_t>(spec_.num_perm);
  switch (spec_.method) {
    case SketchMethod::MinHash:
    case SketchMethod::Oph: {
      const size_t bands = static_cast<size_t>(spec_.lsh.bands);
      const bool keys_only = spec_.verify == VerifyMode::Exact && bands * sizeof(uint64_t) < k * sizeof(SigValue);
      const double key_bytes = narrow_keys_for(n, per_doc_distinct) ? 4 : 8;
      per_doc += keys_only ? static_cast<double>(bands) * key_bytes : static_cast<double>(k * sizeof(SigValue));
      const LshMemory lsh = lsh_search_memory(spec_.lsh, threads_, keys_only ? bands : 1, keys_only && key_bytes == 4);
      // The arrays round up to huge pages only once they pass one (internal/big_array.h).
      const double array_bytes = n * (keys_only ? key_bytes : static_cast<double>(k * sizeof(SigValue)));
      if (array_bytes > static_cast<double>(2 << 20)) fixed += lsh.fixed;
      search_per_doc = lsh.per_document;
      if (keys_only) {
        // Spilled, the keys go to disk, and each band in flight holds two bit tables (2 bits a
        // document, at least 8 KiB and at most 128 MiB each) and the entries that pass them, 24
        // bytes each with the sort's copy: the documents in buckets and about 1 in 16 of the
        // rest, counted as a quarter of the documents (15% of 10 million short documents with
        // 43% near-copies). Each band's buckets then wait on disk for the merge (a size and the
        // documents: at most 6 B per document and band), which holds the merged buckets, about
        // 8 B per document (the same corpora).
        m.spill_disk += n * static_cast<double>(bands * (sizeof(uint64_t) + 6));
        m.spill_keys = true;
        const double workers = std::min<double>(spilled_search_threads(n), static_cast<double>(bands));
        spilled_search_per_doc = workers * (0.25 + 0.25 * 24.0) + 8.0 + (n > 0 ? workers * 2.0 * (8 << 10) / n : 0);
      }
      // A dedup tells the copies of a text apart (find_text_copies): 16 B of text hash per
      // document, then 24 B per document and as much again for the sort; let go before the
      // search (so the larger of the two counts).
      // Spilled, the text hashes go to disk, and are read back in order.
      if (spec_.verify == VerifyMode::Exact && options_.tuning.collapse_copies) {
        search_per_doc = std::max(search_per_doc, 64.0);
        if (keys_only) m.spill_disk += n * static_cast<double>(sizeof(TextHash));
      }
      break;
    }
    case SketchMethod::BottomK: {
      const double values = std::min(per_doc_distinct, static_cast<double>(spec_.sketch_size));
      per_doc += values * sizeof(SigValue) + sizeof(uint64_t);
      search_per_doc = fingerprint_join_bytes_per_document(values);
      break;
    }
    case SketchMethod::SimHash:
      per_doc += sizeof(uint64_t);
      search_per_doc = kSimHashSearchBytesPerDocument;
      // Each thread's SimHasher keeps its tables for distinct shingles: up to 20 MiB, reached
      // only by documents of 2^18 shingles (80 B each; a document has at most one per 2 bytes).
      fixed += static_cast<double>(threads_) *
               std::min(static_cast<double>(SimHasher::kept_scratch_bytes(spec_.weights)), 40.0 * m.input.data_bytes);
      break;
    case SketchMethod::Exact:
      break;  // the sets themselves, below (verify_per_document)
  }
  // The duplicate-id check sorts 2 x 16 bytes per document before the search starts (spilled,
  // only the ids whose hash may repeat).
  search_per_doc = std::max(search_per_doc, 32.0);
  double first_pass_buffers = 0;
  fixed += buffer_bytes(m.input, shingler, &first_pass_buffers);
  m.per_document = per_doc;
  m.state = n * per_doc + fixed;
  m.search = n * search_per_doc;
  m.spill_saves = m.spill_disk;
  if (m.spill_keys) {
    // With the band keys spilled too, the peak is the largest of three stages, each measured on
    // short documents with 43% near-copies (1, 10 and 50 million; BENCHMARKS.md). The first pass
    // holds its buffers, a flag per document and the sort of the text hashes that may repeat
    // (24 B each, for up to half the documents; in parts of a quarter of the limit at most:
    // find_text_copies). After it, the run holds its own buffers (the program, the reader's kept
    // buffers, the writer's, and a group's sets: about its text,
    // RunTuning::verify_group_bytes at most unless a component is larger) and, in the search,
    // spilled_search_per_doc; in verification, while grouping, the merged buckets (about 8 B
    // per document), flags (2 B), the copies' originals (8 B per copy) and a union-find (4 B
    // per document in buckets),
    // and then, group by group, the keeper and flags (8 B per document), the copies' originals
    // and the removed documents' similarities (12 B each): 19 B per document at the most
    // (measured 17-18 at 10 and 50 million).
    const double first_pass = first_pass_buffers + n * 13.0;
    const double buffers = 10.0 * (1 << 20) + std::min(static_cast<double>(io::kKeptReadBufferBytes), m.input.data_bytes) +
                           std::min(static_cast<double>(io::kDirectBufferBytes * io::kDirectBuffers), m.input.data_bytes) +
                           std::min(static_cast<double>(options_.tuning.verify_group_bytes), m.input.text_bytes);
    const double after = buffers + n * std::max(spilled_search_per_doc, 19.0);
    m.spill_saves = m.peak() - std::max(first_pass, after);
  }
  if (spec_.verify == VerifyMode::Exact) {
    // A sorted vector of 8-byte hashes per document (plus its header and heap overhead).
    m.verify_per_document = per_doc_distinct * sizeof(ShingleHash) + 40;
    m.verify_all = n * (m.verify_per_document + 5);
  }
  m.shingles_per_document = per_doc_distinct;
  last_estimate_ = std::make_pair(sample_bytes, m);
  return m;
}

}  // namespace neardup
