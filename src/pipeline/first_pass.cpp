// The first pass: every record read, shingled and sketched in input order; what verification
// needs kept (band keys, sets of documents already in a bucket, decompressed copies).
#include "pipeline/impl.h"
#include "internal/repeated_keys.h"

#include <bit>

namespace neardup {

// What the first pass computes per document under the spec, and what it keeps.
struct Pipeline::Impl::SketchLayout {
  explicit SketchLayout(const Impl& p)
      : bottomk(p.spec_.method == SketchMethod::BottomK),
        simhash(p.spec_.method == SketchMethod::SimHash),
        exact(p.spec_.method == SketchMethod::Exact),
        keep_by(!p.options_.reader.key_field.empty()),
        check_unspaced(p.spec_.shingle.kind == ShingleKind::Words && p.spec_.shingle.word_break == WordBreak::Simple),
        k(uses_signatures(p.spec_.method) ? static_cast<size_t>(p.spec_.num_perm) : 0),
        bands(k > 0 ? static_cast<size_t>(p.spec_.lsh.bands) : 0),
        // After the first pass, LSH needs only each document's band keys; the signatures are
        // kept only to estimate similarities, or when they are the smaller of the two.
        keys_only(k > 0 && p.spec_.verify == VerifyMode::Exact && bands * sizeof(uint64_t) < k * sizeof(SigValue)),
        by_position(p.reads_by_position()),
        // With exact verification, a document that shares a band key with one sketched before it
        // is in an LSH bucket, so its set will be verified: made now, from the shingles at hand,
        // it need not be read, parsed and shingled again. Not where a run verifies group by
        // group (by position): there each group's sets are read then, and let go once it is
        // verified, so that the next group's take the same memory. On the crowded mix (2 cores,
        // 9 alternating runs) that took dedup from 2.27 to 1.91 s and its peak from 315-326 to
        // 232-257 MiB; with the sets kept from the first pass, the first pass took 1.3-1.7 s
        // instead of 0.8-0.9 s, much of it in memory touched for the first time. pairs, later:
        // 1.66-1.84 s against 1.85-2.11 s, peak 219-228 against 323-333 MiB (5 runs each).
        early(k > 0 && p.spec_.verify == VerifyMode::Exact && p.options_.tuning.first_pass_set_bytes > 0 && !p.in_groups_),
        // A dedup needs only the components of the verified pairs, and a copy of a text is in its
        // original's component (J = 1) and shares every pair of it: the copies are told apart
        // after this pass by their texts' hashes (find_text_copies) and verified through their
        // originals (add_copy_buckets). Pairs mode lists every pair of each copy, so it keeps
        // them in the buckets.
        copies(k > 0 && p.spec_.verify == VerifyMode::Exact && p.mode_ == Mode::Dedup && p.options_.tuning.collapse_copies) {}
  bool bottomk, simhash, exact, keep_by, check_unspaced;
  size_t k, bands;
  bool keys_only, by_position, early, copies;
};

// A batch's result arrays, sized for what the layout computes.
void Pipeline::Impl::prepare_batch(Batch& b, const SketchLayout& l) const {
  const size_t n = b.size();
  b.sigs.resize(l.keys_only ? 0 : n * l.k);  // keys only: each signature in its thread's scratch (sketch_entry)
  b.keys.resize(l.keys_only ? n * l.bands : 0);
  b.simhashes.resize(l.simhash ? n : 0);
  b.fp_slot.resize(l.bottomk ? n : 0);
  b.sets.resize(l.exact || l.early ? n : 0);
  b.text_hash.resize(l.copies ? n : 0);
  b.size_key_fields(l.keep_by);
  b.empty.resize(n);
  b.fps = Fingerprints{};
  b.fps.size = spec_.sketch_size;
}

// Shingles and sketches entry i of a batch on a worker, with that worker's sketcher. A long
// text (kSplitBytes or more) with a signature is shingled and sketched in pieces on every thread
// of the run (DocumentSketcher::signature_split), so that one large record does not leave the
// other threads idle; a SimHash of set weights comes from its set made in pieces
// (DocumentSketcher::simhash_split). The result is the same.
void Pipeline::Impl::sketch_entry(Batch& b, size_t i, std::string_view text, const SketchLayout& l, DocumentSketcher& sk,
                                  std::vector<SigValue>& fp) const {
  const double weight = internal::timing_weight(i, text.size());
  const auto t1 = weight > 0 ? Clock::now() : Clock::time_point();
  if (l.copies) {
    const bool hashed = !text.empty() && text.size() <= kCopyTextBytes;
    const XXH128_hash_t h = hashed ? internal::hash_bytes128(text.data(), text.size(), kTextHashSeed) : XXH128_hash_t{};
    b.text_hash[i] = {h.low64, h.high64};
  }
  const bool split = l.k > 0 && text.size() >= kSplitBytes && sk.can_split();
  const bool split_simhash = l.simhash && text.size() >= kSplitBytes && sk.can_split_simhash();
  // Where only its band keys are kept, the signature is made in the thread's scratch, which
  // stays in the cache, not in the batch's array (which would be zeroed and written afresh for
  // every batch: 512 bytes a document, as much as a short document's text).
  thread_local std::vector<SigValue> scratch;
  if (l.keys_only) scratch.resize(l.k);
  const auto sig = l.keys_only ? std::span<SigValue>(scratch)
                   : l.k > 0   ? std::span<SigValue>(b.sigs).subspan(i * l.k, l.k)
                               : std::span<SigValue>();
  uint64_t simhash = 0;
  const size_t shingles = split            ? sk.signature_split(text, sig, threads_)
                          : split_simhash ? sk.simhash_split(text, simhash, threads_)
                                          : sk.shingle(text).size();
  const auto t2 = weight > 0 ? Clock::now() : Clock::time_point();
  if (l.bottomk) {
    sk.fingerprint(fp);
    b.fp_slot[i] = static_cast<uint32_t>(b.fps.count());
    b.fps.push_back(fp);
  } else if (l.simhash) {
    b.simhashes[i] = split_simhash ? simhash : sk.simhash();
  } else if (l.exact) {
    b.sets[i] = sk.set();
  } else {
    if (!split) sk.signature(sig);
    if (l.keys_only)
      for (size_t band = 0; band < l.bands; ++band)
        b.keys[i * l.bands + band] = signature_band_key(sig, static_cast<int>(band), spec_.lsh, spec_.shingle.seed);
    if (l.early && shingles > 0) {
      thread_local std::vector<uint64_t> computed;
      std::span<const uint64_t> keys;
      if (l.keys_only) {
        keys = std::span<const uint64_t>(b.keys).subspan(i * l.bands, l.bands);
      } else {
        computed.resize(l.bands);
        for (size_t band = 0; band < l.bands; ++band)
          computed[band] = signature_band_key(sig, static_cast<int>(band), spec_.lsh, spec_.shingle.seed);
        keys = computed;
      }
      const uint64_t bytes = shingles * sizeof(ShingleHash);  // at most the set's
      if (sets_.keep_early(keys, bytes, options_.tuning.first_pass_set_bytes)) b.sets[i] = sk.set();
    }
  }
  if (weight > 0) {
    b.t_sketch += weight * seconds_since(t2);
    b.t_shingle += weight * std::chrono::duration<double>(t2 - t1).count();
  }
  b.shingles += shingles;
  b.empty[i] = shingles == 0;
  // Chinese, Japanese or Thai text under the default word definition: a run without spaces is
  // one "word", so a long text has very few. Only such documents are scanned, to count the text
  // the run cannot compare well.
  if (l.check_unspaced && b.text_length[i] >= 256 && shingles * 32 < b.text_length[i]) b.unspaced += unspaced_script_bytes(text);
  sk.trim();
}

// Keeps what the run needs of entry i, in reading order, on the reading thread.
void Pipeline::Impl::keep_entry(Batch& b, size_t i, const SketchLayout& l) {
  const Batch::Entry& e = b.entries[i];
  const auto doc = static_cast<DocId>(docs_.size());
  if (l.early || l.exact) sets_.add(doc, std::move(b.sets[i]), l.early);  // b.sets is empty otherwise
  const io::RecordPos pos{e.source, e.raw_length, e.offset};
  io::KeyValue key;
  if (l.keep_by)
    key = {static_cast<io::KeyValue::Kind>(b.keys_kind[i]), b.keys_num[i],
           std::string_view(b.keys_text).substr(b.keys_text_begin[i], b.keys_text_length[i])};
  docs_.add(b.id_of(i), static_cast<uint32_t>(b.text_length[i]), l.by_position ? &pos : nullptr, l.keep_by ? &key : nullptr);
  if (l.keys_only)
    sketches_.push_keys(b.keys.data() + i * l.bands);
  else
    sketches_.sigs->append(b.sigs.data() + i * l.k, l.k);
  if (l.bottomk) sketches_.fps.push_back(b.fps[b.fp_slot[i]]);
  if (l.simhash) sketches_.simhashes.push_back(b.simhashes[i]);
  sketches_.empty.push_back(b.empty[i]);
  if (l.copies) {
    const TextHash h = b.empty[i] ? TextHash{} : b.text_hash[i];
    if (text_hashes_spilled_) {
      text_hashes_spilled_->push(0, h.hi);
      text_hashes_spilled_->push(1, h.lo);
    } else {
      text_hashes_.push_back(h);
    }
  }
}

// A dedup's documents whose text an earlier document had (up to kCopyTextBytes): equal XXH3-128
// hashes are taken for equal texts, which two different texts would need a 128-bit collision to
// break, far rarer than a collision of the 64-bit shingle hashes every set stands on. Found by
// sorting the hashes that repeat (internal/repeated_keys.h), a text's original being its first
// document. Each copy stays out of the LSH buckets (SketchStore::kCopy).
void Pipeline::Impl::find_text_copies() {
  text_copies_.clear();
  const size_t n = docs_.size();
  struct Entry {
    TextHash h;
    DocId doc;
  };
  if (text_hashes_spilled_) {
    text_hashes_spilled_->finish();
    stats_.spilled_bytes += text_hashes_spilled_->bytes();
  }
  // Only the texts whose hash may repeat are sorted: the table of every document's entry
  // would be more memory written for the first time than the hashes themselves.
  std::vector<uint64_t> words;
  internal::RepeatedKeyBits bits;
  bits.start(n, 27, words);
  each_text_hash([&](DocId, const TextHash& h) { bits.add(h.hi); });
  size_t may = 0;
  each_text_hash([&](DocId, const TextHash& h) { may += bits.may_repeat(h.hi); });
  // Spilled, the sort goes in parts of the hash range (each part's entries read again from the
  // disk), so that its entries and their sort's copy (48 B each) stay within a quarter of the
  // memory limit: 50 million short documents with 43% copies sort about 27 million, 1.3 GB at
  // once. A text's copies share its hash, so each part finds them whole. At most kCopyParts
  // parts: each reads the 16 B per document again.
  constexpr size_t kCopyParts = 16;
  const double limit = static_cast<double>(options_.tuning.memory_limit);
  const size_t parts = text_hashes_spilled_ && limit > 0 ? std::min(kCopyParts, static_cast<size_t>(48.0 * static_cast<double>(may) / (limit / 4)) + 1) : 1;
  const auto part_of = [parts](uint64_t hi) { return static_cast<size_t>(((hi >> 32) * parts) >> 32); };
  std::vector<size_t> in_part(parts, 0);  // the entries of each part, counted in one more pass
  if (parts > 1)
    each_text_hash([&](DocId, const TextHash& h) { in_part[part_of(h.hi)] += bits.may_repeat(h.hi); });
  else
    in_part[0] = may;
  text_copies_.reserve(may);  // at most, and kept so for the run: pages never written stay out of memory
  for (size_t part = 0; part < parts; ++part) {
    internal::BigArray<Entry> e(in_part[part]);
    size_t m = 0;
    each_text_hash([&](DocId d, const TextHash& h) {
      if (bits.may_repeat(h.hi) && (h.hi != 0 || h.lo != 0) && part_of(h.hi) == part) e[m++] = {h, d};
    });
    if (part + 1 == parts) {
      std::vector<uint64_t>().swap(words);
      internal::GrowArray<TextHash>(internal::Access::Sequential).swap(text_hashes_);
      text_hashes_spilled_.reset();
    }
    m = internal::sort_repeated_keys(e.data(), m, [](const Entry& x) { return x.h.hi; });
    for (size_t i = 0; i < m;) {
      size_t j = i + 1;
      while (j < m && e[j].h.hi == e[i].h.hi) ++j;
      for (size_t a = i + 1; a < j; ++a)  // each in input order (the sort is stable); its first equal one is the original
        for (size_t b = i; b < a; ++b)
          if (e[b].h.lo == e[a].h.lo) {
            text_copies_.push_back({e[b].doc, e[a].doc});
            break;
          }
      i = j;
    }
  }
  // By copy (each document once): a radix sort of their numbers, where std::sort took 11 ms of
  // this serial stage for 218,000 copies.
  if (!text_copies_.empty()) {
    std::vector<DocPair> tmp(text_copies_.size());
    internal::radix_sort_by_bits(text_copies_.data(), tmp.data(), text_copies_.size(), 0, std::max(1, static_cast<int>(std::bit_width(n))),
                                 [](const DocPair& p) { return static_cast<uint64_t>(p.b); });
  }
  for (const DocPair& c : text_copies_) sketches_.empty[c.b] = SketchStore::kCopy;
  copy_rank_ = internal::FlagRank(n, [&](size_t d) { return sketches_.empty[d] == SketchStore::kCopy; });
  stats_.text_copies = text_copies_.size();
}

// fn(document, its text hash) in input order, from memory or, spilled, a chunk at a time.
template <class Fn>
void Pipeline::Impl::each_text_hash(Fn&& fn) const {
  const size_t n = docs_.size();
  if (!text_hashes_spilled_) {
    for (DocId d = 0; d < n; ++d) fn(d, text_hashes_[d]);
    return;
  }
  constexpr size_t kChunk = size_t{1} << 16;
  std::vector<uint64_t> hi(std::min(n, kChunk)), lo(hi.size());
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t count = std::min(kChunk, n - begin);
    text_hashes_spilled_->read(0, begin, count, hi.data());
    text_hashes_spilled_->read(1, begin, count, lo.data());
    for (size_t i = 0; i < count; ++i) fn(static_cast<DocId>(begin + i), TextHash{lo[i], hi[i]});
  }
}

// The run's statistics after the first pass; throws if every record was bad.
void Pipeline::Impl::count_first_pass(const internal::PassTotals& totals, const io::BadRecords& bad, const io::RecordReader& reader) {
  stats_.shingles += totals.shingles;
  stats_.times.parse += totals.t_parse;
  stats_.times.shingle += totals.t_shingle;
  stats_.times.sketch += totals.t_sketch;
  const size_t n = docs_.size();
  NEARDUP_ASSERT(sketches_.empty.size() == n);
  stats_.documents = n;
  stats_.spilled_bytes = docs_.spilled_bytes();
  stats_.empty = static_cast<uint64_t>(std::count(sketches_.empty.begin(), sketches_.empty.end(), 1));
  DocumentTable::Behind behind(docs_);
  for (DocId d = 0; d < n; ++d) {
    behind.at(d);
    stats_.text_bytes += docs_.length(d);
  }
  stats_.unspaced_bytes = totals.unspaced;
  stats_.left_out = inputs_->left_out();
  io::ReaderStats& r = stats_.reader;
  r.records = n;
  r.invalid_utf8 = totals.invalid_utf8;
  r.skipped = bad.skipped();
  r.first_skips = bad.first();
  r.skip_kinds = bad.kinds();
  r.missing_ids = totals.missing_ids;
  r.binary = reader.stats().binary;
  if (n == 0 && r.skipped > 0)
    throw FormatError("every record was bad (" + std::to_string(r.skipped) + " skipped, the first: " + r.first_skips.front() +
                      "); nothing to deduplicate: check " NEARDUP_OPT("text_field") ", " NEARDUP_OPT("format") " and the inputs");
}

// Verifying group by group reads each group's records again: by position, which a plain file
// does by seeking, but a compressed one only by decompressing from its start, once per group
// (32 times). On 300 MB of the crowded mix, half of it as a .zst file, `dedup` took 1.65 s in
// groups (1.35 s of it verifying) against 0.34 s with the file plain; reading every candidate's
// set in one pass took `pairs` 0.48 s. So a run with a compressed input (or inputs that are not
// JSONL, read whole) reads its candidates' sets at once, in one pass, and holds them all.
//
// A dedup over compressed inputs whose decompressed bytes the first pass keeps
// (RunTuning::decompressed_copies) verifies in groups, reading each group's records from those
// copies, so that its writer copies the kept records while it verifies. The copies are not in
// the page cache (written directly), so each group's reading takes disk reads spread over the
// whole copy; pairs, with no writer to overlap, reads its candidates at once from them: on the
// crowded mix as one .zst file it took 3.0-3.3 s in groups and 2.6 s at once, and dedup 3.8 s
// in groups and 4.2-4.3 s at once.
bool Pipeline::Impl::groups_pay(int compressed, bool copies) const {
  return reads_by_position() && compressed >= 0 && (compressed == 0 || (copies && mode_ == Mode::Dedup));
}

// For a run that reads its records again by position (JSONL only): whether the inputs include a
// compressed file, 1 or 0, opening each input once to read its first bytes; -1 where one has a
// problem or cannot be opened (the first pass reports it), and for other runs (not looked at).
int Pipeline::Impl::compressed_inputs() const {
  if (!reads_by_position()) return -1;
  int compressed = 0;
  try {
    for (const auto& src : inputs_->sources()) {
      if (!src.problem.empty()) return -1;
      if (io::open_stream(src.path, src.display)->compression() != io::Compression::None) compressed = 1;
    }
  } catch (const std::exception&) {
    return -1;
  }
  return compressed;
}

// Where the first pass keeps the decompressed bytes of the compressed JSONL inputs, or empty
// where it keeps none: not asked, or no copy can be made there (a trial one; the reason noted).
std::string Pipeline::Impl::copies_dir() {
  if (!options_.tuning.decompressed_copies || !reads_by_position()) return {};
  const std::string dir = io::temp_directory(options_.tuning.temp_dir);
  if (io::ScratchCopy::create(dir, options_.tuning.temp_keep_free)) return dir;
  stats_.copy_note = io::ScratchCopy::unavailable(dir);
  return {};
}

// The first pass's copies of compressed inputs: later passes read those inputs from them. If one
// was not kept, verification reads its candidates at once, decompressing the inputs again once.
void Pipeline::Impl::take_copies(io::RecordReader& reader) {
  std::string why;
  auto copies = reader.take_decompressed_copies(&why);
  for (size_t i = 0; i < copies.size(); ++i) {
    if (!copies[i]) continue;
    stats_.copied_bytes += copies[i]->size();
    inputs_->read_again_from(i, std::move(copies[i]));
    input_stamps_[i] = file_stamp(inputs_->sources()[i].path);
  }
  stats_.copy_note = why;
  if (!why.empty()) in_groups_ = false;  // a compressed input without its copy
}

std::optional<MemoryEstimate> Pipeline::Impl::first_pass_sample() const {
  if (!narrow_keys_for(1, 0)) return std::nullopt;
  try {
    return estimate_memory(kSampleBytes);
  } catch (const IoError&) {
    return std::nullopt;
  }
}

void Pipeline::Impl::sketch_pass() {
  const auto t0 = Clock::now();
  const int compressed = compressed_inputs();
  const std::string copy_dir = compressed > 0 ? copies_dir() : std::string();
  in_groups_ = groups_pay(compressed, !copy_dir.empty());
  const SketchLayout layout(*this);
  // The input's sample, where it was read: whether band keys are narrow, and the per-document
  // arrays it expects past 2 MiB take huge pages from their start (GrowArray::expect).
  const std::optional<MemoryEstimate> m = layout.keys_only ? first_pass_sample() : std::nullopt;
  const bool narrow = m && narrow_keys_for(m->input.records, m->shingles_per_document);
  const io::InputSample sample = m ? m->input : io::InputSample{};
  const auto expected = static_cast<size_t>(sample.records);
  sketches_.reset(layout.keys_only ? layout.bands : 0, spec_.sketch_size, narrow, expected);
  docs_.expect(expected, static_cast<size_t>(sample.id_bytes));
  text_hashes_.expect(expected);
  if (layout.keys_only && options_.tuning.spill_band_keys) sketches_.spill_keys_to(io::temp_directory(options_.tuning.temp_dir));
  if (options_.tuning.spill_documents) docs_.spill_to(io::temp_directory(options_.tuning.temp_dir));
  text_hashes_spilled_.reset();
  if (options_.tuning.spill_documents && layout.copies)  // 16 bytes per document, read back in order
    text_hashes_spilled_ = std::make_unique<internal::SpilledColumns>(io::temp_directory(options_.tuning.temp_dir), 2, "the text hashes");
  input_stamps_.clear();
  for (const auto& src : inputs_->sources()) input_stamps_.push_back(file_stamp(src.path));
  sets_.start(layout.exact, layout.early);
  text_copies_.clear();
  copy_rank_ = {};
  io::RecordReader reader(*inputs_, options_.reader);
  if (!copy_dir.empty()) reader.keep_decompressed_copies(copy_dir, options_.tuning.temp_keep_free);
  io::BadRecords bad(options_.reader);
  // One sketcher per thread of the pass (pass_runner.h), made on its first batch.
  std::vector<std::optional<DocumentSketcher>> sketchers(internal::pass_slots(threads_));
  std::vector<std::vector<SigValue>> fp(sketchers.size());
  Pass pass;
  pass.stage = "sketch";
  pass.total_bytes = inputs_->total_bytes();
  pass.progress = &options_.tuning.progress;
  pass.reader = &options_.reader;
  pass.word_text = Shingler::reads_words_only(spec_.shingle);
  pass.on_bad = [&](const std::string& where, const io::Rejected& r) { bad.report(where, r); };
  pass.start = [&](Batch& b, size_t slot) {
    if (!sketchers[slot]) sketchers[slot].emplace(spec_);
    prepare_batch(b, layout);
  };
  pass.process = [&](Batch& b, size_t i, std::string_view text, size_t slot) {
    sketch_entry(b, i, text, layout, *sketchers[slot], fp[slot]);
  };
  pass.consume = [&](Batch& b, size_t i, DocId) { keep_entry(b, i, layout); };
  const internal::PassTotals totals = internal::run_pass(reader, *inputs_, threads_, pass);
  sketches_.finish_keys();
  docs_.finish();
  first_pass_state_ = docs_.bytes() + sketches_.bytes();  // a dedup lets its band keys go after the search
  count_first_pass(totals, bad, reader);
  if (!copy_dir.empty()) take_copies(reader);
  sets_.end_first_pass();
  copies_told_ = layout.copies;
  if (layout.exact) {
    stats_.set_bytes = sets_.sets()->total_hashes() * sizeof(ShingleHash);
    stats_.verify_shared = sets_.sets()->shared_docs();
  }
  stats_.times.pass1 = seconds_since(t0);
}

}  // namespace neardup
