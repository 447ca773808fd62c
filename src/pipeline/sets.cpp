// Shingle sets for verification: kept from the first pass, or read again by position; the
// texts of documents, and the check that the inputs did not change between passes.
#include "pipeline/impl.h"

namespace neardup {

std::vector<DocId> Pipeline::Impl::load_sets_pass(const std::vector<uint8_t>& needed) {
  take_first_pass_sets(needed);
  std::vector<DocId> docs;
  for (DocId d = 0; d < needed.size(); ++d)
    if (needed[d]) docs.push_back(d);
  read_missing_sets(docs, true);
  return docs;
}

void Pipeline::Impl::take_first_pass_sets(const std::vector<uint8_t>& needed) {
  // A copy of an earlier text shares its original's set (read_missing_sets): one it was given
  // in the first pass is let go.
  std::vector<uint8_t> own(needed);
  for (const DocPair& c : text_copies_) own[c.b] = 0;
  sets_.take_early(own, options_.tuning.spill_documents);
  stats_.set_bytes = sets_.sets()->total_hashes() * sizeof(ShingleHash);
  stats_.verify_shared = sets_.sets()->shared_docs();
  uint64_t kept = 0;
  for (DocId d = 0; d < own.size(); ++d) kept += own[d] && sets_.sets()->has(d);
  stats_.verify_kept = kept;
  stats_.verify_docs = 0;
}

void Pipeline::Impl::read_missing_sets(std::span<const DocId> docs, bool progress) {
  std::vector<DocId> missing, copies;
  for (const DocId d : docs)
    if (!sets_.sets()->has(d)) (original_of(d) == d ? missing : copies).push_back(d);
  stats_.verify_docs += missing.size();
  const uint64_t shared_before = sets_.sets()->shared_docs();
  if (!missing.empty()) read_sets(missing, progress);
  share_copies(copies, shared_before);
}

// The documents of `docs` that copy an earlier text share their originals' sets: a copy is not
// read, its original being in its bucket (add_copy_buckets). Counted over the run: the most
// bytes of sets held at once, and every document that shared a copy since the store held
// `shared_before` (a dedup lets each group's sets go before the next group's are read).
void Pipeline::Impl::share_copies(std::span<const DocId> docs, uint64_t shared_before) {
  ShingleSets& sets = *sets_.sets();
  for (const DocId d : docs)
    if (const DocId o = original_of(d); o != d) sets.share(d, o);
  stats_.set_bytes = std::max<uint64_t>(stats_.set_bytes, sets.total_hashes() * sizeof(ShingleHash));
  stats_.verify_shared += sets.shared_docs() - shared_before;
}

// Reads the documents again and stores their sets.
void Pipeline::Impl::read_sets(std::span<const DocId> docs, bool progress) {
  read_sets_into(docs, progress, *sets_.sets(), stats_.verify_copies);
}

// The same into `into`, counting in `copies` the documents whose text one read before had. On
// any thread (a verification in groups reads the next group's while it verifies one).
void Pipeline::Impl::read_sets_into(std::span<const DocId> docs, bool progress, ShingleSets& into, uint64_t& copies) const {
  check_inputs_unchanged();
  io::RecordReader reader(*inputs_, options_.reader);
  // By position: only the needed records are read, and parsed on the workers; the k-th record
  // read is docs[k]. Otherwise every record is read and parsed here, and only the needed ones
  // are shingled.
  std::function<bool(const io::Record&, DocId)> filter;
  size_t next = 0;
  std::vector<uint32_t> lengths;  // of docs
  if (docs_.has_positions()) {
    std::vector<io::RecordPos> at;
    docs_.gather(docs, at, lengths);
    reader.select(std::move(at));
  } else {
    filter = [&](const io::Record& r, DocId ordinal) {
      check_same_record(r, ordinal);
      if (next < docs.size() && docs[next] == ordinal) {
        ++next;
        return true;
      }
      return false;
    };
  }
  shingle_set_records(reader, *inputs_, spec_, options_.reader, threads_, [&](ShingledRecord& r) {
    DocId doc = r.ordinal;
    DocId same_as = r.same_as;
    if (docs_.has_positions()) {
      if (doc >= docs.size()) throw IoError("the input changed while neardup was running; do not modify inputs during a run");
      const uint32_t length = lengths[doc];
      doc = docs[doc];
      if (same_as != ShingledRecord::kNone) same_as = docs[same_as];
      if (r.text_length != length)
        throw IoError(std::string("the record at byte ") + std::to_string(r.offset) +
                      " changed while neardup was running; do not modify inputs during a run", ErrorPlace{inputs_->sources()[r.source].display});
    }
    if (same_as != ShingledRecord::kNone) {
      into.share(doc, same_as);
      ++copies;
    } else
      into.set(doc, std::move(r.set));
  }, filter, progress ? &options_.tuning.progress : nullptr, copies_told_ ? kCopyTextBytes : 0);
}

Scorer Pipeline::Impl::scorer() const noexcept {
  static const ShingleSets kNoSets;  // exact verification before any set was loaded: no pair to score
  if (spec_.verify == VerifyMode::Exact) return Scorer::exact(sets_.sets() ? *sets_.sets() : kNoSets);
  if (spec_.method == SketchMethod::BottomK) return Scorer::bottomk_estimate(sketches_.fps);
  if (spec_.method == SketchMethod::SimHash) return Scorer::simhash_estimate(sketches_.simhashes);
  return Scorer::signature_estimate(signatures(), static_cast<size_t>(spec_.num_perm));
}

void Pipeline::Impl::check_same_record(const io::Record& r, DocId doc) const {
  if (doc >= docs_.size() || r.id != id(doc))
    throw IoError(std::string("the input changed while neardup was running (record ") +
                  std::to_string(static_cast<uint64_t>(doc) + 1) +
                  " differs from the first read); do not modify inputs during a run", ErrorPlace{inputs_->sources()[r.source].display});
}

std::vector<std::string> Pipeline::Impl::texts(std::span<const DocId> docs) const {
  if (!std::is_sorted(docs.begin(), docs.end())) throw UsageError("Pipeline::texts: documents must be in ascending order");
  check_inputs_unchanged();
  std::vector<std::string> out;
  io::RecordReader reader(*inputs_, options_.reader);
  io::Record rec;
  if (docs_.has_positions()) {
    std::vector<io::RecordPos> at;
    std::vector<uint32_t> lengths;
    docs_.gather(docs, at, lengths);
    reader.select(std::move(at));
    for (size_t k = 0; k < docs.size(); ++k) {
      if (!reader.next(rec) || rec.text.size() != lengths[k])
        throw IoError("the input changed while neardup was running; do not modify inputs during a run", place_of(docs[k]));
      out.emplace_back(rec.text);
    }
    return out;
  }
  DocId ordinal = 0;
  size_t next = 0;
  while (next < docs.size() && reader.next(rec)) {
    check_same_record(rec, ordinal);
    if (ordinal++ == docs[next]) {
      out.emplace_back(rec.text);
      ++next;
    }
  }
  if (next < docs.size()) throw IoError("the input changed while neardup was running; do not modify inputs during a run");
  return out;
}

void Pipeline::Impl::check_inputs_unchanged() const {
  const auto& sources = inputs_->sources();
  for (size_t i = 0; i < sources.size() && i < input_stamps_.size(); ++i) {
    if (file_stamp(sources[i].path) != input_stamps_[i])
      throw IoError(std::string("the input changed while neardup was running (its size or modification time ") +
                    "differs from the first read); do not modify inputs during a run", ErrorPlace{sources[i].display});
  }
}

double Pipeline::Impl::similarity(DocId a, DocId b) const {
  return scorer()(std::min(a, b), std::max(a, b));
}

}  // namespace neardup
