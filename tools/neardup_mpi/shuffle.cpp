// The shuffle: band keys sent to the ranks that own their buckets; the payloads (band keys or
// signatures, ids, the sets or where their records lie) fetched from the ranks that read the
// documents.
#include "run.h"

namespace neardup::mpi {

namespace {

// Sorts shuffle entries by band, then key, stably: entries arrive in document order (the ranks'
// ranges ascend, and each sent its documents in order), so each bucket's members stay ascending.
// One counting pass on the band and the key's top bits, then each of those small runs by key
// (band keys are hashes: about 2^20 entries a rank over 21 x 2048 runs at a time; equal keys, a
// bucket's members, stay in order): two passes over the entries where a radix sort of the whole
// key takes seven.
template <class Entry>
void sort_by_band_and_key(std::vector<Entry>& entries) {
  constexpr int kTopBits = 11;
  uint32_t bands = 0;
  for (const Entry& e : entries) bands = std::max(bands, e.band + 1);
  const auto run_of = [](const Entry& e) { return (size_t{e.band} << kTopBits) | static_cast<size_t>(e.key >> (64 - kTopBits)); };
  std::vector<size_t> start((size_t{bands} << kTopBits) + 1, 0);
  for (const Entry& e : entries) ++start[run_of(e) + 1];
  for (size_t r = 1; r < start.size(); ++r) start[r] += start[r - 1];
  std::vector<Entry> sorted(entries.size());
  {
    std::vector<size_t> at(start.begin(), start.end() - 1);
    for (const Entry& e : entries) sorted[at[run_of(e)]++] = e;
  }
  const auto by_key = [](const Entry& a, const Entry& b) { return a.key < b.key; };
  for (size_t r = 0; r + 1 < start.size(); ++r) {
    Entry* const first = sorted.data() + start[r];
    Entry* const last = sorted.data() + start[r + 1];
    if (last - first <= 32) {  // insertion sort: stable, and linear on a run already in order
      for (Entry* x = first + 1; x < last; ++x)
        for (Entry* y = x; y > first && by_key(*y, *(y - 1)); --y) std::swap(*y, *(y - 1));
    } else {
      std::stable_sort(first, last, by_key);
    }
  }
  entries.swap(sorted);
}

}  // namespace

// Shuffle by band key, bands in rounds of at most kShuffleRoundBytes per rank; each rank groups
// the entries it owns into buckets (documents whose band agrees), which by_component() then
// sends to the ranks that verify them.
Buckets Run::find_buckets() {
  const LshParams lsh = spec_.lsh;
  // Bands per round so that a rank sends at most kShuffleRoundBytes of entries (16 bytes each):
  // what it sends, what it receives and the sorted copy each take that much at the stage's peak
  // (1M short documents on 2 ranks: 64 MiB rounds peak at 274 MiB a rank, one round of all 21
  // bands at 357 MiB, and take no longer).
  // (Under a memory limit, less: choose_spill.)
  const uint64_t budget = round_bytes_;
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
    for (std::string& o : out)  // about a rank's share of the entries, without growing as it fills
      o.reserve(local_.size() * static_cast<size_t>(b1 - b0) * sizeof(Entry) / static_cast<size_t>(nranks) * 9 / 8);
    const bool exact = spec_.verify == VerifyMode::Exact;
    // Band by band, each rank's documents in order: every (band, key) run a rank receives holds
    // each sender's documents ascending, and the senders in rank order (sort_by_band_and_key).
    for (int band = b0; band < b1; ++band) {
      for (size_t i = 0; i < local_.size(); ++i) {
        if (local_.sketches.empty[i]) continue;
        const uint64_t key = exact ? band_key(static_cast<size_t>(band), i) : signature_band_key(local_.signatures(i), band, lsh, spec_.shingle.seed);
        const Entry e{key, static_cast<uint32_t>(band), static_cast<DocId>(local_.base + i)};
        out[static_cast<size_t>(mix64(e.key ^ (uint64_t{e.band} << 40)) % static_cast<uint64_t>(nranks))].append(
            reinterpret_cast<const char*>(&e), sizeof e);
      }
      if (local_.sketches.spilled) local_.sketches.spilled->drop_pages(static_cast<size_t>(band), 0, local_.size() * sizeof(uint64_t));
    }
    std::vector<Entry> entries;
    {  // what came is let go before the sort takes its scratch: a rank's peak in this stage
      const auto in = c_.exchange(std::move(out));
      size_t total = 0;
      for (const std::string& buf : in) total += buf.size() / sizeof(Entry);
      entries.resize(total);
      size_t at = 0;
      for (const std::string& buf : in) {
        const size_t n = buf.size() / sizeof(Entry);
        std::memcpy(entries.data() + at, buf.data(), n * sizeof(Entry));
        at += n;
      }
    }
    sort_by_band_and_key(entries);
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
  // The same bucket from several bands (or rounds) once here; by_component() gathers the
  // copies found on other ranks.
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  uint64_t largest = 0;
  for (const auto& b : found) largest = std::max<uint64_t>(largest, b.size());
  largest_bucket_ = largest;
  return balance(by_component(std::move(found)));
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

// The payloads of `docs` (with what clustering needs: ids, lengths and keep-by values): from
// this rank's own records directly, and from the ranks that read the others. A set whose record
// any rank can read by position (at_position) is not sent: the owner sends where the record
// lies, and the asking rank reads it itself (read_sets_at, after fetch), so that the re-reading
// follows the verification, which balance() spreads evenly, not the input. The other sets
// (compressed inputs, text files) are computed by their owner (load_sets, as the single
// process's verification pass reads): first those other ranks asked for, then its own, which it
// moves into the payloads without a copy.
Payloads Run::fetch(std::vector<DocId> docs, bool for_clusters) {
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  const bool exact = spec_.verify == VerifyMode::Exact;
  std::vector<DocId> mine, remote;
  for (const DocId d : docs) (local_.has(d) ? mine : remote).push_back(d);
  std::vector<std::string> storage;
  std::unordered_map<DocId, uint32_t> asks;  // per set loaded for other ranks: those yet to pack it
  // First the sets other ranks asked for, each let go once packed for the last of them (unless
  // this rank's group needs it too) and sent; then this rank's own: a rank never holds both
  // all it sends and all it keeps. A failure while reading the sets again (an input changed) is
  // agreed on after the exchange, so that no rank leaves it halfway.
  std::exception_ptr failed;
  auto readers = ask_owners(remote, [&](std::span<const DocId> want, Packer& p) {
    if (failed) return;
    std::unordered_map<uint32_t, uint64_t> sent;  // a stored set -> the first ordinal here that sent it
    for (uint64_t j = 0; j < want.size(); ++j) {
      const DocId d = want[j];
      const size_t l = d - local_.base;
      if (exact && at_position(l)) {
        p.put(kAtPosition);
        p.put(local_.pos[l]);
        p.put(local_.lengths[l]);
        p.put(local_.line[l]);
      } else if (exact) {
        const auto [it, first] = sent.try_emplace(loaded_sets_.slot(d), j);
        if (first)
          p.put_vector(loaded_sets_.get(d));
        else
          p.put(kSameSet | it->second);
        if (--asks[d] == 0 && !std::binary_search(mine.begin(), mine.end(), d)) loaded_sets_.release(d);
      }
      pack_payload(l, for_clusters, p);
    }
  }, storage, exact ? std::function<void(std::vector<DocId>)>([&](std::vector<DocId> all) {
    std::erase_if(all, [&](DocId d) { return at_position(d - local_.base); });
    for (const DocId d : all) ++asks[d];
    try {
      load_sets(std::move(all));
    } catch (...) {
      failed = std::current_exception();
    }
  }) : nullptr);
  steps_.agree([&] {
        if (failed) std::rethrow_exception(failed);
        if (!exact) return;
        std::vector<DocId> unread;
        for (const DocId d : mine)
          if (!at_position(d - local_.base) && !loaded_sets_.has(d)) unread.push_back(d);
        load_sets(std::move(unread));
      });
  Payloads pl(docs, spec_, for_clusters);
  // docs ascending: each rank's answers in turn (its documents are a run of docs from `first`),
  // each let go once read.
  size_t owner_now = SIZE_MAX, first = 0;
  std::unordered_map<uint32_t, DocId> own;  // a stored set -> the first of mine that took it
  for (size_t i = 0; i < docs.size(); ++i) {
    const DocId d = docs[i];
    if (local_.has(d)) {
      const size_t l = d - local_.base;
      if (exact && at_position(l)) {
        pl.to_read.push_back({i, local_.pos[l], local_.lengths[l], local_.line[l]});
      } else if (exact) {
        const auto [it, fresh] = own.try_emplace(loaded_sets_.slot(d), static_cast<DocId>(i));
        if (fresh) {
          pl.sets.set(static_cast<DocId>(i), loaded_sets_.take(d));
        } else {
          pl.sets.share(static_cast<DocId>(i), it->second);
          loaded_sets_.release(d);
        }
      }
      Packer p;  // the few fixed-size values, through the same packing as the others'
      pack_payload(l, for_clusters, p);
      Unpacker u(p.bytes());
      pl.take(i, u, false, i);
      continue;
    }
    const size_t owner = static_cast<size_t>(owner_of(bases_, d));
    if (owner != owner_now) {
      if (owner_now != SIZE_MAX) std::string().swap(storage[owner_now]);
      owner_now = owner;
      first = i;
    }
    pl.take(i, readers[owner], exact, first);
  }
  loaded_sets_.clear();
  return pl;
}

// Document l's payload after its set: its band keys (exact: whether two documents share a band)
// or its signature (the estimate); for clustering its id, length and keep-by value.
void Run::pack_payload(size_t l, bool for_clusters, Packer& p) const {
  if (spec_.verify == VerifyMode::Exact) {
    const size_t bands = static_cast<size_t>(spec_.lsh.bands);
    p.put(static_cast<uint64_t>(bands));  // as put_vector: the count, then the values
    for (size_t b = 0; b < bands; ++b) p.put(band_key(b, l));
  } else {
    p.put_vector(local_.signatures(l));
  }
  if (!for_clusters) return;
  const bool by_field = ro_.keep == KeepPolicy::Field;
  p.put_string(local_.ids[l]);
  p.put(local_.lengths[l]);
  p.put(by_field ? local_.key_kind[l] : uint8_t{0});
  p.put(by_field ? local_.key_num[l] : 0.0);
  p.put_string(by_field ? std::string_view(local_.key_text[l]) : std::string_view());
}

Payloads::Payloads(std::vector<DocId> d, const PipelineSpec& spec, bool for_clusters)
    : Payloads(std::move(d), static_cast<size_t>(spec.lsh.bands), static_cast<size_t>(spec.num_perm), for_clusters,
               spec.verify == VerifyMode::Exact) {}

Payloads::Payloads(std::vector<DocId> d, size_t bands_, size_t k_, bool for_clusters, bool exact)
    : docs(std::move(d)), sets(docs.size()), clusters(for_clusters), bands(bands_), k(k_) {
  if (exact)
    band_keys.resize(docs.size() * bands);
  else
    sigs.resize(docs.size() * k);
}

Payloads Payloads::subset(std::vector<DocId> some) const {
  Payloads out(std::move(some), bands, k, clusters, !band_keys.empty());
  size_t next = 0;  // in to_read, ascending by i
  for (size_t j = 0; j < out.docs.size(); ++j) {
    const size_t i = index(out.docs[j]);
    if (!band_keys.empty())
      std::copy_n(band_keys.begin() + static_cast<ptrdiff_t>(i * bands), bands, out.band_keys.begin() + static_cast<ptrdiff_t>(j * bands));
    else
      std::copy_n(sigs.begin() + static_cast<ptrdiff_t>(i * k), k, out.sigs.begin() + static_cast<ptrdiff_t>(j * k));
    if (clusters) {
      const io::KeyValue key = table.key(static_cast<DocId>(i));
      out.table.add(table.id(static_cast<DocId>(i)), table.length(static_cast<DocId>(i)), nullptr, &key);
    }
    while (next < to_read.size() && to_read[next].i < i) ++next;
    if (next < to_read.size() && to_read[next].i == i) out.to_read.push_back({j, to_read[next].pos, to_read[next].length, to_read[next].line});
  }
  return out;
}

// Document i's payload from `u` (pack_payload's, after the set when with_set).
void Payloads::take(size_t i, Unpacker& u, bool with_set, size_t first) {
  if (with_set) {
    const auto n = u.get<uint64_t>();
    if (n == kAtPosition) {
      SetAt a{i, u.get<io::RecordPos>(), 0, 0};
      a.length = u.get<uint32_t>();
      a.line = u.get<uint64_t>();
      this->to_read.push_back(a);
    } else if (n & kSameSet)
      sets.share(static_cast<DocId>(i), static_cast<DocId>(first + (n & ~kSameSet)));
    else
      sets.set(static_cast<DocId>(i), u.get_values<ShingleHash>(n));
  }
  if (!band_keys.empty()) {
    const auto keys = u.get_vector<uint64_t>();
    std::copy(keys.begin(), keys.end(), band_keys.begin() + static_cast<ptrdiff_t>(i * bands));
  } else {
    const auto sig = u.get_vector<SigValue>();
    std::copy(sig.begin(), sig.end(), sigs.begin() + static_cast<ptrdiff_t>(i * k));
  }
  if (!clusters) return;
  // In order: document i is the table's i-th.
  const std::string_view id = u.get_string();
  const auto length = u.get<uint32_t>();
  io::KeyValue key;
  key.kind = static_cast<io::KeyValue::Kind>(u.get<uint8_t>());
  key.number = u.get<double>();
  key.text = u.get_string();
  table.add(id, length, nullptr, &key);
}

}  // namespace neardup::mpi
