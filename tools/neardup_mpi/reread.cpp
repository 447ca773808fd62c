// Verification's shingle sets, read again through the engine (shingle_set_records, as one
// process's verification reads): by the rank that verifies a record of an uncompressed JSONL
// file (read_sets_at), by the rank that read the others (load_sets), with one check that each
// record is still what the first pass read.
#include "run.h"

namespace neardup::mpi {

// Shingles again the `count` records `reader` gives, and hands each one's set to `to`.
void Run::shingle_again(io::RecordReader& reader, size_t count, const Reread& to) {
  const auto input_changed = [](ErrorPlace where) {
    return IoError("the input changed while neardup-mpi was running (do not modify inputs during a run)", std::move(where));
  };
  size_t handed = 0;
  shingle_set_records(reader, *inputs_, spec_, ro_.reader, threads_, [&](ShingledRecord& r) {
    if (r.ordinal >= count) throw input_changed(ErrorPlace{});
    if (r.text_length != to.length(r.ordinal))
      throw IoError("the record changed while neardup-mpi was running (do not modify inputs during a run)", to.place(r.ordinal));
    if (r.same_as != ShingledRecord::kNone)  // a copy of the text of a record handed over before
      to.share(r.ordinal, r.same_as);
    else
      to.put(r.ordinal, std::move(r.set));
    ++handed;
  });
  if (handed != count) throw input_changed(to.place(handed));
}

// Computes the shingle sets of documents read here (ascending) into loaded_sets_: JSONL records by
// position, text files in runs of consecutive needed files. They stay until fetch() has packed
// them for the ranks that asked.
void Run::load_sets(std::vector<DocId> docs) {
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  // Reads what `reader` gives, the k-th record being document read_docs[k].
  auto read = [&](io::RecordReader& reader, const std::vector<DocId>& read_docs) {
    Reread to;
    to.length = [&](size_t k) { return uint64_t{local_.lengths[read_docs[k] - local_.base]}; };
    to.place = [&](size_t k) { return local_place(read_docs[k] - local_.base); };
    to.put = [&](size_t k, std::vector<ShingleHash> set) { loaded_sets_.set(read_docs[k], std::move(set)); };
    to.share = [&](size_t k, size_t j) { loaded_sets_.share(read_docs[k], read_docs[j]); };
    shingle_again(reader, read_docs.size(), to);
  };
  std::vector<io::RecordPos> positions;
  std::vector<DocId> by_position, files;
  for (const DocId d : docs) {
    const size_t l = d - local_.base;
    if (inputs_->sources()[local_.source[l]].kind == io::SourceKind::Jsonl) {
      positions.push_back(local_.pos[l]);
      by_position.push_back(d);
    } else {
      files.push_back(d);  // a text file: its one record
    }
  }
  if (!positions.empty()) {
    io::RecordReader reader(*inputs_, ro_.reader);
    reader.select(std::move(positions));
    read(reader, by_position);
  }
  for (size_t i = 0; i < files.size();) {
    size_t j = i + 1;
    const uint32_t first = local_.source[files[i] - local_.base];
    while (j < files.size() && local_.source[files[j] - local_.base] == first + (j - i)) ++j;
    io::RecordReader reader(*inputs_, ro_.reader);
    reader.read_sources(first, first + (j - i));
    read(reader, std::vector<DocId>(files.begin() + static_cast<ptrdiff_t>(i), files.begin() + static_cast<ptrdiff_t>(j)));
    i = j;
  }
}

// Whether the rank that verifies this rank's document l reads its set itself, by position: a
// record of an uncompressed JSONL file, which every rank can read at any offset. The others (a
// compressed file, read from this rank's decompressed copy; a text file of a folder) are read
// here and sent.
bool Run::at_position(size_t l) { return plain_sources()[local_.source[l]]; }

const std::vector<bool>& Run::plain_sources() {
  if (plain_.empty()) {
    plain_.resize(inputs_->sources().size());
    for (size_t s = 0; s < plain_.size(); ++s) plain_[s] = !compressed(s);
  }
  return plain_;
}

bool Run::every_set_at_position() {
  const auto& plain = plain_sources();
  return std::find(plain.begin(), plain.end(), false) == plain.end();
}

// Reads the sets of the payloads' documents whose records this rank reads itself (pl.to_read)
// into pl.sets, in the order of their positions.
void Run::read_sets_at(Payloads& pl) {
  std::vector<SetAt> at = std::move(pl.to_read);
  if (at.empty()) return;
  std::sort(at.begin(), at.end(), [](const SetAt& a, const SetAt& b) {
    return a.pos.source != b.pos.source ? a.pos.source < b.pos.source : a.pos.offset < b.pos.offset;
  });
  std::vector<io::RecordPos> positions;
  for (const SetAt& a : at) positions.push_back(a.pos);
  io::RecordReader reader(*inputs_, ro_.reader);
  reader.select(std::move(positions));
  Reread to;
  to.length = [&](size_t k) { return uint64_t{at[k].length}; };
  to.place = [&](size_t k) { return ErrorPlace{inputs_->sources()[at[k].pos.source].display, at[k].line}; };
  to.put = [&](size_t k, std::vector<ShingleHash> set) { pl.sets.set(static_cast<DocId>(at[k].i), std::move(set)); };
  to.share = [&](size_t k, size_t j) { pl.sets.share(static_cast<DocId>(at[k].i), static_cast<DocId>(at[j].i)); };
  shingle_again(reader, at.size(), to);
}

}  // namespace neardup::mpi
