#include "neardup/stages.h"
#include "io/retry.h"
#include "io/raw_records.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "internal/scratch.h"
#include "internal/hash.h"
#include "internal/hash_partition.h"
#include "internal/parallel.h"
#include "internal/pass_runner.h"
#include "neardup/allpairs.h"
#include "neardup/error.h"
#include "neardup/io/writer.h"
#include "neardup/lsh_index.h"
#include "neardup/setjoin.h"

namespace neardup {
namespace {

// The texts of a pass, each numbered by the first record to claim it, by the text's 128-bit hash;
// safe to claim from many threads (in shards, so that the workers seldom wait for each other).
class FirstTexts {
 public:
  /// The number of `text` in the pass, and whether it is new (the caller is its first record).
  std::pair<uint32_t, bool> claim(std::string_view text) {
    const XXH128_hash_t h = internal::hash_bytes128(text.data(), text.size(), kSeed);
    Shard& s = shards_[h.high64 % kShards];
    std::lock_guard lock(s.m);
    if ((s.used + 1) * 2 > s.slots.size()) s.grow();
    Slot& slot = s.find(h.low64, h.high64);
    if (slot.number != kNone) return {slot.number, false};
    slot = {h.low64, h.high64, count_.fetch_add(1, std::memory_order_relaxed)};
    ++s.used;
    return {slot.number, true};
  }

 private:
  static constexpr uint64_t kSeed = 0x6E65617264757031ull;  // "neardup1"
  static constexpr size_t kShards = 16;
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Slot {
    uint64_t lo = 0, hi = 0;
    uint32_t number = kNone;
  };
  // An open-addressing table (linear probing, at most half full): a node-based map chased a
  // pointer per record, which for short records cost as much as shingling them.
  struct Shard {
    std::mutex m;
    std::vector<Slot> slots = std::vector<Slot>(1024);
    size_t used = 0;
    Slot& find(uint64_t lo, uint64_t hi) {
      const size_t mask = slots.size() - 1;
      for (size_t i = static_cast<size_t>(lo) & mask;; i = (i + 1) & mask)
        if (slots[i].number == kNone || (slots[i].lo == lo && slots[i].hi == hi)) return slots[i];
    }
    void grow() {
      std::vector<Slot> old(slots.size() * 2);
      old.swap(slots);
      for (const Slot& x : old)
        if (x.number != kNone) find(x.lo, x.hi) = x;
    }
  };
  std::array<Shard, kShards> shards_;
  std::atomic<uint32_t> count_{0};
};

}  // namespace

// ---- Sketches ----

std::span<const SigValue> Sketches::signature(DocId doc) const noexcept {
  const auto k = static_cast<size_t>(spec.num_perm);
  return std::span<const SigValue>(signatures).subspan(static_cast<size_t>(doc) * k, k);
}

void Sketches::append(const Sketches& other) {
  if (other.spec.to_string() != spec.to_string())
    throw UsageError("cannot append sketches of spec '" + other.spec.to_string() + "' to sketches of spec '" + spec.to_string() + "'");
  signatures.insert(signatures.end(), other.signatures.begin(), other.signatures.end());
  for (size_t i = 0; i < other.fingerprints.count(); ++i) fingerprints.push_back(other.fingerprints[i]);
  simhashes.insert(simhashes.end(), other.simhashes.begin(), other.simhashes.end());
  empty.insert(empty.end(), other.empty.begin(), other.empty.end());
  shingles += other.shingles;
}

// ---- DocumentSketcher ----

struct DocumentSketcher::Impl {
  explicit Impl(const PipelineSpec& s) : spec(s.resolved()), shingler(spec.shingle) {
    if (uses_signatures(spec.method)) hasher.emplace(spec);
    if (spec.method == SketchMethod::BottomK) selector.emplace(spec.sketch_size);
    if (spec.method == SketchMethod::SimHash) simhasher.emplace(spec.weights);
  }
  PipelineSpec spec;
  Shingler shingler;
  std::optional<SignatureHasher> hasher;
  std::optional<BottomKSelector> selector;
  std::optional<SimHasher> simhasher;
  HashVector shingles;
  // After signature_split(): the text, shingled again a piece at a time if its set is asked for
  // (shingles unused).
  std::string_view split_text;
  int split_threads = 1;
  size_t split_piece_bytes = 0;
  bool split = false;
  // A text sketched in pieces: set() will make its set from it again.
  void split_from(std::string_view text, int threads, size_t piece_bytes) {
    shingles.clear();
    split = true;
    split_text = text;
    split_threads = threads;
    split_piece_bytes = piece_bytes;
  }
};

DocumentSketcher::DocumentSketcher(const PipelineSpec& spec) : impl_(std::make_unique<Impl>(spec)) {}
DocumentSketcher::~DocumentSketcher() = default;
DocumentSketcher::DocumentSketcher(DocumentSketcher&&) noexcept = default;
DocumentSketcher& DocumentSketcher::operator=(DocumentSketcher&&) noexcept = default;

const PipelineSpec& DocumentSketcher::spec() const noexcept { return impl_->spec; }

std::span<const ShingleHash> DocumentSketcher::shingle(std::string_view text) {
  impl_->split = false;
  impl_->shingler.shingles(text, impl_->shingles);
  return impl_->shingles;
}

void DocumentSketcher::signature(std::span<SigValue> out) const {
  if (!impl_->hasher) throw UsageError("signature() needs a minhash or oph spec, not '" + impl_->spec.to_string() + "'");
  impl_->hasher->sketch(impl_->shingles, out);
}

void DocumentSketcher::fingerprint(std::vector<SigValue>& out) {
  if (!impl_->selector) throw UsageError("fingerprint() needs a bottomk spec, not '" + impl_->spec.to_string() + "'");
  impl_->selector->add(impl_->shingles);
  impl_->selector->finish(out);
}

uint64_t DocumentSketcher::simhash() {
  if (!impl_->simhasher) throw UsageError("simhash() needs a simhash spec, not '" + impl_->spec.to_string() + "'");
  return (*impl_->simhasher)(impl_->shingles);
}

namespace {

// A long text cut into pieces just after ASCII whitespace bytes, about every `piece_bytes`: a
// cut never falls inside a word (words are runs of other bytes), so the words of the pieces are
// the words of the text.
struct Pieces {
  static bool space(char c) noexcept { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
  Pieces(std::string_view t, size_t piece_bytes) : text(t) {
    cuts.push_back(0);
    const size_t step = std::max<size_t>(piece_bytes, 1);
    for (size_t at = step; at < text.size();) {
      while (at < text.size() && !space(text[at])) ++at;
      if (at + 1 >= text.size()) break;
      cuts.push_back(at + 1);
      at += 1 + step;
    }
    cuts.push_back(text.size());
  }
  size_t size() const noexcept { return cuts.size() - 1; }
  // The word buffers a thread reuses for every piece of one text it takes.
  struct Scratch {
    HashVector before, words;
    HashVector shingles;
  };
  // The shingles of the windows that end in piece i's words (its words after the k - 1 words
  // before its cut, read again from the text from a whitespace on) into scratch.shingles;
  // returns the number of its own words.
  size_t shingles(const Shingler& sh, size_t k, size_t i, Scratch& scratch) const {
    HashVector& before = scratch.before;
    HashVector& buf = scratch.words;
    buf.clear();
    if (i > 0 && k > 1) {
      for (size_t back = 64;; back *= 2) {
        size_t w = cuts[i] > back ? cuts[i] - back : 0;
        while (w > 0 && !space(text[w - 1])) --w;
        before.clear();
        sh.words(text.substr(w, cuts[i] - w), before);
        if (before.size() >= k - 1 || w == 0) break;
      }
      const size_t take = std::min(before.size(), k - 1);
      buf.assign(before.end() - static_cast<ptrdiff_t>(take), before.end());
    }
    const size_t prefix = buf.size();
    sh.words(text.substr(cuts[i], cuts[i + 1] - cuts[i]), buf);
    scratch.shingles.clear();
    if (buf.size() >= k) sh.shingles_of_words(buf, scratch.shingles);
    return buf.size() - prefix;
  }
  // Shingles every piece on `threads` threads of the current pool and calls on_piece(i, its
  // shingles) there; returns the number of words of the text. Each thread keeps its scratch for
  // the pieces of the text (a piece of source code has about 1.4 bytes of words and as many of
  // shingles per byte of text): freed after every piece, it would be faulted in again for the
  // next. It goes with the text: kept in each pool thread from one text to the next, it would
  // stay resident for the rest of the run in every thread that ever took a long text's piece,
  // on top of the sets that verification holds.
  template <class OnPiece>
  size_t each_piece(const Shingler& sh, int threads, OnPiece&& on_piece) const {
    const size_t k = static_cast<size_t>(sh.options().k);
    std::vector<size_t> words(size());
    std::vector<Scratch> scratch(static_cast<size_t>(std::max(1, threads)));
    internal::parallel_for(size(), threads, [&](size_t i, size_t slot) {
      Scratch& own = scratch[slot];
      words[i] = shingles(sh, k, i, own);
      on_piece(i, std::span<const ShingleHash>(own.shingles));
    });
    size_t total = 0;
    for (const size_t w : words) total += w;
    return total;
  }
  std::string_view text;
  std::vector<size_t> cuts;
};

}  // namespace

std::vector<ShingleHash> DocumentSketcher::set() const {
  if (!impl_->split) return sorted_set(impl_->shingles);
  return piecewise_shingle_set(impl_->shingler, impl_->split_text, impl_->split_threads, impl_->split_piece_bytes);
}

namespace {

// A long text's shingles, each piece's split by their top bits as they are made (in parallel), to
// be sorted bucket by bucket across pieces (internal::HashPartition): the scratch is a piece's, and
// the set is made without merging sorted pieces level by level. `words`: the text's words.
internal::HashPartition partition_shingles(Shingler& shingler, std::string_view text, int threads, size_t piece_bytes, size_t& words) {
  if (!shingler.splits_at_spaces()) throw UsageError("piecewise_shingle_set() needs plain word shingles");
  const Pieces pieces(text, piece_bytes);
  internal::HashPartition partition(pieces.size(), text.size() / 6);  // about a word per 6 bytes
  words = pieces.each_piece(shingler, threads, [&](size_t i, std::span<const ShingleHash> sh) { partition.add(i, sh); });
  return partition;
}

// n words make n - k + 1 shingles, or one of them all when fewer than k.
size_t shingles_of_words(size_t words, size_t k) noexcept { return words >= k ? words - k + 1 : (words > 0 ? 1 : 0); }

}  // namespace

std::vector<ShingleHash> piecewise_shingle_set(Shingler& shingler, std::string_view text, int threads, size_t piece_bytes,
                                               size_t* shingles) {
  size_t words = 0;
  internal::HashPartition partition = partition_shingles(shingler, text, threads, piece_bytes, words);
  const size_t k = static_cast<size_t>(shingler.options().k);
  if (shingles) *shingles = shingles_of_words(words, k);
  if (words <= k) return shingler.shingle_set(text);  // one shingle of every word, or none
  return partition.sorted_set(threads);
}

size_t DocumentSketcher::shingle_and_sign(std::string_view text, std::span<SigValue> out, int threads) {
  if (text.size() >= kSplitBytes && can_split()) return signature_split(text, out, threads);
  const size_t shingles = shingle(text).size();
  signature(out);
  return shingles;
}

SketchTotals sketch_records(io::RecordReader& reader, const io::InputSet& inputs, const PipelineSpec& spec,
                            const io::ReaderOptions& options, int threads, io::BadRecords& bad,
                            const std::function<void(const SketchedRecord&)>& take) {
  if (!uses_signatures(spec.method)) throw UsageError("sketch_records: the spec's method must be minhash or oph");
  const size_t k = static_cast<size_t>(spec.num_perm);
  const bool keep_by = !options.key_field.empty();
  std::vector<std::optional<DocumentSketcher>> sketchers(internal::pass_slots(threads));
  internal::Pass pass;
  pass.stage = "sketch";
  pass.total_bytes = inputs.total_bytes();
  pass.reader = &options;
  pass.word_text = Shingler::reads_words_only(spec.shingle);
  pass.on_bad = [&](const std::string& where, const io::Rejected& r) { bad.report(where, r); };
  pass.start = [&](internal::Batch& b, size_t slot) {
    if (!sketchers[slot]) sketchers[slot].emplace(spec);
    const size_t n = b.size();
    b.sigs.resize(n * k);
    b.empty.assign(n, 0);
    b.size_key_fields(keep_by);
  };
  pass.process = [&](internal::Batch& b, size_t i, std::string_view text, size_t slot) {
    DocumentSketcher& sk = *sketchers[slot];
    const size_t shingles = sk.shingle_and_sign(text, std::span<SigValue>(b.sigs).subspan(i * k, k), threads);
    b.shingles += shingles;
    b.empty[i] = shingles == 0;
    sk.trim();
  };
  pass.consume = [&](internal::Batch& b, size_t i, DocId) {
    const internal::Batch::Entry& e = b.entries[i];
    SketchedRecord r;
    r.id = b.id_of(i);
    r.source = e.source;
    r.line = e.line;
    r.offset = e.offset;
    r.raw_length = e.raw_length;
    r.text_length = b.text_length[i];
    if (keep_by) {
      r.key.kind = static_cast<io::KeyValue::Kind>(b.keys_kind[i]);
      r.key.number = b.keys_num[i];
      r.key.text = std::string_view(b.keys_text).substr(b.keys_text_begin[i], b.keys_text_length[i]);
    }
    r.signature = std::span<const SigValue>(b.sigs).subspan(i * k, k);
    r.empty = b.empty[i] != 0;
    take(r);
  };
  const internal::PassTotals t = internal::run_pass(reader, inputs, threads, pass);
  return {t.shingles, t.invalid_utf8, t.missing_ids};
}

void shingle_set_records(io::RecordReader& reader, const io::InputSet& inputs, const PipelineSpec& spec,
                         const io::ReaderOptions& options, int threads, const std::function<void(ShingledRecord&)>& take,
                         const std::function<bool(const io::Record&, DocId)>& filter,
                         const ProgressFn* progress, size_t distinct_up_to) {
  std::vector<std::optional<Shingler>> shinglers(internal::pass_slots(threads));
  internal::Pass pass;
  pass.stage = "verify";
  pass.total_bytes = inputs.total_bytes();
  pass.progress = progress;
  pass.reader = &options;
  pass.word_text = Shingler::reads_words_only(spec.shingle);
  pass.filter = filter;
  pass.on_bad = [](const std::string&, const io::Rejected& r) {
    const std::string at = r.line ? std::string() : "the line at byte " + std::to_string(r.offset) + ": ";
    throw IoError(at + std::string(r.reason) + "; the input changed while neardup was running (do not modify inputs during a run)",
                  ErrorPlace{std::string(r.input), r.line});
  };
  pass.start = [&](internal::Batch& b, size_t slot) {
    if (!shinglers[slot]) shinglers[slot].emplace(spec.shingle);
    b.sets.resize(b.size());
    b.same_text.assign(b.size(), 0);
    b.text_number.assign(b.size(), ShingledRecord::kNone);
  };
  // A crowded corpus holds many copies of one text (licences, generated files), and a copy's set
  // is its original's: of the pass's records with one text, only the first to claim it on a
  // worker is shingled, and the others share its set. The texts are told apart by their XXH3-128
  // hashes: two different texts taken for one need a 128-bit collision, far rarer than a
  // collision of the 64-bit shingle hashes that every set here already stands on. A JSONL text
  // reaches the workers as word text or decoded, by its line alone (io::JsonlParser), so the same
  // line is the same text in every run and on every thread. Two spellings of one text (with other
  // JSON escapes) may come in different forms, which differ where the text has more than words
  // and single spaces: such a copy is shingled again, to the same set.
  FirstTexts texts;
  pass.process = [&](internal::Batch& b, size_t i, std::string_view text, size_t slot) {
    if (text.size() > distinct_up_to) {  // not empty
      const auto [number, fresh] = texts.claim(text);
      b.text_number[i] = number;
      if (!fresh) {
        b.same_text[i] = 1;
        return;
      }
    }
    Shingler& sh = *shinglers[slot];
    b.sets[i] = text.size() >= DocumentSketcher::kSplitBytes && sh.splits_at_spaces() ? piecewise_shingle_set(sh, text, threads)
                                                                                      : sh.shingle_set(text);
  };
  struct Later {
    DocId ordinal;
    std::string id;
    uint32_t source, text_number;
    uint64_t offset, text_length;
  };
  std::vector<Later> later;            // records with a text shingled for another, in input order
  std::vector<DocId> ordinal_of_text;  // by text number: the record with its set
  pass.consume = [&](internal::Batch& b, size_t i, DocId ordinal) {
    const internal::Batch::Entry& e = b.entries[i];
    const uint32_t number = b.text_number[i];
    if (b.same_text[i]) {
      later.push_back({ordinal, std::string(b.id_of(i)), e.source, number, e.offset, b.text_length[i]});
      return;
    }
    if (number != ShingledRecord::kNone) {
      if (number >= ordinal_of_text.size()) ordinal_of_text.resize(static_cast<size_t>(number) + 1, ShingledRecord::kNone);
      ordinal_of_text[number] = ordinal;
    }
    ShingledRecord r;
    r.ordinal = ordinal;
    r.id = b.id_of(i);
    r.source = e.source;
    r.offset = e.offset;
    r.text_length = b.text_length[i];
    r.set = std::move(b.sets[i]);
    take(r);
  };
  internal::run_pass(reader, inputs, threads, pass);
  for (const Later& l : later) {
    ShingledRecord r;
    r.ordinal = l.ordinal;
    r.id = l.id;
    r.source = l.source;
    r.offset = l.offset;
    r.text_length = l.text_length;
    r.same_as = ordinal_of_text.at(l.text_number);  // every processed record is handed over
    NEARDUP_ASSERT(r.same_as != ShingledRecord::kNone);
    take(r);
  }
}

bool DocumentSketcher::can_split() const noexcept { return impl_->hasher && impl_->shingler.splits_at_spaces(); }

bool DocumentSketcher::can_split_simhash() const noexcept {
  return impl_->simhasher && impl_->simhasher->weights() == SimHashWeights::Set && impl_->shingler.splits_at_spaces();
}

size_t DocumentSketcher::simhash_split(std::string_view text, uint64_t& out, int threads, size_t piece_bytes) {
  if (!can_split_simhash())
    throw UsageError("simhash_split() needs a simhash spec with set weights over plain word shingles, not '" + impl_->spec.to_string() + "'");
  Impl& im = *impl_;
  im.split_from(text, threads, piece_bytes);
  // The set's buckets tallied as they are sorted, each thread into its own tally: the set is never
  // held whole (one record of 50 MB: a peak of 186 MB instead of 220; the crowded mix, whose
  // generated headers reach 25 MB: 215-217 MB instead of 235-237 for `dedup --method simhash`).
  size_t words = 0;
  internal::HashPartition partition = partition_shingles(im.shingler, text, threads, piece_bytes, words);
  const size_t k = static_cast<size_t>(im.spec.shingle.k);
  const Isa isa = active_isa();
  if (words <= k) {
    out = im.simhasher->of_set(im.shingler.shingle_set(text), isa);
  } else {
    std::vector<SimHashTally> tallies(static_cast<size_t>(std::max(threads, 1)));
    partition.for_each_distinct(threads, [&](size_t slot, std::span<const ShingleHash> part) { tallies[slot].add(part, isa); });
    for (size_t i = 1; i < tallies.size(); ++i) tallies[0].add(tallies[i]);
    out = tallies[0].simhash();
  }
  return shingles_of_words(words, k);
}

size_t DocumentSketcher::signature_split(std::string_view text, std::span<SigValue> out, int threads, size_t piece_bytes) {
  if (!can_split()) throw UsageError("signature_split() needs a minhash or oph spec of plain word shingles, not '" + impl_->spec.to_string() + "'");
  Impl& im = *impl_;
  im.split_from(text, threads, piece_bytes);
  const Pieces pieces(text, piece_bytes);
  const size_t m = pieces.size(), k = static_cast<size_t>(im.spec.shingle.k);
  // Each piece bins its windows into its own signature, with the thread's scratch, so that a long
  // text is touched a piece at a time; the signatures merge by minimum.
  std::vector<std::vector<SigValue>> acc(m, std::vector<SigValue>(out.size(), kEmptySigValue));
  std::vector<size_t> windows(m);
  const size_t total = pieces.each_piece(im.shingler, threads, [&](size_t i, std::span<const ShingleHash> sh) {
    windows[i] = sh.size();
    im.hasher->add(sh, acc[i]);
  });
  size_t n = 0;
  for (const size_t w : windows) n += w;
  if (total <= k) {  // one shingle of every word, or none: the whole text's way
    im.split = false;
    im.shingler.shingles(text, im.shingles);
    im.hasher->sketch(im.shingles, out);
    return im.shingles.size();
  }
  std::fill(out.begin(), out.end(), kEmptySigValue);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < out.size(); ++j) out[j] = std::min(out[j], acc[i][j]);
  im.hasher->finish(out);
  return n;
}

void DocumentSketcher::trim() noexcept {
  impl_->split = false;
  internal::trim_scratch(impl_->shingles);
  impl_->shingler.trim();
}

size_t DocumentSketcher::scratch_bytes() const noexcept {
  return impl_->shingles.capacity() * sizeof(ShingleHash) + impl_->shingler.scratch_bytes();
}

// ---- Batch stages ----

Sketches sketch_documents(std::span<const std::string_view> texts, const PipelineSpec& spec_in, int threads) {
  Sketches out;
  out.spec = spec_in.resolved();
  const PipelineSpec& spec = out.spec;
  const size_t n = texts.size();
  const size_t k = uses_signatures(spec.method) ? static_cast<size_t>(spec.num_perm) : 0;
  const bool bottomk = spec.method == SketchMethod::BottomK, simhash = spec.method == SketchMethod::SimHash;
  out.signatures.resize(n * k);
  out.simhashes.resize(simhash ? n : 0);
  out.empty.resize(n);
  std::vector<std::vector<SigValue>> fps(bottomk ? n : 0);
  std::vector<uint64_t> counts(n);
  // Blocks of documents, so that a sketcher is made once per block and thread.
  constexpr size_t kBlock = 256;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  const int t = internal::resolve_threads(threads);
  std::vector<std::optional<DocumentSketcher>> sketchers(static_cast<size_t>(std::max(t, 1)));
  internal::parallel_for(blocks, t, [&](size_t blk, size_t slot) {
    auto& sk = sketchers[slot];
    if (!sk) sk.emplace(spec);
    for (size_t i = blk * kBlock; i < std::min(n, (blk + 1) * kBlock); ++i) {
      const auto sh = sk->shingle(texts[i]);
      counts[i] = sh.size();
      out.empty[i] = sh.empty();
      if (k) sk->signature(std::span<SigValue>(out.signatures).subspan(i * k, k));
      if (bottomk) sk->fingerprint(fps[i]);
      if (simhash) out.simhashes[i] = sk->simhash();
      sk->trim();
    }
  });
  out.fingerprints.size = spec.sketch_size;
  for (const auto& f : fps) out.fingerprints.push_back(f);
  for (const uint64_t c : counts) out.shingles += c;
  return out;
}

ShingleSets shingle_sets(std::span<const std::string_view> texts, const PipelineSpec& spec_in, std::span<const uint8_t> needed,
                         int threads) {
  const PipelineSpec spec = spec_in.resolved();
  const size_t n = texts.size();
  if (!needed.empty() && needed.size() != n) throw UsageError("shingle_sets: `needed` must have one entry per text");
  std::vector<std::vector<ShingleHash>> sets(n);
  const int t = internal::resolve_threads(threads);
  std::vector<std::optional<Shingler>> shinglers(static_cast<size_t>(std::max(t, 1)));
  internal::parallel_for(n, t, [&](size_t i, size_t slot) {
    if (!needed.empty() && !needed[i]) return;
    auto& sh = shinglers[slot];
    if (!sh) sh.emplace(spec.shingle);
    sets[i] = sh->shingle_set(texts[i]);
  });
  ShingleSets out(n);
  for (size_t i = 0; i < n; ++i)
    if (needed.empty() || needed[i]) out.set(static_cast<DocId>(i), std::move(sets[i]));
  return out;
}

std::vector<uint8_t> documents_in(std::span<const DocPair> pairs, size_t num_docs) {
  std::vector<uint8_t> needed(num_docs, 0);
  for (const DocPair& p : pairs) {
    if (p.a >= num_docs || p.b >= num_docs) throw UsageError("documents_in: a pair names a document beyond num_docs");
    needed[p.a] = needed[p.b] = 1;
  }
  return needed;
}

namespace {

std::vector<DocPair> unscored(std::span<const ScoredPair> pairs) {
  std::vector<DocPair> out(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) out[i] = {pairs[i].a, pairs[i].b};
  return out;
}

}  // namespace

std::vector<DocPair> find_candidates(const Sketches& s, const ShingleSets* sets, int threads_in) {
  const int threads = internal::resolve_threads(threads_in);
  const PipelineSpec& spec = s.spec;
  switch (spec.method) {
    case SketchMethod::MinHash:
    case SketchMethod::Oph:
      return bucket_pairs(lsh_buckets(s.signatures, static_cast<size_t>(spec.num_perm), s.empty, spec.lsh, spec.shingle.seed, threads));
    case SketchMethod::BottomK: {
      // With exact verification the join runs at a threshold lowered by the estimator's error,
      // so that true pairs near t are not lost (as the pipeline does).
      const double t = spec.verify == VerifyMode::Exact ? bottomk_candidate_threshold(spec.threshold, spec.sketch_size) : spec.threshold;
      return unscored(pairs_above(s.fingerprints, t, PairScore::BottomKEstimate, threads));
    }
    case SketchMethod::SimHash: {
      const uint64_t live = static_cast<uint64_t>(std::count(s.empty.begin(), s.empty.end(), 0));
      const SimHashPlan plan = plan_simhash_tables(spec.hamming, std::max<uint64_t>(live, 1), SimHashWorkload::Batch);
      const std::vector<HammingPair> near = simhash_find_all(s.simhashes, plan, threads, s.empty);
      std::vector<DocPair> out(near.size());
      for (size_t i = 0; i < near.size(); ++i) out[i] = {near[i].a, near[i].b};
      return out;
    }
    case SketchMethod::Exact: {
      if (!sets) throw UsageError("find_candidates: the exact method needs every document's shingle set (shingle_sets)");
      std::vector<DocId> docs;
      for (DocId d = 0; d < s.size(); ++d)
        if (!s.empty[d]) docs.push_back(d);
      const SetJoin join(docs, [sets](DocId d) { return sets->get(d); }, spec.threshold, threads);
      return unscored(join.all_pairs());
    }
  }
  return {};
}

Scorer scorer_for(const Sketches& s, const ShingleSets* sets) {
  if (s.spec.verify == VerifyMode::Exact || s.spec.method == SketchMethod::Exact) {
    if (!sets) throw UsageError("exact verification needs the shingle sets of the documents in candidate pairs (shingle_sets)");
    return Scorer::exact(*sets);
  }
  switch (s.spec.method) {
    case SketchMethod::BottomK: return Scorer::bottomk_estimate(s.fingerprints);
    case SketchMethod::SimHash: return Scorer::simhash_estimate(s.simhashes);
    default: return Scorer::signature_estimate(s.signatures, static_cast<size_t>(s.spec.num_perm));
  }
}

// ---- The sketch file ----
//
// Little-endian, as written by this machine (x86-64 and arm64 both are):
//   "NDSKETCH" (8 bytes), version u32 = 1, spec length u32, spec (to_string(), resolved)
//   documents u64, flags u32 (bit 0: ids present)
//   per document, in order: empty u8; then by method: minhash, oph: num_perm u32 values;
//     bottomk: count u32 and count u32 values; simhash: u64; exact: nothing
//   if ids: per document, length u32 and the bytes
//   checksum u64: the library's 64-bit hash of every byte before it
namespace {

constexpr char kSketchMagic[8] = {'N', 'D', 'S', 'K', 'E', 'T', 'C', 'H'};
constexpr uint32_t kSketchVersion = 1;
constexpr uint64_t kSketchSeed = 0x4E44534B45544348ULL;

template <class T>
void put(std::string& b, T v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof v);
}

class Cursor {
 public:
  Cursor(const std::string& path, std::string_view data) : path_(path), data_(data) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string_view bytes(size_t n) {
    need(n);
    const auto v = data_.substr(at_, n);
    at_ += n;
    return v;
  }
  size_t at() const noexcept { return at_; }

 private:
  void need(size_t n) const {
    if (data_.size() - at_ < n)
      throw FormatError("the sketch file ends early (at byte " + std::to_string(at_) + "); write it again", ErrorPlace{path_});
  }
  const std::string& path_;
  std::string_view data_;
  size_t at_ = 0;
};

std::string read_whole(const std::string& path) {
  const int fd = io::retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0) throw IoError(std::string("cannot open the sketch file: ") + std::strerror(errno), ErrorPlace{path});
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      throw IoError(std::string("cannot read the sketch file: ") + std::strerror(e), ErrorPlace{path});
    }
    if (r == 0) break;
    data.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return data;
}

}  // namespace

void write_sketches(const std::string& path, const Sketches& s, std::span<const std::string> ids) {
  const size_t n = s.size();
  if (!ids.empty() && ids.size() != n) throw UsageError("write_sketches: give one id per document, or none");
  const std::string spec = s.spec.to_string();
  std::string b(kSketchMagic, sizeof kSketchMagic);
  put<uint32_t>(b, kSketchVersion);
  put<uint32_t>(b, static_cast<uint32_t>(spec.size()));
  b += spec;
  put<uint64_t>(b, n);
  put<uint32_t>(b, ids.empty() ? 0u : 1u);
  const auto k = static_cast<size_t>(s.spec.num_perm);
  for (DocId d = 0; d < n; ++d) {
    put<uint8_t>(b, s.empty[d]);
    switch (s.spec.method) {
      case SketchMethod::MinHash:
      case SketchMethod::Oph:
        b.append(reinterpret_cast<const char*>(s.signatures.data() + d * k), k * sizeof(SigValue));
        break;
      case SketchMethod::BottomK: {
        const auto fp = s.fingerprints[d];
        put<uint32_t>(b, static_cast<uint32_t>(fp.size()));
        b.append(reinterpret_cast<const char*>(fp.data()), fp.size() * sizeof(SigValue));
        break;
      }
      case SketchMethod::SimHash: put<uint64_t>(b, s.simhashes[d]); break;
      case SketchMethod::Exact: break;
    }
  }
  for (const std::string& id : ids) {
    put<uint32_t>(b, static_cast<uint32_t>(id.size()));
    b += id;
  }
  put<uint64_t>(b, internal::hash_bytes(b.data(), b.size(), kSketchSeed));
  io::AtomicFile out(path);
  out.write(b);
  out.commit();
}

SketchFile read_sketches(const std::string& path) {
  const std::string data = read_whole(path);
  if (data.size() < sizeof kSketchMagic + 8 || std::memcmp(data.data(), kSketchMagic, sizeof kSketchMagic) != 0)
    throw FormatError("not a neardup sketch file (no NDSKETCH header); give a file written by write_sketches", ErrorPlace{path});
  uint64_t stored;
  std::memcpy(&stored, data.data() + data.size() - 8, 8);
  if (internal::hash_bytes(data.data(), data.size() - 8, kSketchSeed) != stored)
    throw FormatError("the sketch file fails its checksum (damaged or truncated); write it again", ErrorPlace{path});
  Cursor c(path, std::string_view(data).substr(0, data.size() - 8));
  c.bytes(sizeof kSketchMagic);
  const auto version = c.get<uint32_t>();
  if (version != kSketchVersion)
    throw FormatError("sketch file version " + std::to_string(version) + ", this neardup reads version " +
                      std::to_string(kSketchVersion) + "; sketch the documents again", ErrorPlace{path});
  SketchFile f;
  Sketches& s = f.sketches;
  s.spec = PipelineSpec::parse(c.bytes(c.get<uint32_t>())).resolved();
  const auto n = c.get<uint64_t>();
  const bool has_ids = (c.get<uint32_t>() & 1u) != 0;
  const auto k = static_cast<size_t>(s.spec.num_perm);
  s.fingerprints.size = s.spec.sketch_size;
  std::vector<SigValue> fp;
  for (uint64_t d = 0; d < n; ++d) {
    s.empty.push_back(c.get<uint8_t>());
    switch (s.spec.method) {
      case SketchMethod::MinHash:
      case SketchMethod::Oph: {
        const auto raw = c.bytes(k * sizeof(SigValue));
        const size_t at = s.signatures.size();
        s.signatures.resize(at + k);
        std::memcpy(s.signatures.data() + at, raw.data(), raw.size());
        break;
      }
      case SketchMethod::BottomK: {
        const auto m = c.get<uint32_t>();
        const auto raw = c.bytes(static_cast<size_t>(m) * sizeof(SigValue));
        fp.resize(m);
        std::memcpy(fp.data(), raw.data(), raw.size());
        s.fingerprints.push_back(fp);
        break;
      }
      case SketchMethod::SimHash: s.simhashes.push_back(c.get<uint64_t>()); break;
      case SketchMethod::Exact: break;
    }
  }
  if (has_ids)
    for (uint64_t d = 0; d < n; ++d) f.ids.emplace_back(c.bytes(c.get<uint32_t>()));
  return f;
}

}  // namespace neardup
