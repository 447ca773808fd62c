// Each rank's share of the inputs through the engine's first pass; documents numbered across the
// ranks; the reading counts merged; ids unique across the ranks; keep-by kinds agreed on.
#include "run.h"

#include "pipeline/policies.h"

namespace neardup::mpi {

// The share's records through the engine's first pass (sketch_records): read here, parsed,
// shingled and sketched on every thread, taken in input order; bad records are reported as one
// process reports them (the first stops the run, or each is counted and skipped).
void Run::read_share(const Share& share) {
  io::RecordReader reader(*inputs_, ro_.reader);
  reader.read_sources(share.first, share.last, share.begin, share.end);
  // The compressed JSONL files this rank reads whole are kept decompressed (io::ScratchCopy), so
  // that verification and the kept records' copy read them by position instead of decompressing
  // them again, as one process does (where none can be made, they are).
  reader.keep_decompressed_copies(io::temp_directory());
  io::BadRecords bad(ro_.reader);
  const bool exact = spec_.verify == VerifyMode::Exact;
  const auto bands = static_cast<size_t>(spec_.lsh.bands);
  local_.sketches.reset(exact ? bands : 0, spec_.sketch_size);
  if (spill_keys_) local_.sketches.spill_keys_to(io::temp_directory());  // choose_spill
  std::vector<uint64_t> keys(exact ? bands : 0);
  local_.num_perm = static_cast<size_t>(spec_.num_perm);
  const bool keep_by = !ro_.reader.key_field.empty();
  const SketchTotals totals = sketch_records(reader, *inputs_, spec_, ro_.reader, threads_, bad, [&](const SketchedRecord& r) {
    local_.line.push_back(r.line);
    local_.pos.push_back({r.source, r.raw_length, r.offset});
    local_.source.push_back(r.source);
    local_.ids.emplace_back(r.id);
    if (keep_by) {
      local_.key_kind.push_back(static_cast<uint8_t>(r.key.kind));
      local_.key_num.push_back(r.key.number);
      local_.key_text.emplace_back(r.key.text);
    }
    // The texts are not kept: verification reads them again.
    local_.lengths.push_back(static_cast<uint32_t>(r.text_length));  // <= max_doc_bytes
    if (exact) {
      for (size_t b = 0; b < bands; ++b) keys[b] = signature_band_key(r.signature, static_cast<int>(b), spec_.lsh, spec_.shingle.seed);
      local_.sketches.push_keys(keys.data());
    } else {
      local_.sketches.sigs->append(r.signature.data(), r.signature.size());
    }
    local_.sketches.empty.push_back(r.empty);
  });
  local_.sketches.finish_keys();
  if (internal::SpilledColumns* const spilled = local_.sketches.spilled.get()) {
    spilled->finish();
    local_.key_columns.clear();
    for (size_t b = 0; b < bands; ++b) local_.key_columns.push_back(reinterpret_cast<const uint64_t*>(spilled->map(b).data()));
  }
  auto copies = reader.take_decompressed_copies();
  for (size_t i = 0; i < copies.size(); ++i)
    if (copies[i]) inputs_->read_again_from(i, std::move(copies[i]));
  local_.shingles += totals.shingles;
  local_.reader.invalid_utf8 += totals.invalid_utf8;
  local_.reader.missing_ids += totals.missing_ids;
  local_.reader.binary = reader.stats().binary;
  local_.reader.skipped = bad.skipped();
  local_.reader.first_skips = bad.first();
  local_.reader.skip_kinds = bad.kinds();
}

io::ReaderStats Run::gather_reader_stats() {
  const io::ReaderStats& mine = local_.reader;
  Packer p;
  p.put(mine.skipped);
  p.put(mine.invalid_utf8);
  p.put(mine.missing_ids);
  p.put(mine.binary);
  p.put(static_cast<uint64_t>(mine.first_skips.size()));
  for (const std::string& m : mine.first_skips) p.put_string(m);
  p.put(static_cast<uint64_t>(mine.skip_kinds.size()));
  for (const auto& [kind, n] : mine.skip_kinds) {
    p.put_string(kind);
    p.put(n);
  }
  const auto all = c_.all_gather(p.bytes());
  if (c_.rank() != 0) return mine;
  io::ReaderStats out;
  io::BadRecords merged(ro_.reader);
  for (const std::string& g : all) {  // in rank order: the shares' order in the inputs
    Unpacker u(g);
    const auto skipped = u.get<uint64_t>();
    out.invalid_utf8 += u.get<uint64_t>();
    out.missing_ids += u.get<uint64_t>();
    out.binary += u.get<uint64_t>();
    std::vector<std::string> first(u.get<uint64_t>());
    for (std::string& m : first) m = std::string(u.get_string());
    std::vector<std::pair<std::string, uint64_t>> kinds(u.get<uint64_t>());
    for (auto& [kind, n] : kinds) {
      kind = std::string(u.get_string());
      n = u.get<uint64_t>();
    }
    merged.add(skipped, first, kinds);
  }
  out.skipped = merged.skipped();
  out.first_skips = merged.first();
  out.skip_kinds = merged.kinds();
  return out;
}

void Run::number_documents() {
  Packer p;
  p.put(static_cast<uint64_t>(local_.size()));
  const auto all = c_.all_gather(p.bytes());
  bases_.assign(static_cast<size_t>(c_.size()) + 1, 0);
  for (int r = 0; r < c_.size(); ++r)
    bases_[static_cast<size_t>(r) + 1] = bases_[static_cast<size_t>(r)] + static_cast<DocId>(Unpacker(all[static_cast<size_t>(r)]).get<uint64_t>());
  local_.base = bases_[static_cast<size_t>(c_.rank())];
}

// Ids name documents in the outputs: each id goes to the rank its hash names, which finds the
// records that reuse an earlier one's id; the first such record in input order is reported, as
// one process reports it.
void Run::check_duplicate_ids() {
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  std::vector<Packer> packs(static_cast<size_t>(c_.size()));
  for (size_t i = 0; i < local_.size(); ++i) {
    const auto h = std::hash<std::string>{}(local_.ids[i]);
    Packer& p = packs[static_cast<size_t>(mix64(h) % static_cast<uint64_t>(c_.size()))];
    p.put(static_cast<DocId>(local_.base + i));
    p.put_string(local_.ids[i]);
    p.put(local_.source[i]);
    p.put(local_.line[i]);
  }
  for (int r = 0; r < c_.size(); ++r) out[static_cast<size_t>(r)] = std::move(packs[static_cast<size_t>(r)].bytes());
  const auto in = c_.exchange(std::move(out));
  struct Entry {
    std::string_view id;
    DocId doc;
    uint32_t source;
    uint64_t line;
  };
  std::vector<Entry> entries;
  for (const std::string& buf : in) {
    Unpacker u(buf);
    while (!u.done()) {
      const auto doc = u.get<DocId>();
      const auto id = u.get_string();
      const auto source = u.get<uint32_t>();
      entries.push_back({id, doc, source, u.get<uint64_t>()});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.id != b.id ? a.id < b.id : a.doc < b.doc; });
  uint64_t dups = 0;
  const Entry* later = nullptr;
  const Entry* earlier = nullptr;
  for (size_t i = 0; i < entries.size();) {
    size_t j = i + 1;
    while (j < entries.size() && entries[j].id == entries[i].id) ++j;
    dups += j - i - 1;
    if (j - i > 1 && (!later || entries[i + 1].doc < later->doc)) {
      later = &entries[i + 1];
      earlier = &entries[i];
    }
    i = j;
  }
  const uint64_t total = c_.all_reduce(dups, MPI_SUM);
  const uint64_t first = c_.all_reduce(later ? uint64_t{later->doc} : UINT64_MAX, MPI_MIN);
  steps_.agree([&] {
    if (total == 0 || ro_.duplicate_ids != DuplicateIds::Error || !later || later->doc != first) return;
    const auto& sources = inputs_->sources();
    ReusedIdKind kind = ReusedIdKind::Records;
    if (inputs_->all_text())
      kind = ReusedIdKind::TextFileTwice;
    else if (one_file_twice(*inputs_, later->source, earlier->source))
      kind = ReusedIdKind::JsonlFileTwice;
    throw reused_id_error(kind, later->id, total, where_of(sources[earlier->source], earlier->line, earlier->id),
                          place_of(sources[later->source], later->line, later->id));
  });
}

// --keep-by compares numbers with numbers and strings with strings: a field that is a number in
// one record and a string in another stops the run, naming the first of each as one process does.
void Run::check_key_kinds() {
  using Kind = io::KeyValue::Kind;
  uint64_t number = UINT64_MAX, string = UINT64_MAX;
  for (size_t i = 0; i < local_.size(); ++i) {
    const auto kind = static_cast<Kind>(local_.key_kind[i]);
    if (kind == Kind::Number) number = std::min<uint64_t>(number, local_.base + i);
    if (kind == Kind::String) string = std::min<uint64_t>(string, local_.base + i);
  }
  number = c_.all_reduce(number, MPI_MIN);
  string = c_.all_reduce(string, MPI_MIN);
  if (number == UINT64_MAX || string == UINT64_MAX) return;
  const auto earlier = static_cast<DocId>(std::min(number, string)), later = static_cast<DocId>(std::max(number, string));
  std::vector<std::string> storage;
  auto told = ask_owners({earlier}, [&](std::span<const DocId> want, Packer& p) {
    for (const DocId d : want) p.put_string(local_where(d - local_.base));
  }, storage);
  const std::string where_earlier(told[static_cast<size_t>(owner_of(bases_, earlier))].get_string());
  steps_.agree([&] {
    if (!local_.has(later)) return;
    throw keep_by_kinds_differ(ro_, later == number, where_earlier, local_place(later - local_.base));
  });
}

}  // namespace neardup::mpi
