#include "neardup/lsh_index.h"

#include <algorithm>
#include <bit>
#include <queue>
#include <cmath>
#include <string>

#include "internal/big_array.h"
#include "internal/bucket_sort.h"
#include "internal/hash.h"
#include "internal/parallel.h"
#include "internal/radix_sort.h"
#include "internal/repeated_keys.h"
#include "internal/spilled_columns.h"
#include "neardup/error.h"
#include "neardup/tune.h"

namespace neardup {

double lsh_probability(double s, int bands, int rows) noexcept {
  return 1.0 - std::pow(1.0 - std::pow(s, rows), bands);
}

LshParams choose_lsh_params(double threshold, int num_perm) { return lsh_tune_threshold(threshold, num_perm).params; }

uint64_t band_key(std::span<const SigValue> band_values, int band, uint64_t seed) noexcept {
  return internal::hash_bytes(band_values.data(), band_values.size_bytes(), seed + static_cast<uint64_t>(band));
}

bool share_band(std::span<const SigValue> a, std::span<const SigValue> b, const LshParams& p) noexcept {
  for (int band = 0; band < p.bands; ++band) {
    const size_t off = static_cast<size_t>(band) * p.rows;
    if (std::equal(a.begin() + off, a.begin() + off + p.rows, b.begin() + off)) return true;
  }
  return false;
}

namespace {

// Every band's buckets of two or more documents, from key_of(band, doc): per band, the (key,
// doc) entries of the documents not skipped are sorted by key (a stable radix sort from 4K
// entries: documents of a bucket stay in increasing order), and visit(band, docs) is called for
// each bucket, on the thread that sorted the band (a band of many entries first drops those whose
// key is surely unique: internal::keep_repeated_keys), then visit(band, {}) once the band is done.
// Returns the entries per band and the largest bucket per band.
// A document's key in one band: 12 bytes (the key in two halves, so that the entry is aligned
// to 4 and an array of them packs), not 16: the search holds two arrays of them per band in
// flight, its largest memory under a memory limit.
struct BandEntry {
  uint32_t key_lo, key_hi;
  DocId doc;
  static BandEntry of(uint64_t key, size_t doc) noexcept { return {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32), static_cast<DocId>(doc)}; }
  uint64_t key() const noexcept { return uint64_t{key_hi} << 32 | key_lo; }
};
static_assert(sizeof(BandEntry) == 12);

// A bucket's document: from an entry, or from a narrow key's packed word (key << 32 | document).
DocId doc_of(const BandEntry& e) noexcept { return e.doc; }
DocId doc_of(uint64_t packed) noexcept { return static_cast<DocId>(packed); }

// A thread's scratch for narrow_band_buckets, kept from band to band.
struct NarrowScratch {
  std::vector<uint32_t> parts;
  std::vector<uint64_t> words, sorted;
};

// The buckets among e[0, m) (entries of one band, in order of document), sorted in place (tmp:
// scratch of m entries for the radix sort): visit(docs) for each of two or more; returns the
// largest (1 if any entry).
template <class Visit>
uint64_t visit_sorted_buckets(BandEntry* e, BandEntry* tmp, size_t m, Visit&& visit) {
  uint64_t largest = m > 0 ? 1 : 0;
  // The buckets among e[lo, hi), which is in order of key.
  auto visit_runs = [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi;) {
      size_t j = i + 1;
      while (j < hi && e[j].key() == e[i].key()) ++j;
      if (j - i > 1) visit(std::span<const BandEntry>(e + i, j - i));
      largest = std::max<uint64_t>(largest, j - i);
      i = j;
    }
  };
  auto by_key = [](const BandEntry& x, const BandEntry& y) { return x.key() != y.key() ? x.key() < y.key() : x.doc < y.doc; };
  if (m < 4096) {
    std::sort(e, e + m, by_key);
    visit_runs(0, m);
    return largest;
  }
  // Keys are hashes (radix_sort_hashes); the entries of one key stay in order of document.
  internal::radix_sort_hashes(e, tmp, m, [](const BandEntry& x) { return x.key(); }, visit_runs);
  return largest;
}

// The threads that work bands at once: one band each, so no more than the bands.
size_t band_workers(int threads, int bands) noexcept {
  return std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), static_cast<size_t>(bands)));
}

void set_bucket_stats(CandidateStats* stats, std::span<const uint64_t> largest, std::span<const uint64_t> entries) {
  if (!stats) return;
  stats->largest_bucket = largest.empty() ? 0 : *std::max_element(largest.begin(), largest.end());
  stats->bucket_entries = 0;
  for (uint64_t x : entries) stats->bucket_entries += x;
}

// The entries of one band's documents not skipped, into e: those whose key may repeat where the
// band has 4096 or more (internal::RepeatedKeyBits), so that the sort orders few of a corpus's
// mostly unique keys. Returns (the documents searched, the entries in e). Stored keys, cheap to
// read twice, are counted first and only the entries that may repeat written: the others' pages
// are never touched. Computed ones are written all, then filtered in place.
template <class KeyOf>
std::pair<size_t, size_t> band_entries(size_t n, size_t band, std::span<const uint8_t> skip, KeyOf& key_of, bool stored_keys,
                                       BandEntry* e, std::vector<uint64_t>& words) {
  const auto searched = [&](size_t i) { return skip.empty() || !skip[i]; };
  const auto key = [](const BandEntry& x) { return x.key(); };
  size_t all = 0;
  if (n < 4096 || !stored_keys) {
    for (size_t i = 0; i < n; ++i)
      if (searched(i)) e[all++] = BandEntry::of(key_of(band, i), i);
    return {all, all < 4096 ? all : internal::keep_repeated_keys(e, all, key, words)};
  }
  const auto each = [&](auto&& fn) {
    for (size_t i = 0; i < n; ++i)
      if (searched(i)) fn(key_of(band, i), i);
  };
  size_t m = 0;
  all = internal::for_each_repeated_key<size_t>(n, 27, each, [&](uint64_t k, size_t i) { e[m++] = BandEntry::of(k, i); }, words);
  return {all, m};
}

template <class KeyOf, class Visit>
void for_each_bucket(size_t n, int bands, std::span<const uint8_t> skip, int threads, CandidateStats* stats, KeyOf&& key_of,
                     bool stored_keys, Visit&& visit) {
  std::vector<uint64_t> largest(static_cast<size_t>(bands), 0), entries(static_cast<size_t>(bands), 0);
  // Scratch per thread, reused band after band: pages are faulted in and zeroed by the kernel
  // once per thread, not once per band.
  const size_t workers = band_workers(threads, bands);
  std::vector<internal::BigArray<BandEntry>> entry_scratch, sort_scratch;
  for (size_t t = 0; t < workers; ++t) {
    entry_scratch.emplace_back(n);
    sort_scratch.emplace_back(n);
  }
  std::vector<std::vector<uint64_t>> words(workers);
  internal::parallel_for(static_cast<size_t>(bands), threads, [&](size_t band, size_t tid) {
    internal::BigArray<BandEntry>& e = entry_scratch[tid];
    const auto [all, m] = band_entries(n, band, skip, key_of, stored_keys, e.data(), words[tid]);
    entries[band] = all;
    largest[band] = std::max<uint64_t>(all > 0 ? 1 : 0, visit_sorted_buckets(e.data(), sort_scratch[tid].data(), m, [&](std::span<const BandEntry> b) { visit(band, b); }));
    visit(band, std::span<const BandEntry>());
  });
  set_bucket_stats(stats, largest, entries);
}

// The buckets of one band of 32-bit keys (keys[0, n), the documents with skip[d] set left out):
// each entry packed as key << 32 | document, so that sorting the words orders by key, then by
// document. The entries are scattered by the key's top bits into parts of a few thousand (one pass
// over the band, where sorting the whole band takes passes over arrays larger than the cache);
// each part, in the cache, drops the keys surely unique (keep_repeated_keys_in_cache) and sorts
// the rest (bucket_sort_top_bits). visit(bucket) for each run of two or more; returns the largest
// run (1 if any entry) and sets `all` to the entries. e: n words of scratch.
template <class Visit>
uint64_t narrow_band_buckets(const uint32_t* keys, size_t n, std::span<const uint8_t> skip, uint64_t* e, NarrowScratch& s,
                             size_t& all, Visit&& visit) {
  const int part_bits = std::clamp(static_cast<int>(std::bit_width(n)) - 12, 1, 16);
  const int shift = 32 - part_bits;
  std::vector<uint32_t>& at = s.parts;  // each part's start, then its end
  at.assign((size_t{1} << part_bits) + 1, 0);
  const auto searched = [&](size_t i) { return skip.empty() || !skip[i]; };
  for (size_t i = 0; i < n; ++i)
    if (searched(i)) ++at[(keys[i] >> shift) + 1];
  for (size_t p = 1; p < at.size(); ++p) at[p] += at[p - 1];
  all = at.back();
  for (size_t i = 0; i < n; ++i)
    if (searched(i)) e[at[keys[i] >> shift]++] = uint64_t{keys[i]} << 32 | i;  // at[p]: part p's end
  uint64_t largest = all > 0 ? 1 : 0;
  const auto key_below_part = [part_bits](uint64_t x) { return x >> 32 << (32 + part_bits); };
  for (size_t p = 0, from = 0; p + 1 < at.size(); from = at[p++]) {
    uint64_t* v = e + from;
    const size_t m = internal::keep_repeated_keys_in_cache(v, at[p] - from, key_below_part, s.words);
    internal::bucket_sort_top_bits(v, m, s.sorted, part_bits);
    for (size_t i = 0; i < m;) {
      size_t j = i + 1;
      while (j < m && v[j] >> 32 == v[i] >> 32) ++j;
      if (j - i > 1) visit(std::span<const uint64_t>(v + i, j - i));
      largest = std::max<uint64_t>(largest, j - i);
      i = j;
    }
  }
  return largest;
}

// for_each_bucket for bands of 32-bit keys held in memory (narrow_band_buckets).
template <class Visit>
void for_each_narrow_bucket(std::span<const std::span<const uint32_t>> band_keys, size_t n, std::span<const uint8_t> skip,
                            int threads, CandidateStats* stats, Visit&& visit) {
  const int bands = static_cast<int>(band_keys.size());
  std::vector<uint64_t> largest(static_cast<size_t>(bands), 0), entries(static_cast<size_t>(bands), 0);
  const size_t workers = band_workers(threads, bands);
  std::vector<internal::BigArray<uint64_t>> entry_scratch;  // faulted in once per thread, not per band
  for (size_t t = 0; t < workers; ++t) entry_scratch.emplace_back(n);
  std::vector<NarrowScratch> scratch(workers);
  internal::parallel_for(static_cast<size_t>(bands), threads, [&](size_t band, size_t tid) {
    size_t all = 0;
    largest[band] = narrow_band_buckets(band_keys[band].data(), n, skip, entry_scratch[tid].data(), scratch[tid], all,
                                        [&](std::span<const uint64_t> b) { visit(band, b); });
    entries[band] = all;
    visit(band, std::span<const uint64_t>());
  });
  set_bucket_stats(stats, largest, entries);
}

// for_each_bucket over keys read from elsewhere, a chunk at a time (read(band, begin, count,
// out)): each band's keys are read twice, first to find which may repeat (bit tables of up to
// 2^30 bits, 128 MiB, so that few unique keys pass them), then to keep only those entries, so
// that memory holds the entries of documents in buckets and few others, not every document's.
template <class Visit>
void for_each_bucket_read(size_t n, int bands, std::span<const uint8_t> skip, int threads, CandidateStats* stats,
                          const BandKeyReader& read, Visit&& visit) {
  std::vector<uint64_t> largest(static_cast<size_t>(bands), 0), entries(static_cast<size_t>(bands), 0);
  constexpr size_t kChunk = size_t{1} << 16;
  // Scratch per thread, kept from band to band: fresh memory is faulted in once per thread, not
  // once per band (which took the search from 2.1 to 7.6 s on 10 million documents).
  const size_t workers = band_workers(threads, bands);
  struct Scratch {
    std::vector<uint64_t> chunk, words;
    std::vector<BandEntry> e, tmp;
  };
  std::vector<Scratch> scratch(workers);
  internal::parallel_for(static_cast<size_t>(bands), threads, [&](size_t band, size_t tid) {
    Scratch& s = scratch[tid];
    std::vector<uint64_t>& chunk = s.chunk;
    chunk.resize(std::min(n, kChunk));
    const auto each_key = [&](auto&& fn) {
      for (size_t begin = 0; begin < n; begin += kChunk) {
        const size_t count = std::min(kChunk, n - begin);
        read(band, begin, count, chunk.data());
        for (size_t i = 0; i < count; ++i)
          if (skip.empty() || !skip[begin + i]) fn(chunk[i], begin + i);
      }
    };
    std::vector<BandEntry>& e = s.e;
    e.clear();
    const size_t all = internal::for_each_repeated_key<size_t>(
        n, 30, each_key, [&](uint64_t key, size_t i) { e.push_back(BandEntry::of(key, i)); }, s.words);
    std::vector<BandEntry>& tmp = s.tmp;
    if (tmp.size() < e.size()) tmp.resize(e.size());
    entries[band] = all;
    largest[band] = std::max<uint64_t>(all > 0 ? 1 : 0, visit_sorted_buckets(e.data(), tmp.data(), e.size(), [&](std::span<const BandEntry> b) { visit(band, b); }));
    visit(band, std::span<const BandEntry>());
  });
  set_bucket_stats(stats, largest, entries);
}

// Each band's buckets as one stream, ordered by first document: per bucket its size, then its
// documents (4 bytes per bucket besides them, where a vector per bucket would take 24 and an
// allocation). A band's buckets are gathered as they are found (add), and its stream made on the
// thread that found them as soon as the band is done (finish); the bands are then merged, each
// held once (ordering every bucket by first document at once took an array of them all beside
// the bands' and a count per document: 50 MB more at 10 million short documents). With a spill
// directory (a run whose memory is limited), the streams wait for the merge in files there,
// mapped, and let go behind it (drop_behind), so that the search holds one band's buckets per
// thread and the merged ones rather than every band's: 650 MB on 50 million short documents in
// clusters.
class BandStreams {
 public:
  /// The streams of `bands` bands over n documents, merged in `parts` ranges of first documents
  /// (one where they spill).
  BandStreams(size_t n, size_t bands, const std::string& spill_dir, size_t parts)
      : parts_(spill_dir.empty() ? std::max<size_t>(parts, 1) : 1), first_bits_(std::max(1, static_cast<int>(std::bit_width(n)))),
        docs_(bands), refs_(bands), memory_(bands), samples_(bands), cuts_(bands) {
    if (spill_dir.empty()) return;
    spilled_ = std::make_unique<internal::SpilledColumns>(spill_dir, bands, "the LSH buckets");
    dropped_.assign(bands, 0);
  }
  size_t parts() const noexcept { return parts_; }
  /// Where part p's buckets begin in band's stream (p <= parts(): its end), once streams() made
  /// the parts.
  size_t cut(size_t band, size_t p) const noexcept { return cuts_[band][p]; }

  /// A bucket of `band` (documents ascending), on the band's thread: entries or packed words.
  template <class Entry>
  void add(size_t band, std::span<const Entry> b) {
    std::vector<DocId>& d = docs_[band];
    refs_[band].push_back({static_cast<uint32_t>(d.size()), static_cast<uint32_t>(b.size())});
    for (const Entry& e : b) d.push_back(doc_of(e));
  }

  /// The band's buckets ordered by first document (a band holds a document in one bucket at
  /// most, so its first documents differ) into its stream, on the band's thread.
  void finish(size_t band) {
    std::vector<DocId>& d = docs_[band];
    std::vector<Ref>& r = refs_[band];
    {
      std::vector<Ref> scratch(r.size());
      internal::radix_sort_by_bits(r.data(), scratch.data(), r.size(), 0, first_bits_, [&](const Ref& x) { return uint64_t{d[x.start]}; });
    }
    std::vector<DocId>& out = memory_[band];
    if (!spilled_) out.reserve(d.size() + r.size());
    size_t at = 0, k = 0;  // the stream's length so far, in memory or spilled; its buckets
    for (const Ref& x : r) {
      if (parts_ > 1 && k++ % kSampleEvery == 0) samples_[band].push_back({d[x.start], at});
      at += 1 + x.size;
      if (spilled_) {
        spilled_->append(band, &x.size, sizeof x.size);
        spilled_->append(band, d.data() + x.start, x.size * sizeof(DocId));
      } else {
        out.push_back(x.size);
        out.insert(out.end(), d.begin() + x.start, d.begin() + x.start + x.size);
      }
    }
    cuts_[band].assign(parts_ + 1, at);
    cuts_[band][0] = 0;
    std::vector<DocId>().swap(d);
    std::vector<Ref>().swap(r);
  }

  /// Every band's stream, once every band is finished.
  std::vector<std::span<const DocId>> streams(CandidateStats* stats) {
    std::vector<std::span<const DocId>> out(memory_.begin(), memory_.end());
    if (parts_ > 1) cut_parts(out);
    if (spilled_) {
      spilled_->finish();
      if (stats) stats->spilled_bytes += spilled_->bytes();
      for (size_t b = 0; b < out.size(); ++b) {
        const std::span<const std::byte> m = spilled_->map(b);
        out[b] = {reinterpret_cast<const DocId*>(m.data()), m.size() / sizeof(DocId)};  // page-aligned
      }
    }
    return out;
  }

  /// The merge is at `at` of band's stream: a spilled stream's pages before it are let go, a
  /// mebibyte at a time (one of them read again from the file if it is still needed).
  void drop_behind(size_t band, size_t at) {
    if (!spilled_ || at - dropped_[band] < (size_t{1} << 18)) return;
    spilled_->drop_pages(band, dropped_[band] * sizeof(DocId), at * sizeof(DocId));
    dropped_[band] = at;
  }

 private:
  struct Ref {
    uint32_t start, size;  // a band has at most one entry per document: under 2^32
  };
  // The parts of the merge: ranges of first documents with about as many buckets each, from a
  // sample of each band's (every kSampleEvery-th bucket's first document and place). A range of
  // equal width would not do: a bucket's first document is its smallest, so that the buckets of
  // clusters crowd the input's start.
  static constexpr size_t kSampleEvery = 256;
  struct Sample {
    DocId first;
    size_t at;
  };
  void cut_parts(std::span<const std::span<const DocId>> streams) {
    std::vector<DocId> firsts;
    for (const auto& band : samples_)
      for (const Sample& x : band) firsts.push_back(x.first);
    std::sort(firsts.begin(), firsts.end());
    for (size_t p = 1; p < parts_; ++p) {
      const DocId bound = firsts.empty() ? 0 : firsts[firsts.size() * p / parts_];
      for (size_t b = 0; b < streams.size(); ++b) {
        // From the last sample before the bound, bucket by bucket to the first at or past it.
        const auto& band = samples_[b];
        const auto it = std::partition_point(band.begin(), band.end(), [&](const Sample& x) { return x.first < bound; });
        size_t at = std::max(it == band.begin() ? 0 : std::prev(it)->at, cuts_[b][p - 1]);
        while (at < streams[b].size() && streams[b][at + 1] < bound) at += 1 + streams[b][at];
        cuts_[b][p] = at;
      }
    }
  }
  size_t parts_;
  int first_bits_;
  std::vector<std::vector<DocId>> docs_;  // per band, the buckets' documents as found
  std::vector<std::vector<Ref>> refs_;    // and where each bucket's are
  std::vector<std::vector<DocId>> memory_;             // per band, its stream (not spilled)
  std::vector<std::vector<Sample>> samples_;           // per band, for the parts (cut_parts)
  std::vector<std::vector<size_t>> cuts_;              // per band, where each part begins (cut)
  std::unique_ptr<internal::SpilledColumns> spilled_;  // or the streams' files
  std::vector<size_t> dropped_;                        // per band, where its mapped pages were let go up to
};

// The buckets of the bands' streams whose first documents are in part p (BandStreams::cut),
// each distinct list of documents once, ordered by first document: the streams merged by first
// document; one first document's few buckets ordered by the hash of their documents, then by the
// documents, so that the buckets several bands share are adjacent and kept once.
void merge_part(BandStreams& bs, std::span<const std::span<const DocId>> streams, size_t p, LshBuckets& out) {
  // The arrays are reserved for every bucket (pages never written stay out of memory): counting
  // the distinct buckets first would take the merge twice. A position in a stream is that of a
  // bucket's size. The first part's, for every part's buckets: band_buckets appends the others.
  size_t words = 0;
  for (size_t b = 0; b < streams.size(); ++b) words += p == 0 ? streams[b].size() : bs.cut(b, p + 1) - bs.cut(b, p);
  out.members.reserve(words);
  out.offsets.reserve(words / 3 + 1);
  using Head = std::pair<DocId, uint32_t>;  // a band's next first document, and the band
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  std::vector<size_t> next(streams.size()), end(streams.size());
  for (size_t b = 0; b < streams.size(); ++b) {
    next[b] = bs.cut(b, p);
    end[b] = bs.cut(b, p + 1);
    if (next[b] < end[b]) heads.push({streams[b][next[b] + 1], static_cast<uint32_t>(b)});
  }
  std::vector<std::pair<uint64_t, std::span<const DocId>>> keyed;  // one first document's buckets, with their hashes
  while (!heads.empty()) {
    const DocId d = heads.top().first;
    keyed.clear();
    while (!heads.empty() && heads.top().first == d) {
      const uint32_t b = heads.top().second;
      heads.pop();
      const std::span<const DocId> st = streams[b];
      keyed.emplace_back(0, st.subspan(next[b] + 1, st[next[b]]));
      bs.drop_behind(b, next[b]);
      next[b] += 1 + st[next[b]];
      if (next[b] < end[b]) heads.push({st[next[b] + 1], b});
    }
    if (keyed.size() > 1) {
      for (auto& [h, m] : keyed) h = internal::hash_bytes(m.data(), m.size() * sizeof(DocId), 0x42554b54ull);
      std::sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        if (x.first != y.first) return x.first < y.first;
        return std::lexicographical_compare(x.second.begin(), x.second.end(), y.second.begin(), y.second.end());
      });
    }
    for (size_t k = 0; k < keyed.size(); ++k) {
      const auto m = keyed[k].second;
      if (k > 0 && std::ranges::equal(m, keyed[k - 1].second)) continue;
      out.members.insert(out.members.end(), m.begin(), m.end());
      out.offsets.push_back(out.members.size());
    }
  }
}

// The buckets of every band, each distinct list of documents once, ordered by their first
// document (merge_part). each_bucket(visit) runs for_each_bucket (or for_each_bucket_read) with
// visit. The merge is serial per part: the parts, ranges of first documents, are merged on the
// run's threads and joined (1 million short documents in clusters: 0.06 s on one thread, while
// the other had nothing to do); spilled streams, let go behind one merge, in one part.
template <class EachBucket>
LshBuckets band_buckets(size_t n, int bands, const std::string& spill_dir, int threads, CandidateStats* stats, EachBucket&& each_bucket) {
  BandStreams bs(n, static_cast<size_t>(bands), spill_dir, static_cast<size_t>(std::max(threads, 1)));
  each_bucket([&](size_t band, auto b) { b.empty() ? bs.finish(band) : bs.add(band, b); });
  const std::vector<std::span<const DocId>> streams = bs.streams(stats);
  std::vector<LshBuckets> parts(bs.parts());
  internal::parallel_for(parts.size(), threads, [&](size_t p, size_t) { merge_part(bs, streams, p, parts[p]); });
  // The first part's arrays, reserved for all of its streams' buckets, take the others' (each
  // let go once appended).
  LshBuckets out = std::move(parts[0]);
  for (size_t p = 1; p < parts.size(); ++p) {
    const uint64_t base = out.members.size();
    out.members.insert(out.members.end(), parts[p].members.begin(), parts[p].members.end());
    for (size_t i = 1; i < parts[p].offsets.size(); ++i) out.offsets.push_back(base + parts[p].offsets[i]);
    parts[p] = LshBuckets();
  }
  return out;
}

}  // namespace

LshMemory lsh_search_memory(const LshParams& params, int threads, size_t band_arrays, bool narrow_keys) noexcept {
  LshMemory m;
  // For each band in flight, one band per worker: two (key, document) arrays of 12 bytes per
  // document and the two bit tables of keep_repeated_keys (at most 16 bits each per document)
  // (lsh_buckets); or one array of 8-byte entries, the parts' tables and sorts being in the
  // cache (narrow_band_buckets) unless one key holds a large share of the documents, whose part's
  // sort takes a copy of it. Candidates are extra.
  const double per_band = narrow_keys ? 8.0 : 28.0;
  m.per_document = per_band * std::min<double>(std::max(threads, 1), static_cast<double>(params.bands));
  m.fixed = static_cast<double>(band_arrays) * (2 << 20);
  return m;
}

std::vector<DocPair> star_edges(const LshBuckets& buckets) {
  std::vector<DocPair> stars;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    for (size_t x = 1; x < b.size(); ++x) stars.push_back({b[0], b[x]});
  }
  internal::sort_unique_pairs(stars);
  return stars;
}

std::vector<DocPair> bucket_pairs(const LshBuckets& buckets) {
  std::vector<DocPair> out;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    for (size_t y = 1; y < b.size(); ++y)
      for (size_t x = 0; x < y; ++x) out.push_back({b[x], b[y]});
  }
  internal::sort_unique_pairs(out);
  return out;
}

std::vector<DocPair> lsh_candidates(std::span<const SigValue> sigs, size_t k, std::span<const uint8_t> skip,
                                    const LshParams& params, uint64_t seed, int threads, CandidateStats* stats) {
  return star_edges(lsh_buckets(sigs, k, skip, params, seed, threads, stats));
}

std::vector<DocPair> lsh_candidates_from_keys(std::span<const std::span<const uint64_t>> band_keys, std::span<const uint8_t> skip,
                                              int threads, CandidateStats* stats) {
  return star_edges(lsh_buckets_from_keys(band_keys, skip, threads, stats));
}

LshBuckets lsh_buckets(std::span<const SigValue> sigs, size_t k, std::span<const uint8_t> skip, const LshParams& params,
                       uint64_t seed, int threads, CandidateStats* stats) {
  if (params.bands < 1 || params.rows < 1 || static_cast<size_t>(params.bands) * params.rows > k)
    throw UsageError("LSH needs bands x rows <= permutations, got " + std::to_string(params.bands) + "x" +
                     std::to_string(params.rows) + " for " + std::to_string(k));
  const size_t n = k == 0 ? 0 : sigs.size() / k;
  const auto key_of = [&](size_t band, size_t i) { return signature_band_key(sigs.subspan(i * k, k), static_cast<int>(band), params, seed); };
  return band_buckets(n, params.bands, {}, threads, stats, [&](auto&& visit) { for_each_bucket(n, params.bands, skip, threads, stats, key_of, false, visit); });
}

namespace {

// The length of every band of keys (one per document), which must agree.
template <class Key>
size_t band_length(std::span<const std::span<const Key>> band_keys) {
  const size_t n = band_keys.empty() ? 0 : band_keys[0].size();
  for (const auto& k : band_keys)
    if (k.size() != n) throw UsageError("lsh_buckets_from_keys: bands of different lengths");
  return n;
}

}  // namespace

LshBuckets lsh_buckets_from_keys(std::span<const std::span<const uint64_t>> band_keys, std::span<const uint8_t> skip,
                                 int threads, CandidateStats* stats) {
  const size_t n = band_length(band_keys);
  const int bands = static_cast<int>(band_keys.size());
  const auto key_of = [&](size_t band, size_t i) { return band_keys[band][i]; };
  return band_buckets(n, bands, {}, threads, stats, [&](auto&& visit) { for_each_bucket(n, bands, skip, threads, stats, key_of, true, visit); });
}

LshBuckets lsh_buckets_from_narrow_keys(std::span<const std::span<const uint32_t>> band_keys, std::span<const uint8_t> skip,
                                        int threads, CandidateStats* stats) {
  const size_t n = band_length(band_keys);
  return band_buckets(n, static_cast<int>(band_keys.size()), {}, threads, stats,
                      [&](auto&& visit) { for_each_narrow_bucket(band_keys, n, skip, threads, stats, visit); });
}

LshBuckets lsh_buckets_from_reader(size_t n, int bands, const BandKeyReader& read, std::span<const uint8_t> skip, int threads,
                                   CandidateStats* stats, const std::string& spill_dir) {
  if (!skip.empty() && skip.size() != n) throw UsageError("lsh_buckets_from_reader: skip must have a flag per document");
  return band_buckets(n, bands, spill_dir, threads, stats, [&](auto&& visit) { for_each_bucket_read(n, bands, skip, threads, stats, read, visit); });
}

}  // namespace neardup
