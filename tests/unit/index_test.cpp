#include "neardup/index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include "internal/flat_multimap.h"
#include "internal/fuzzing.h"
#include "neardup/error.h"
#include "neardup/lsh_index.h"
#include "neardup/pipeline.h"
#include "test_util.h"

using namespace neardup;
using namespace neardup::test;

namespace {

using Pair = std::pair<std::string, std::string>;

// Families of documents: a base text and copies with a fraction of their words replaced, so
// that similarities spread over the whole range; some empty documents.
std::string make_corpus(uint64_t seed, size_t families, const std::string& prefix = "d") {
  std::mt19937_64 rng(seed);
  std::string out;
  size_t n = 0;
  for (size_t f = 0; f < families; ++f) {
    const auto base = random_words(rng, 40 + rng() % 80, 3000);
    const size_t copies = rng() % 4;
    for (size_t c = 0; c <= copies; ++c) {
      auto w = base;
      const double edit = c == 0 ? 0.0 : 0.02 * static_cast<double>(rng() % 15);
      for (auto& x : w)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < edit) x = "e" + std::to_string(rng() % 100000);
      out += "{\"id\": \"" + prefix + std::to_string(n++) + "\", \"text\": \"" + join(w) + "\"}\n";
    }
    if (f % 37 == 0) out += "{\"id\": \"" + prefix + std::to_string(n++) + "\", \"text\": \" ... \"}\n";
  }
  return out;
}

PipelineSpec spec_of(const std::string& s) { return PipelineSpec::parse(s).resolved(); }

void add_all(NearDupIndex& idx, const std::string& path) {
  io::InputSet in({path}, io::InputFormat::Auto);
  WalkOptions w;
  w.threshold = 2.0;  // everything is inserted
  w.threads = 2;
  index_walk(idx, in, {}, w, [](const WalkRecord&) {});
}

// The corpus written to `data` and an index of it saved to `path`.
void save_corpus_index(const std::string& data, const std::string& path, const std::string& corpus, const PipelineSpec& spec) {
  write_file(data, corpus);
  NearDupIndex idx(spec);
  add_all(idx, data);
  idx.save(path);
}

// Every (query id, indexed id) pair, query ids from the file, ids different.
std::map<Pair, double> query_all(const NearDupIndex& idx, const std::string& path, double t) {
  std::map<Pair, double> out;
  IndexSketcher sk(idx.spec());
  IndexSketch s;
  std::vector<IndexMatch> m;
  io::InputSet in({path}, io::InputFormat::Auto);
  io::RecordReader rr(in, {});
  io::Record r;
  while (rr.next(r)) {
    sk.sketch(r.text, s);
    idx.query(s, t, m);
    for (const auto& x : m)
      if (idx.id(x.doc) != r.id) out[{std::string(r.id), std::string(idx.id(x.doc))}] = x.similarity;
  }
  return out;
}

// The oracle: every ordered pair of documents that shares a band and has similarity >= t.
std::map<Pair, double> brute_force(const std::string& path, const PipelineSpec& spec, double t) {
  IndexSketcher sk(spec);
  std::vector<std::string> ids;
  std::vector<IndexSketch> sk_all;
  io::InputSet in({path}, io::InputFormat::Auto);
  io::RecordReader rr(in, {});
  io::Record r;
  while (rr.next(r)) {
    ids.emplace_back(r.id);
    sk_all.emplace_back();
    sk.sketch(r.text, sk_all.back());
  }
  std::map<Pair, double> out;
  for (size_t a = 0; a < ids.size(); ++a)
    for (size_t b = 0; b < ids.size(); ++b) {
      if (a == b || sk_all[a].set.empty() || sk_all[b].set.empty()) continue;
      if (!share_band(sk_all[a].sig, sk_all[b].sig, spec.lsh)) continue;
      const double s = spec.verify == VerifyMode::Exact ? jaccard(sk_all[a].set, sk_all[b].set)
                                                        : estimate_jaccard(sk_all[a].sig, sk_all[b].sig);
      if (s + kSimilarityEpsilon >= t) out[{ids[a], ids[b]}] = s;
    }
  return out;
}

}  // namespace

TEST(Index, QueryEqualsBruteForceAndBatchPairsBeforeAndAfterReopening) {
  TempDir dir;
  const std::string data = dir.file("c.jsonl"), path = dir.file("c.ndx");
  write_file(data, make_corpus(1, 150));
  for (const std::string s : {"words:3 minhash:64 lsh:16x4 verify:0.5", "words:2 minhash:128 verify:0.7",
                              "words:3 minhash:64 lsh:8x8 estimate:0.6", "words:3 oph:64 lsh:16x4 verify:0.5",
                              "words:3 oph:64 lsh:8x8 estimate:0.6"}) {
    const PipelineSpec spec = spec_of(s);
    const auto want = brute_force(data, spec, spec.threshold);
    ASSERT_GT(want.size(), 50u) << s;  // the families give many pairs
    NearDupIndex idx(spec);
    add_all(idx, data);
    EXPECT_EQ(query_all(idx, data, spec.threshold), want) << s << " (in memory)";
    idx.save(path);
    const auto re = NearDupIndex::open(path);
    EXPECT_EQ(re->spec().to_string(), spec.to_string());
    EXPECT_EQ(re->size(), idx.size());
    EXPECT_EQ(query_all(*re, data, spec.threshold), want) << s << " (reopened)";
    // Batch pairs on the same data finds the same pairs with the same similarities.
    RunOptions ro;
    ro.spec = spec;
    ro.tuning.threads = 2;
    ro.tuning.stream_pairs = false;  // held, for pairs()
    Pipeline p({data}, ro);
    p.run(Pipeline::Mode::Pairs);
    std::map<Pair, double> batch;
    for (const auto& x : p.pairs()) {
      batch[{std::string(p.id(x.a)), std::string(p.id(x.b))}] = x.similarity;
      batch[{std::string(p.id(x.b)), std::string(p.id(x.a))}] = x.similarity;
    }
    EXPECT_EQ(batch, want) << s << " (batch pairs)";
  }
}

// The pending bands' flat multimap holds exactly what std::unordered_multimap holds, with
// repeated keys, keys sharing a home slot, and across growth.
TEST(Index, FlatMultimapEqualsUnorderedMultimap) {
  std::mt19937_64 rng(7);
  internal::FlatMultimap flat;
  std::unordered_multimap<uint64_t, uint32_t> ref;
  std::vector<uint64_t> keys;
  for (uint32_t v = 0; v < 20000; ++v) {
    // A third of the inserts repeat an earlier key; some keys differ only in their low bits,
    // which the home slot ignores.
    uint64_t k = rng();
    if (!keys.empty() && rng() % 3 == 0) k = keys[rng() % keys.size()];
    else if (!keys.empty() && rng() % 5 == 0) k = keys[rng() % keys.size()] ^ 1;
    keys.push_back(k);
    flat.insert(k, v);
    ref.emplace(k, v);
    if (v % 997 == 0 || v == 19999) {
      for (size_t probe = 0; probe < 300; ++probe) {
        const uint64_t q = probe % 4 == 0 ? rng() : keys[rng() % keys.size()];
        std::vector<uint32_t> got, want;
        flat.for_each(q, [&](uint32_t x) { got.push_back(x); });
        const auto [lo, hi] = ref.equal_range(q);
        for (auto it = lo; it != hi; ++it) want.push_back(it->second);
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        ASSERT_EQ(got, want) << "after " << v + 1 << " inserts";
      }
    }
  }
  EXPECT_EQ(flat.size(), ref.size());
}

// The id map is built on the first duplicate-id check and then extended by every insert; the
// ids it names must survive the growth of the pending ids (short ids live inside the string).
TEST(Index, IdsStayFindableAsTheIndexGrows) {
  const PipelineSpec spec = spec_of("words:3 minhash:64 lsh:16x4 verify:0.5");
  NearDupIndex idx(spec);
  IndexSketcher sk(spec);
  IndexSketch s;
  sk.sketch("w1 w2 w3 w4", s);
  idx.insert("first", s);
  EXPECT_TRUE(idx.contains("first"));  // builds the map
  for (int i = 0; i < 5000; ++i) idx.insert("i" + std::to_string(i), s);
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(idx.contains("i" + std::to_string(i))) << i;
  EXPECT_FALSE(idx.contains("i5000"));
  const std::vector<std::string> gone = {"i0", "i4999"};
  EXPECT_EQ(idx.remove(gone), 2u);
  EXPECT_FALSE(idx.contains("i0"));
  EXPECT_TRUE(idx.contains("i1"));
}

// contains() and query() from many threads at once on a fresh index: the id map is built once, by
// whichever thread comes first (before, two threads could fill it at once).
TEST(Index, ConcurrentContainsAndQueryAgree) {
  const PipelineSpec spec = spec_of("words:3 minhash:64 lsh:16x4 verify:0.5");
  NearDupIndex idx(spec);
  IndexSketcher sk(spec);
  IndexSketch s;
  for (int i = 0; i < 2000; ++i) {
    sk.sketch("doc " + std::to_string(i) + " words here " + std::to_string(i % 50), s);
    idx.insert("d" + std::to_string(i), s);
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      IndexSketcher local(spec);
      IndexSketch q;
      std::vector<IndexMatch> m;
      for (int i = t; i < 2000; i += 4) {
        if (!idx.contains("d" + std::to_string(i)) || idx.contains("x" + std::to_string(i))) ++wrong;
        local.sketch("doc " + std::to_string(i) + " words here " + std::to_string(i % 50), q);
        idx.query(q, 0.99, m);
        if (std::none_of(m.begin(), m.end(), [&](const IndexMatch& x) { return idx.id(x.doc) == "d" + std::to_string(i); })) ++wrong;
        // The first exact search builds the inverted index while the other threads wait for it.
        idx.search(q, {IndexQuery::Kind::Top, 0, 1}, m);
        if (m.size() != 1 || m[0].similarity != 1.0) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Containment and top-k answers of an index, as its saved part, its later insertions, removals
// and a rebuilt search change them, against comparing the query with every stored set.
TEST(Index, ContainmentAndTopEqualBruteForce) {
  TempDir dir;
  const std::string data = dir.file("c.jsonl"), path = dir.file("c.ndx");
  const PipelineSpec spec = spec_of("words:3 minhash:64 lsh:16x4 verify:0.5");
  save_corpus_index(data, path, make_corpus(4, 80), spec);
  auto idx = NearDupIndex::open(path);
  IndexSketcher sk(spec);
  std::vector<IndexSketch> stored;  // every document's sketch, by DocId
  io::InputSet in({data}, io::InputFormat::Auto);
  io::RecordReader rr(in, {});
  for (io::Record r; rr.next(r);) sk.sketch(r.text, stored.emplace_back());
  const auto check = [&](const char* when) {
    for (size_t qi = 0; qi < stored.size(); qi += 7) {
      const IndexSketch& q = stored[qi];
      std::vector<IndexMatch> want_c, want_t, got;
      for (DocId d = 0; d < idx->slots(); ++d) {
        if (idx->removed(d) || q.set.empty()) continue;
        const double j = jaccard(q.set, stored[d].set);
        std::vector<ShingleHash> both;
        std::set_intersection(q.set.begin(), q.set.end(), stored[d].set.begin(), stored[d].set.end(), std::back_inserter(both));
        if (both.size() >= ExactThreshold::from(0.6).min_overlap(q.set.size()))
          want_c.push_back({d, static_cast<double>(both.size()) / static_cast<double>(q.set.size())});
        if (j > 0) want_t.push_back({d, j});
      }
      std::sort(want_c.begin(), want_c.end(), better_match);
      std::sort(want_t.begin(), want_t.end(), better_match);
      want_t.resize(std::min<size_t>(want_t.size(), 4));
      idx->search(q, {IndexQuery::Kind::Containing, 0.6, 0}, got);
      ASSERT_EQ(got, want_c) << when << ": query " << qi;
      idx->search(q, {IndexQuery::Kind::Top, 0, 4}, got);
      ASSERT_EQ(got, want_t) << when << ": query " << qi;
    }
  };
  check("saved");
  const size_t saved = stored.size();
  for (size_t i = 0; i < 5; ++i) {  // a few: compared one by one
    stored.push_back(stored[i * 3]);
    idx->insert("again" + std::to_string(i), stored.back());
  }
  const std::vector<std::string> gone = {"d1", "d5", "again2"};
  EXPECT_EQ(idx->remove(gone), 3u);
  check("inserted and removed");
  for (size_t i = 0; i < saved; ++i) {  // many: the search is built again
    stored.push_back(stored[i]);
    idx->insert("more" + std::to_string(i), stored.back());
  }
  check("doubled");
  NearDupIndex estimate(spec_of("words:3 minhash:64 lsh:16x4 estimate:0.5"));
  std::vector<IndexMatch> got;
  EXPECT_THROW(estimate.search(stored[0], {IndexQuery::Kind::Top, 0, 4}, got), UsageError);
}

TEST(Index, RemoveAndAddAcrossSaves) {
  TempDir dir;
  const std::string data = dir.file("c.jsonl"), path = dir.file("c.ndx");
  const PipelineSpec spec = spec_of("words:3 minhash:64 lsh:16x4 verify:0.5");
  save_corpus_index(data, path, make_corpus(2, 60), spec);
  auto re = NearDupIndex::open(path);
  const std::vector<std::string> gone = {"d0", "d3", "d10", "nope"};
  EXPECT_EQ(re->remove(gone), 3u);
  EXPECT_FALSE(re->contains("d3"));
  EXPECT_TRUE(re->contains("d4"));
  const auto before = query_all(*re, data, 0.5);
  for (const auto& [k, v] : before) EXPECT_TRUE(k.second != "d0" && k.second != "d3" && k.second != "d10");
  re->save(path);
  auto again = NearDupIndex::open(path);
  EXPECT_EQ(again->size(), re->size());
  EXPECT_EQ(query_all(*again, data, 0.5), before);
  // Re-adding a removed id is fine; a live id is not (the walk refuses it by name).
  IndexSketcher sk(spec);
  IndexSketch s;
  sk.sketch("w1 w2 w3 w4", s);
  again->insert("d3", s);
  EXPECT_TRUE(again->contains("d3"));
  io::InputSet in({data}, io::InputFormat::Auto);
  WalkOptions w;
  w.threshold = 2.0;
  EXPECT_THROW(index_walk(*again, in, {}, w, [](const WalkRecord&) {}), FormatError);
}

// A small exact index of make_corpus(3, 40) written to `data` and saved at `path`; returns the
// saved bytes (the damaged-file tests alter copies of them).
// Index checksums ignored while it lives (as the fuzz targets do), so that tests can edit a
// field and reach the checks behind the header checksum.
struct IgnoreChecksums {
  IgnoreChecksums() { internal::g_fuzz_ignore_index_checksums = true; }
  ~IgnoreChecksums() { internal::g_fuzz_ignore_index_checksums = false; }
  IgnoreChecksums(const IgnoreChecksums&) = delete;
  IgnoreChecksums& operator=(const IgnoreChecksums&) = delete;
};

static std::string save_small_index(const std::string& data, const std::string& path) {
  write_file(data, make_corpus(3, 40));
  NearDupIndex idx(spec_of("words:3 minhash:32 lsh:8x4 verify:0.5"));
  add_all(idx, data);
  idx.save(path);
  return read_file(path);
}

TEST(Index, DamagedFilesAreRefused) {
  TempDir dir;
  const std::string data = dir.file("c.jsonl"), path = dir.file("c.ndx"), bad = dir.file("bad.ndx");
  const std::string good = save_small_index(data, path);
  ASSERT_NO_THROW(NearDupIndex::open(path));
  // Truncated anywhere, or grown.
  for (size_t len : {size_t{0}, size_t{100}, size_t{4096}, good.size() / 2, good.size() - 1}) {
    write_file(bad, good.substr(0, len));
    EXPECT_THROW(NearDupIndex::open(bad), FormatError) << "truncated to " << len;
  }
  write_file(bad, good + "x");
  EXPECT_THROW(NearDupIndex::open(bad), FormatError);
  // A flipped bit anywhere is refused at open, or, in the shingle values, when the document is
  // verified (every document is queried here).
  std::mt19937_64 rng(4);
  for (int trial = 0; trial < 400; ++trial) {
    std::string b = good;
    const size_t pos = trial < 100 ? rng() % 4096 : rng() % b.size();
    b[pos] = static_cast<char>(b[pos] ^ (1 << (rng() % 8)));
    write_file(bad, b);
    bool refused = false;
    try {
      const auto x = NearDupIndex::open(bad);
      query_all(*x, data, 0.0);
    } catch (const FormatError&) {
      refused = true;
    }
    EXPECT_TRUE(refused) << "bit flipped at byte " << pos << " of " << b.size();
  }
  write_file(bad, "not an index at all");
  EXPECT_THROW(NearDupIndex::open(bad), FormatError);
  EXPECT_THROW(NearDupIndex::open(dir.file("missing.ndx")), IoError);
}

// A file can carry matching checksums and still be wrong (crafted, or a bug in a writer): the
// structural checks behind the checksums hold on their own (fuzz_index runs the same way).
TEST(Index, StructuralChecksHoldWithoutChecksums) {
  TempDir dir;
  const std::string data = dir.file("c.jsonl"), path = dir.file("c.ndx"), bad = dir.file("bad.ndx");
  const std::string good = save_small_index(data, path);
  std::optional<IgnoreChecksums> ignore(std::in_place);
  const auto refused = [&](const std::string& b) {
    write_file(bad, b);
    try {
      NearDupIndex::open(bad);
    } catch (const FormatError& e) {
      return std::string(e.what()).find(bad) != std::string::npos;  // names the file
    }
    return false;
  };
  // A spec that parses but cannot be resolved (found by fuzz_index: it escaped as UsageError).
  std::string b = good;
  const size_t at = b.find("words:3");
  ASSERT_NE(at, std::string::npos);
  b[at + 6] = '0';
  EXPECT_TRUE(refused(b));
  // A document count whose section sizes overflow 64 bits.
  b = good;
  const uint64_t huge = (1ull << 61) + 1;
  std::memcpy(b.data() + 24, &huge, sizeof huge);  // Header::documents
  EXPECT_TRUE(refused(b));
  ignore.reset();
  EXPECT_NO_THROW(NearDupIndex::open(path));
}

TEST(Index, AKillDuringAddLeavesThePreviousIndex) {
  TempDir dir;
  const std::string small = dir.file("s.jsonl"), big = dir.file("b.jsonl"), path = dir.file("c.ndx");
  write_file(small, make_corpus(5, 30));
  write_file(big, make_corpus(6, 3000, "big"));
  const PipelineSpec spec = spec_of("words:3 minhash:64 lsh:16x4 verify:0.5");
  {
    NearDupIndex idx(spec);
    add_all(idx, small);
    idx.save(path);
  }
  const auto before = query_all(*NearDupIndex::open(path), small, 0.5);
  const size_t before_size = NearDupIndex::open(path)->size();
  size_t after_size = before_size;  // every document of the big input added
  for (const char c : read_file(big)) after_size += c == '\n';
  int killed_mid = 0;
  for (int trial = 0; trial < 8; ++trial) {
    std::filesystem::remove(path + ".other");  // saved by the last trial's child
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the child: add a big input, save, exit
      try {
        auto idx = NearDupIndex::open_for_update(path);
        add_all(*idx, big);
        idx->save(path + ".other");  // never replaces the index under test
        idx->save();
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    // Killed once the copy saved first is in place (the write under test comes next: its
    // temporary file has no name to wait for), a little later each trial, rather than after a
    // fixed sleep that a slow or fast machine would place before the write or after the rename.
    const auto writing = [&] { return std::filesystem::exists(path + ".other"); };
    int status = 0;
    bool exited = false;
    for (int polls = 0; polls < 200000 && !writing(); ++polls) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      ::usleep(50);
    }
    if (!exited) {
      ::usleep(static_cast<useconds_t>(500 * trial));
      ::kill(pid, SIGKILL);
    }
    if (!exited) ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      const auto re = NearDupIndex::open(path);  // loads
      if (re->size() == after_size) break;  // killed after the rename: the add is complete
      ++killed_mid;
      EXPECT_EQ(re->size(), before_size);
      EXPECT_EQ(query_all(*re, small, 0.5), before);
    } else {
      // The child finished before the kill (and replaced the index): later trials would only
      // wait longer.
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
      break;
    }
  }
  EXPECT_GT(killed_mid, 0);
}

// Format version 1 differs from 2 only in the MinHash definition: its other indexes are read
// as they are, a version-1 minhash index is refused with a message that says to rebuild it.
TEST(Index, FormatVersionOneIsReadExceptForMinHash) {
  TempDir dir;
  const std::string data = dir.file("c.jsonl");
  write_file(data, make_corpus(3, 40));
  // The file as version 1 wrote it, but for the header checksum, which the loader is told to
  // ignore here: the version rule comes before and after it.
  const auto as_version_one = [](std::string b) {
    const uint32_t one = 1;
    std::memcpy(b.data() + 8, &one, sizeof one);  // Header::version
    return b;
  };
  const IgnoreChecksums ignore;
  for (const char* s : {"words:3 oph:32 lsh:8x4 verify:0.5", "words:3 minhash:32 lsh:8x4 verify:0.5"}) {
    SCOPED_TRACE(s);
    NearDupIndex idx(spec_of(s));
    add_all(idx, data);
    const std::string v2 = dir.file("v2.ndx"), v1 = dir.file("v1.ndx");
    idx.save(v2);
    write_file(v1, as_version_one(read_file(v2)));
    if (idx.spec().method == SketchMethod::MinHash) {
      try {
        NearDupIndex::open(v1);
        ADD_FAILURE() << "a version-1 minhash index must be refused";
      } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("format version 1"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("rebuild it"), std::string::npos) << e.what();
      }
    } else {
      const auto old = NearDupIndex::open(v1);
      EXPECT_EQ(query_all(*old, data, 0.5), query_all(*NearDupIndex::open(v2), data, 0.5));
      EXPECT_FALSE(query_all(*old, data, 0.5).empty());
    }
  }
}

namespace neardup {
namespace {

// Two updaters of one index file, each open for update: the second waits for the first to be
// done, so both additions are in the file (without the lock, the later save drops the earlier).
TEST(Index, OpenForUpdateSerialisesUpdaters) {
  test::TempDir dir;
  const std::string path = dir.file("u.ndx");
  const PipelineSpec spec = spec_of("words:3 minhash:64 lsh:16x4 verify:0.5");
  NearDupIndex::create(path, spec);
  EXPECT_THROW(NearDupIndex::open(path)->save(), UsageError);  // not opened for update
  std::atomic<int> order{0};
  int first_done = -1, second_saw = -1;
  auto first = NearDupIndex::open_for_update(path);
  EXPECT_TRUE(first->updatable());
  std::atomic<bool> waiting{false};
  std::thread second([&] {
    auto idx = NearDupIndex::open_for_update(path, LockWait{true, [&](const std::string&) { waiting = true; }});  // waits for `first`
    second_saw = static_cast<int>(idx->size());
    IndexSketcher sk(idx->spec());
    IndexSketch s;
    sk.sketch("second updater text with some words in it", s);
    idx->insert("second", std::move(s));
    idx->save();
    order = 2;
  });
  for (int i = 0; i < 60000 && !waiting; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(waiting.load()) << "the second updater never found the lock held";
  EXPECT_EQ(order.load(), 0);  // it waits: this is what the lock is for
  IndexSketcher sk(first->spec());
  IndexSketch s;
  sk.sketch("first updater text, other words entirely", s);
  first->insert("first", std::move(s));
  first->save();
  first_done = static_cast<int>(first->size());
  first.reset();  // releases the lock
  second.join();
  EXPECT_EQ(first_done, 1);
  EXPECT_EQ(second_saw, 1);  // it opened the file after the first save
  const auto both = NearDupIndex::open(path);
  EXPECT_EQ(both->size(), 2u);
  EXPECT_TRUE(both->contains("first"));
  EXPECT_TRUE(both->contains("second"));
}

// Without asking to wait, a held lock is refused at once, naming the holder (here this process,
// through the other open index: flock's locks belong to an open file, so a second open in one
// process would otherwise wait for itself); the waiting callback can stop a wait.
TEST(Index, OpenForUpdateRefusesAHeldLockNamingItsHolder) {
  test::TempDir dir;
  const std::string path = dir.file("h.ndx");
  auto first = NearDupIndex::create(path, spec_of("words:3 minhash:64 lsh:16x4 verify:0.5"));
  EXPECT_NE(IndexLock::holder(path).find("this process"), std::string::npos);
  try {
    NearDupIndex::open_for_update(path);
    ADD_FAILURE() << "a held lock was taken";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("being changed by this process"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("close that index first"), std::string::npos) << e.what();
  }
  EXPECT_THROW(NearDupIndex::create(path, first->spec()), IoError);
  int calls = 0;
  LockWait w{true, [&](const std::string& holder) {
               EXPECT_NE(holder.find("this process"), std::string::npos);
               if (++calls == 3) throw UsageError("interrupted");
             }};
  EXPECT_THROW(NearDupIndex::open_for_update(path, w), UsageError);
  EXPECT_EQ(calls, 3);
  first.reset();
  EXPECT_EQ(IndexLock::holder(path), "");
  EXPECT_TRUE(NearDupIndex::open_for_update(path)->updatable());
}

}  // namespace
}  // namespace neardup
