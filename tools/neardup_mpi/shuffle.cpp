// The shuffle: band keys sent to the ranks that own their buckets; sets, signatures and ids
// fetched from the ranks that read the documents.
#include "run.h"

namespace neardup::mpi {

// Shuffle by band key, bands in rounds of at most --shuffle-mb per rank; each rank groups the
// entries it owns into buckets (documents whose band agrees), then sends each bucket to the
// rank its member list hashes to, so that a bucket found in many bands (a cluster of copies)
// is verified once.
std::vector<std::vector<DocId>> Run::find_buckets() {
  const LshParams lsh = spec_.lsh;
  // Bands per round so that a rank sends at most kShuffleRoundBytes of entries (16 bytes each).
  constexpr uint64_t kShuffleRoundBytes = uint64_t{512} << 20;
  const uint64_t budget = kShuffleRoundBytes;
  const size_t per_band = std::max<size_t>(1, local_.size()) * 16;
  const int bands_per_round = static_cast<int>(std::clamp<uint64_t>(budget / per_band, 1, static_cast<uint64_t>(lsh.bands)));
  const int nranks = c_.size();
  std::vector<std::vector<DocId>> found;
  struct Entry {
    uint64_t key;
    uint32_t band;
    DocId doc;
  };
  for (int b0 = 0; b0 < lsh.bands; b0 += bands_per_round) {
    const int b1 = std::min(lsh.bands, b0 + bands_per_round);
    std::vector<std::string> out(static_cast<size_t>(nranks));
    for (size_t i = 0; i < local_.size(); ++i) {
      if (local_.sketches.empty[i]) continue;
      const auto sig = local_.sketches.signature(static_cast<DocId>(i));
      for (int band = b0; band < b1; ++band) {
        const Entry e{signature_band_key(sig, band, lsh, spec_.shingle.seed), static_cast<uint32_t>(band), static_cast<DocId>(local_.base + i)};
        out[static_cast<size_t>(mix64(e.key ^ (uint64_t{e.band} << 40)) % static_cast<uint64_t>(nranks))].append(
            reinterpret_cast<const char*>(&e), sizeof e);
      }
    }
    const auto in = c_.exchange(std::move(out));
    std::vector<Entry> entries;
    for (const std::string& buf : in) {
      const size_t n = buf.size() / sizeof(Entry);
      const size_t at = entries.size();
      entries.resize(at + n);
      std::memcpy(entries.data() + at, buf.data(), n * sizeof(Entry));
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.band != b.band ? a.band < b.band : a.key != b.key ? a.key < b.key : a.doc < b.doc;
    });
    for (size_t i = 0; i < entries.size();) {
      size_t j = i + 1;
      while (j < entries.size() && entries[j].band == entries[i].band && entries[j].key == entries[i].key) ++j;
      if (j - i >= 2) {
        std::vector<DocId> members;
        for (size_t x = i; x < j; ++x) members.push_back(entries[x].doc);
        found.push_back(std::move(members));
      }
      i = j;
    }
  }
  // The same bucket from several bands (or rounds) once, on the rank its members hash to.
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::vector<std::string> out(static_cast<size_t>(nranks));
  for (const auto& m : found) {
    uint64_t h = m.size();
    for (const DocId d : m) h = mix64(h ^ d);
    Packer p;
    p.put_vector(m);
    out[static_cast<size_t>(h % static_cast<uint64_t>(nranks))] += p.bytes();
  }
  const auto in = c_.exchange(std::move(out));
  std::vector<std::vector<DocId>> buckets;
  for (const std::string& buf : in) {
    Unpacker u(buf);
    while (!u.done()) buckets.push_back(u.get_vector<DocId>());
  }
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  for (const auto& b : buckets) largest_bucket_ = std::max<uint64_t>(largest_bucket_, b.size());
  return buckets;
}

// Asks the ranks that read `docs` (sorted, distinct) about them: on each, prepare(everything
// asked of it) runs once, then answer(the documents a rank asks for, packer) packs one item per
// document; returns a reader per rank, from which the items come in the order of `docs`
// (`storage` holds the bytes).
std::vector<Unpacker> Run::ask_owners(const std::vector<DocId>& docs, const std::function<void(std::span<const DocId>, Packer&)>& answer,
                                      std::vector<std::string>& storage, const std::function<void(std::vector<DocId>)>& prepare,
                                      const std::function<void()>& answered) {
  std::vector<std::string> ask(static_cast<size_t>(c_.size()));
  {
    std::vector<std::vector<DocId>> per(static_cast<size_t>(c_.size()));
    for (const DocId d : docs) per[static_cast<size_t>(owner_of(bases_, d))].push_back(d);
    for (int r = 0; r < c_.size(); ++r) {
      Packer p;
      p.put_vector(per[static_cast<size_t>(r)]);
      ask[static_cast<size_t>(r)] = std::move(p.bytes());
    }
  }
  const auto asked = c_.exchange(std::move(ask));
  if (prepare) {  // everything asked of this rank, once, before the answers
    std::vector<DocId> all;
    for (const std::string& a : asked) {
      const auto want = Unpacker(a).get_vector<DocId>();
      all.insert(all.end(), want.begin(), want.end());
    }
    prepare(std::move(all));
  }
  std::vector<std::string> replies(static_cast<size_t>(c_.size()));
  for (int r = 0; r < c_.size(); ++r) {
    const auto want = Unpacker(asked[static_cast<size_t>(r)]).get_vector<DocId>();
    Packer p;
    answer(want, p);
    replies[static_cast<size_t>(r)] = std::move(p.bytes());
  }
  if (answered) answered();
  storage = c_.exchange(std::move(replies));
  std::vector<Unpacker> readers;
  for (const std::string& g : storage) readers.emplace_back(g);
  return readers;
}

// Computes the shingle sets of documents read here (ascending) into loaded_sets_, from the inputs
// read again through the engine (shingle_set_records, as one process's verification reads):
// JSONL records by position, text files in runs of consecutive needed files. They stay until
// fetch() has packed them for the ranks that asked.
void Run::load_sets(std::vector<DocId> docs) {
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  // Reads what `reader` gives, the k-th record being document read_docs[k].
  auto read = [&](io::RecordReader& reader, const std::vector<DocId>& read_docs) {
    shingle_set_records(reader, *inputs_, spec_, ro_.reader, threads_, [&](ShingledRecord& r) {
      if (r.ordinal >= read_docs.size()) throw IoError("the input changed while neardup-mpi was running (do not modify inputs during a run)");
      const DocId d = read_docs[r.ordinal];
      if (r.text_length != local_.lengths[d - local_.base])
        throw IoError("the record changed while neardup-mpi was running (do not modify inputs during a run)", local_place(d - local_.base));
      // A copy of the text of a record handed over before: its set.
      std::vector<ShingleHash> set = r.same_as != ShingledRecord::kNone ? loaded_sets_.at(read_docs[r.same_as]) : std::move(r.set);
      loaded_sets_.emplace(d, std::move(set));
    });
    if (!read_docs.empty() && loaded_sets_.count(read_docs.back()) == 0)
      throw IoError("the input changed while neardup-mpi was running (do not modify inputs during a run)", local_place(read_docs.back() - local_.base));
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

// The payloads (and ids) of `docs`, from the ranks that read them: each computes the sets of
// its documents asked for (in parallel), as the single process's verification pass does.
Payloads Run::fetch(std::vector<DocId> docs, bool with_ids) {
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  const bool exact = spec_.verify == VerifyMode::Exact;
  const size_t k = static_cast<size_t>(spec_.num_perm);
  std::vector<std::string> storage;
  // A failure while reading the sets again (an input changed) is agreed on after the exchange,
  // so that no rank leaves it halfway.
  std::exception_ptr failed;
  auto readers = ask_owners(docs, [&](std::span<const DocId> want, Packer& p) {
    if (failed) return;
    for (size_t i = 0; i < want.size(); ++i) {
      const size_t l = want[i] - local_.base;
      if (exact) p.put_vector(loaded_sets_.at(want[i]));
      // The signature too: the estimate, or (exact) whether two documents share a band.
      p.put_vector(local_.sketches.signature(static_cast<DocId>(l)));
      p.put_string(with_ids ? std::string_view(local_.ids[l]) : std::string_view());
    }
  }, storage, exact ? std::function<void(std::vector<DocId>)>([&](std::vector<DocId> all) {
    try {
      load_sets(std::move(all));
    } catch (...) {
      failed = std::current_exception();
    }
  }) : nullptr, [&] {
    // Packed: the sets are let go (a later fetch reads again the few it needs).
    std::unordered_map<DocId, std::vector<ShingleHash>>().swap(loaded_sets_);
  });
  steps_.agree([&] {
        if (failed) std::rethrow_exception(failed);
      });
  Payloads pl;
  pl.docs = docs;
  pl.sets = ShingleSets(docs.size());
  pl.sigs.resize(docs.size() * k);
  pl.ids.resize(docs.size());
  // docs ascending: each rank's answers in turn, each let go once read.
  size_t previous = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    const size_t owner = static_cast<size_t>(owner_of(bases_, docs[i]));
    if (owner != previous) std::string().swap(storage[previous]);
    previous = owner;
    Unpacker& u = readers[owner];
    if (exact) pl.sets.set(static_cast<DocId>(i), u.get_vector<ShingleHash>());
    const auto sig = u.get_vector<SigValue>();
    std::copy(sig.begin(), sig.end(), pl.sigs.begin() + static_cast<ptrdiff_t>(i * k));
    pl.ids[i] = std::string(u.get_string());
  }
  return pl;
}

}  // namespace neardup::mpi
