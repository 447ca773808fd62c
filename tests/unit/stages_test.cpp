// The stages composed by hand on in-memory texts give what the pipeline gives; the sketch file
// round-trips and refuses damage; every kernel level gives the scalar level's results.
#include <gtest/gtest.h>

#include <cmath>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "internal/big_array.h"
#include "internal/pass_runner.h"
#include "neardup/cluster.h"
#include "neardup/cpu.h"
#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/pipeline.h"
#include "neardup/stages.h"
#include "neardup/thread_pool.h"
#include "test_util.h"

namespace neardup {
namespace {

std::vector<std::string_view> texts_of(const std::vector<io::Document>& docs) {
  std::vector<std::string_view> t;
  for (const auto& d : docs) t.push_back(d.text);
  return t;
}

// Sketch, find candidates, verify, cluster: by hand, one stage after the other.
Clustering compose(const std::vector<std::string_view>& texts, const PipelineSpec& spec, std::vector<ScoredPair>* verified) {
  const Sketches sk = sketch_documents(texts, spec, 2);
  const bool exact_join = sk.spec.method == SketchMethod::Exact;
  ShingleSets all_sets;
  if (exact_join) all_sets = shingle_sets(texts, sk.spec, {}, 2);
  const std::vector<DocPair> candidates = find_candidates(sk, exact_join ? &all_sets : nullptr, 2);
  ShingleSets sets = exact_join ? std::move(all_sets) : shingle_sets(texts, sk.spec, documents_in(candidates, texts.size()), 2);
  *verified = verify_pairs(candidates, scorer_for(sk, &sets), sk.spec.threshold, 2);
  return cluster_documents(texts.size(), *verified, KeepPolicy::First);
}

class Stages : public ::testing::TestWithParam<const char*> {};

// The components of the verified pairs, and so the documents removed and kept, equal the
// pipeline's on the same texts; pairs mode gives the same pairs.
TEST_P(Stages, ComposedByHandEqualThePipeline) {
  static const std::vector<io::Document> docs = test::sample_documents();
  const std::vector<std::string_view> texts = texts_of(docs);
  RunOptions o;
  o.spec = PipelineSpec::parse(GetParam());
  o.tuning.threads = 2;
  std::vector<ScoredPair> verified;
  const Clustering by_hand = compose(texts, o.spec, &verified);

  Pipeline dedup(docs, o);
  dedup.run(Pipeline::Mode::Dedup);
  EXPECT_EQ(by_hand.keeper, dedup.clustering().keeper) << GetParam();
  EXPECT_GT(by_hand.removed, 0u) << GetParam();

  Pipeline pairs(docs, o);
  pairs.run(Pipeline::Mode::Pairs);
  std::vector<ScoredPair> from_pipeline;
  pairs.each_pair([&](std::span<const ScoredPair> c) { from_pipeline.insert(from_pipeline.end(), c.begin(), c.end()); });
  ASSERT_EQ(verified.size(), from_pipeline.size()) << GetParam();
  for (size_t i = 0; i < verified.size(); ++i) {
    EXPECT_EQ(verified[i].a, from_pipeline[i].a);
    EXPECT_EQ(verified[i].b, from_pipeline[i].b);
    EXPECT_DOUBLE_EQ(verified[i].similarity, from_pipeline[i].similarity);
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, Stages,
                         ::testing::Values("words:3 oph:128 verify:0.7", "words:3 minhash:64 verify:0.5",
                                           "words:3 bottomk:64 verify:0.5", "words:3 simhash:6 verify:0.6",
                                           "words:3 exact verify:0.6", "words:3 oph:128 estimate:0.7"));

// Sketches made in two halves (two processes, say), written and read back, joined as one: the
// same candidates as sketching everything at once.
TEST(Stages, SketchFileRoundTripsAndJoinsAcrossBatches) {
  static const std::vector<io::Document> docs = test::sample_documents();
  const std::vector<std::string_view> texts = texts_of(docs);
  test::TempDir d;
  for (const char* spec : {"words:3 oph:128 verify:0.7", "words:3 bottomk:64 verify:0.5", "words:3 simhash:6 verify:0.6"}) {
    const PipelineSpec s = PipelineSpec::parse(spec);
    const Sketches whole = sketch_documents(texts, s, 2);
    const size_t half = texts.size() / 2;
    std::vector<std::string> ids1, ids2;
    for (size_t i = 0; i < texts.size(); ++i) (i < half ? ids1 : ids2).push_back(docs[i].id);
    write_sketches(d.file("1.sk"), sketch_documents(std::span(texts).first(half), s, 1), ids1);
    write_sketches(d.file("2.sk"), sketch_documents(std::span(texts).subspan(half), s, 2), ids2);
    SketchFile f1 = read_sketches(d.file("1.sk"));
    const SketchFile f2 = read_sketches(d.file("2.sk"));
    EXPECT_EQ(f1.ids, ids1);
    EXPECT_EQ(f2.ids, ids2);
    f1.sketches.append(f2.sketches);
    EXPECT_EQ(f1.sketches.spec.to_string(), whole.spec.to_string());
    EXPECT_EQ(f1.sketches.signatures, whole.signatures) << spec;
    EXPECT_EQ(f1.sketches.simhashes, whole.simhashes) << spec;
    EXPECT_EQ(f1.sketches.fingerprints.values, whole.fingerprints.values) << spec;
    EXPECT_EQ(f1.sketches.empty, whole.empty) << spec;
    EXPECT_EQ(find_candidates(f1.sketches), find_candidates(whole)) << spec;
  }
}

TEST(Stages, SketchFileRefusesDamage) {
  const std::vector<std::string_view> texts = {"the quick brown fox jumps over the lazy dog", "a b c d e f g"};
  test::TempDir d;
  write_sketches(d.file("a.sk"), sketch_documents(texts, PipelineSpec::parse("words:2 oph:64"), 1), {});
  const std::string good = test::read_file(d.file("a.sk"));
  EXPECT_EQ(read_sketches(d.file("a.sk")).sketches.size(), 2u);
  EXPECT_TRUE(read_sketches(d.file("a.sk")).ids.empty());
  const auto error_of = [&](const std::string& bytes) -> std::string {
    test::write_file(d.file("b.sk"), bytes);
    try {
      read_sketches(d.file("b.sk"));
    } catch (const FormatError& e) {
      EXPECT_EQ(e.source(), d.file("b.sk"));
      return e.what();
    }
    return "accepted";
  };
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  EXPECT_NE(error_of(flipped).find("fails its checksum"), std::string::npos);
  EXPECT_NE(error_of(good.substr(0, good.size() - 3)).find("fails its checksum"), std::string::npos);
  EXPECT_NE(error_of("{\"id\": 1}\n").find("not a neardup sketch file"), std::string::npos);
  try {
    read_sketches(d.file("missing.sk"));
    FAIL();
  } catch (const IoError& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Io);
  }
  const std::vector<std::string> one_id = {"only-one"};
  EXPECT_THROW(write_sketches(d.file("c.sk"), sketch_documents(texts, PipelineSpec::parse("words:2 oph:64"), 1), one_id),
               UsageError);
}

// The cost of a page fault is measured on fresh memory, which is let go: a positive time per
// fault, and the 2 MiB touched no longer resident.
TEST(Memory, PageFaultTimeIsMeasured) {
  const auto resident_kb = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1L;
  };
  const long before = resident_kb();
  const double us = page_fault_microseconds();
  const long after = resident_kb();
  ASSERT_GE(before, 0);
  EXPECT_LT(after - before, 1024);  // under 1 MiB more (2 MiB if the memory were kept)
  EXPECT_GT(us, 0.0);  // a measurement, whatever the machine's speed
  EXPECT_TRUE(std::isfinite(us));
}

// A GrowArray read in order asks for huge pages only while the process allows it; one read in
// any order always does (the advice shows as "hg" in the mapping's VmFlags, /proc/self/smaps).
TEST(Memory, SequentialArraysAskForHugePagesWhereAllowed) {
  const auto advised = [](const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto a = reinterpret_cast<uintptr_t>(p);
    bool in = false;
    for (std::string line; std::getline(smaps, line);) {
      unsigned long lo = 0, hi = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2)
        in = a >= lo && a < hi;
      else if (in && line.rfind("VmFlags:", 0) == 0)
        return line.find(" hg") != std::string::npos;
    }
    return false;
  };
  ASSERT_TRUE(huge_pages_for_sequential_arrays());  // the library's default
  const auto filled = [](internal::Access access) {
    internal::GrowArray<uint64_t> a(access);
    for (uint64_t i = 0; i < (uint64_t{6} << 20) / 8; ++i) a.push_back(i);  // past 2 MiB: 6 MiB
    return a;
  };
  const auto random = filled(internal::Access::Random), sequential = filled(internal::Access::Sequential);
  set_huge_pages_for_sequential_arrays(false);
  const auto sequential_4k = filled(internal::Access::Sequential), random_still = filled(internal::Access::Random);
  set_huge_pages_for_sequential_arrays(true);
  EXPECT_EQ(sequential_4k[12345], 12345u);
  // Only a kernel without transparent huge pages ignores the advice.
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) GTEST_SKIP() << "no transparent huge pages here";
  EXPECT_TRUE(advised(random.data()));
  EXPECT_TRUE(advised(sequential.data()));
  EXPECT_TRUE(advised(random_still.data()));
  EXPECT_FALSE(advised(sequential_4k.data()));
}

// A sketcher does not keep a large document's scratch once it is done with it.
TEST(Stages, SketcherScratchIsBounded) {
  DocumentSketcher sk(PipelineSpec::parse("words:1 oph:64"));
  std::string big;
  for (int i = 0; i < 400000; ++i) big += "w" + std::to_string(i) + " ";
  EXPECT_EQ(sk.shingle(big).size(), 400000u);  // 3.2 MB of hashes
  std::vector<SigValue> sig(64);
  sk.signature(sig);
  EXPECT_GE(sk.scratch_bytes(), 400000u * sizeof(ShingleHash));
  sk.trim();
  EXPECT_LE(sk.scratch_bytes(), kScratchKeepBytes);
  EXPECT_EQ(sk.shingle("one two").size(), 2u);
  std::vector<SigValue> fp;
  EXPECT_THROW(sk.fingerprint(fp), UsageError);  // not a bottomk spec
}

// Every kernel level, forced as NEARDUP_FORCE_ISA forces it, sketches and finds candidates
// exactly as the scalar level does, for every method.
TEST(Kernels, EveryLevelEqualsScalarEndToEnd) {
  static const std::vector<io::Document> docs = test::sample_documents();
  const std::vector<std::string_view> texts = texts_of(docs);
  for (const char* spec : {"words:5 oph:128", "words:3 minhash:64", "words:3 bottomk:64", "words:3 simhash:6", "chars:5 oph:64"}) {
    const PipelineSpec s = PipelineSpec::parse(spec);
    force_isa(Isa::Scalar);
    const Sketches scalar = sketch_documents(texts, s, 2);
    const auto scalar_pairs = find_candidates(scalar, nullptr, 2);
    for (const Isa isa : test::available_isas()) {
      force_isa(isa);
      const Sketches got = sketch_documents(texts, s, 2);
      EXPECT_EQ(got.signatures, scalar.signatures) << spec << " " << isa_name(isa);
      EXPECT_EQ(got.fingerprints.values, scalar.fingerprints.values) << spec << " " << isa_name(isa);
      EXPECT_EQ(got.simhashes, scalar.simhashes) << spec << " " << isa_name(isa);
      EXPECT_EQ(find_candidates(got, nullptr, 2), scalar_pairs) << spec << " " << isa_name(isa);
    }
    reset_isa();
  }
  EXPECT_EQ(parse_isa("avx512vbmi"), Isa::Avx512Vbmi);
  EXPECT_STREQ(isa_name(Isa::Avx512Vbmi), "avx512vbmi");
}

// A long text sketched in pieces (cut after whitespace, the pieces' words hashed apart, their
// signatures merged) gives the signature, the shingle count and the set of the whole, for any
// piece size and thread count: cuts inside runs of spaces, pieces without a word, fewer words
// than k in all, non-ASCII words, punctuation.
TEST(Stages, SplitSignatureEqualsTheWhole) {
  std::mt19937_64 rng(91);
  std::vector<std::string> texts = {"", "   ", "one", "one two", "a b c d e", "a b c d e f", " lead and trail ", "tabs\tand\nlines\r\nhere"};
  const char* vocab[] = {"alpha", "beta", "gamma", "\xc3\xa9t\xc3\xa9", "na\xc3\xafve", "x", "--", "foo.bar", "\xe4\xb8\xad\xe6\x96\x87", "3.14", "end."};
  for (int t = 0; t < 12; ++t) {
    std::string s;
    const size_t words = t < 3 ? static_cast<size_t>(t) + 2 : 50 + rng() % 3000;
    for (size_t w = 0; w < words; ++w) {
      s += vocab[rng() % std::size(vocab)];
      s += std::string(1 + rng() % 3, " \n\t"[rng() % 3]);
    }
    texts.push_back(s);
  }
  for (const char* spec : {"words:5 oph:128 lsh:16x8 verify:0.8", "words:3 minhash:64 verify:0.7", "words:1 oph:32 verify:0.5"}) {
    const PipelineSpec ps = PipelineSpec::parse(spec).resolved();
    DocumentSketcher whole(ps), split(ps);
    ASSERT_TRUE(split.can_split());
    std::vector<SigValue> want(static_cast<size_t>(ps.num_perm)), got(want.size());
    for (const std::string& text : texts) {
      const size_t n = whole.shingle(text).size();
      whole.signature(want);
      const auto want_set = whole.set();
      for (const size_t piece : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}, size_t{1} << 20})
        for (const int threads : {1, 2}) {
          EXPECT_EQ(split.signature_split(text, got, threads, piece), n) << spec << " piece " << piece;
          EXPECT_EQ(got, want) << spec << " piece " << piece << " text of " << text.size() << " bytes";
          EXPECT_EQ(split.set(), want_set) << spec << " piece " << piece;
          Shingler sh(ps.shingle);
          EXPECT_EQ(piecewise_shingle_set(sh, text, threads, piece), want_set) << spec << " piece " << piece;
        }
    }
  }
  DocumentSketcher chars(PipelineSpec::parse("chars:5 oph:64 verify:0.8").resolved());
  EXPECT_FALSE(chars.can_split());

  // SimHash of set weights from the set made in pieces: the value and the shingle count of the
  // whole, and piecewise_shingle_set's count of shingles with it.
  for (const char* spec : {"words:5 simhash:3", "words:1 simhash:3", "words:3 simhash:3 weights:set"}) {
    const PipelineSpec ps = PipelineSpec::parse(spec).resolved();
    DocumentSketcher whole(ps), split(ps);
    ASSERT_TRUE(split.can_split_simhash()) << spec;
    for (const std::string& text : texts) {
      const size_t n = whole.shingle(text).size();
      const uint64_t want = whole.simhash();
      for (const size_t piece : {size_t{1}, size_t{7}, size_t{1000}, size_t{1} << 20})
        for (const int threads : {1, 2}) {
          uint64_t got = ~want;
          EXPECT_EQ(split.simhash_split(text, got, threads, piece), n) << spec << " piece " << piece;
          EXPECT_EQ(got, want) << spec << " piece " << piece << " text of " << text.size() << " bytes";
          EXPECT_EQ(split.set(), whole.set()) << spec << " piece " << piece;
          Shingler sh(ps.shingle);
          size_t count = n + 1;
          piecewise_shingle_set(sh, text, threads, piece, &count);
          EXPECT_EQ(count, n) << spec << " piece " << piece;
        }
    }
  }
  for (const char* spec : {"words:5 simhash:3 weights:tf", "words:5 simhash:3 weights:logtf", "chars:5 simhash:3"})
    EXPECT_FALSE(DocumentSketcher(PipelineSpec::parse(spec).resolved()).can_split_simhash()) << spec;
}

// sketch_records is the first pass of Pipeline for a host that keeps the results: in input
// order, the signatures sketch_documents gives the same texts (a text of 4 MiB or more in
// pieces), the --keep-by values, the positions, and bad records counted and skipped.
// Copies of a text read again for verification are not shingled: each is handed over after the
// other records, in input order, naming the first record read with its text, whose set it has.
// A text spelled with other JSON escapes is the same text; one differing word is not.
TEST(Stages, ShingleSetRecordsHandsCopiesLastWithTheirFirst) {
  test::TempDir d;
  std::mt19937_64 rng(78);
  std::vector<std::string> texts;
  for (int i = 0; i < 6; ++i) texts.push_back(test::join(test::random_words(rng, 40 + 20 * i, 5000)));
  texts.push_back(test::join(test::random_words(rng, 700000, 20000)));  // one text over 4 MiB
  ASSERT_GE(texts.back().size(), DocumentSketcher::kSplitBytes);
  std::vector<std::string> near = {texts[1] + " extra", "caf\\u00e9 " + texts[2]};
  // Records: each text, then copies of some, a near copy, and an escaped spelling of "café".
  std::vector<std::pair<std::string, int>> records;  // JSON text, the text it is a copy of (-1: new)
  for (int i = 0; i < 7; ++i) records.push_back({texts[i], -1});
  records.push_back({texts[6], 6});
  records.push_back({near[0], -1});
  records.push_back({texts[1], 1});
  records.push_back({near[1], -1});
  records.push_back({"café " + texts[2], 10});
  records.push_back({texts[1], 1});
  std::string jsonl;
  for (size_t i = 0; i < records.size(); ++i) jsonl += "{\"id\": \"r" + std::to_string(i) + "\", \"text\": \"" + records[i].first + "\"}\n";
  test::write_file(d.file("in.jsonl"), jsonl);
  const PipelineSpec spec = PipelineSpec::parse("words:3 oph:64 verify:0.8").resolved();
  for (const int threads : {1, 2}) {
    io::InputSet in({d.file("in.jsonl")}, io::InputFormat::Auto);
    io::RecordReader reader(in, io::ReaderOptions{});
    std::vector<ShingledRecord> got;
    shingle_set_records(reader, in, spec, io::ReaderOptions{}, threads, [&](ShingledRecord& r) {
      got.push_back(std::move(r));
      got.back().id = {};
    });
    ASSERT_EQ(got.size(), records.size());
    // Of each text's records, the first shingled (any of them, with threads) has the set, and
    // the others name it, handed over after every record with a set, each part in input order.
    auto text_of = [&](DocId r) { return records[r].second < 0 ? static_cast<int>(r) : records[r].second; };
    Shingler sh(spec.shingle);
    std::map<int, DocId> first;  // a text -> the record with its set
    std::vector<DocId> with_set, copies;
    for (const auto& r : got) {
      if (r.same_as == ShingledRecord::kNone) {
        EXPECT_TRUE(copies.empty()) << r.ordinal << " handed after a copy";
        with_set.push_back(r.ordinal);
        EXPECT_TRUE(first.emplace(text_of(r.ordinal), r.ordinal).second) << r.ordinal << " was shingled again";
        const std::string& json = records[r.ordinal].first;
        const std::string text = json.starts_with("caf\\u00e9") ? "café" + json.substr(9) : json;
        EXPECT_EQ(r.set, sh.shingle_set(text)) << r.ordinal;
      } else {
        copies.push_back(r.ordinal);
        EXPECT_TRUE(r.set.empty()) << r.ordinal;
        EXPECT_EQ(r.same_as, first.at(text_of(r.ordinal))) << r.ordinal;
      }
    }
    EXPECT_TRUE(std::ranges::is_sorted(with_set));
    EXPECT_TRUE(std::ranges::is_sorted(copies));
    EXPECT_EQ(with_set.size(), 9u) << threads;  // texts 0-6, the near copy and the escaped spelling
    EXPECT_EQ(copies.size(), 4u) << threads;
  }
}

// A text's copy is found whatever lines came before it: a line with a \u escape between a text
// and its copy, both with other escapes (word text blanks them, a full parse decodes them), must
// not send the copy to another form of the text. The copies found are then the same in every run.
TEST(Stages, ShingleSetRecordsFindsCopiesWhateverLinesCameBefore) {
  test::TempDir d;
  std::mt19937_64 rng(79);
  const std::string text = test::join(test::random_words(rng, 200, 5000)) + "\\n\\t\\\"end\\\"";
  std::string jsonl;
  int copies_written = 0;
  for (int i = 0; i < 40; ++i) {
    const bool escaped = i % 4 == 1;  // a text of its own with a \u escape
    const std::string t = escaped ? "caf\\u00e9 " + test::join(test::random_words(rng, 100, 5000)) : text;
    copies_written += !escaped;
    jsonl += "{\"id\": \"r" + std::to_string(i) + "\", \"text\": \"" + t + "\"}\n";
  }
  test::write_file(d.file("in.jsonl"), jsonl);
  const PipelineSpec spec = PipelineSpec::parse("words:3 oph:64 verify:0.8").resolved();
  for (const int threads : {1, 2}) {
    io::InputSet in({d.file("in.jsonl")}, io::InputFormat::Auto);
    io::RecordReader reader(in, io::ReaderOptions{});
    size_t copies = 0;
    shingle_set_records(reader, in, spec, io::ReaderOptions{}, threads, [&](ShingledRecord& r) { copies += r.same_as != ShingledRecord::kNone; });
    EXPECT_EQ(copies, static_cast<size_t>(copies_written - 1)) << threads;
  }
}

TEST(Stages, SketchRecordsGivesThePipelinesFirstPassInOrder) {
  test::TempDir d;
  std::mt19937_64 rng(77);
  std::vector<std::string> texts;
  std::string jsonl;
  for (int i = 0; i < 400; ++i) {
    if (i == 123) jsonl += "{\"id\": \"bad\", \"text\": oops}\n";
    const size_t words = i == 200 ? 700000 : 5 + rng() % 300;  // one text over 4 MiB
    texts.push_back(i == 7 ? std::string() : test::join(test::random_words(rng, words, 20000)));
    std::string score = i % 3 == 0 ? "" : (i % 3 == 1 ? ", \"score\": " + std::to_string(i) : ", \"score\": \"s" + std::to_string(i) + "\"");
    jsonl += "{\"id\": \"r" + std::to_string(i) + "\", \"text\": \"" + texts.back() + "\"" + score + "}\n";
  }
  ASSERT_GE(texts[200].size(), DocumentSketcher::kSplitBytes);
  test::write_file(d.file("in.jsonl"), jsonl);
  const PipelineSpec spec = PipelineSpec::parse("words:5 oph:64 verify:0.8").resolved();
  std::vector<std::string_view> views(texts.begin(), texts.end());
  const Sketches want = sketch_documents(views, spec, 2);
  io::ReaderOptions ro;
  ro.on_error = io::OnError::Skip;
  ro.key_field = "score";
  io::InputSet in({d.file("in.jsonl")}, io::InputFormat::Auto);
  io::RecordReader reader(in, ro);
  io::BadRecords bad(ro);
  std::vector<SketchedRecord> got;
  std::vector<std::string> ids, keys;
  std::vector<SigValue> sigs;
  const SketchTotals totals = sketch_records(reader, in, spec, ro, 2, bad, [&](const SketchedRecord& r) {
    got.push_back(r);  // its views are copied below and cleared here: they end with the call
    got.back().id = {};
    got.back().key.text = {};
    got.back().signature = {};
    ids.emplace_back(r.id);
    keys.emplace_back(r.key.text);
    sigs.insert(sigs.end(), r.signature.begin(), r.signature.end());
  });
  ASSERT_EQ(got.size(), texts.size());
  EXPECT_EQ(bad.skipped(), 1u);
  EXPECT_EQ(totals.shingles, want.shingles);
  EXPECT_TRUE(sigs == want.signatures);
  uint64_t offset = 0;
  std::istringstream lines(jsonl);
  std::string line;
  for (size_t i = 0, n = 0; std::getline(lines, line); offset += line.size() + 1) {
    ++n;
    if (line.find("\"bad\"") != std::string::npos) continue;
    const SketchedRecord& r = got[i];
    EXPECT_EQ(ids[i], "r" + std::to_string(i));
    EXPECT_EQ(r.line, n);
    EXPECT_EQ(r.offset, offset);
    EXPECT_EQ(r.raw_length, line.size());
    EXPECT_EQ(r.text_length, texts[i].size());
    EXPECT_EQ(r.empty, want.empty[i] != 0) << i;
    const auto kind = i % 3 == 0 ? io::KeyValue::Kind::Missing : (i % 3 == 1 ? io::KeyValue::Kind::Number : io::KeyValue::Kind::String);
    EXPECT_EQ(r.key.kind, kind) << i;
    if (kind == io::KeyValue::Kind::Number) {
      EXPECT_EQ(r.key.number, static_cast<double>(i));
    }
    if (kind == io::KeyValue::Kind::String) {
      EXPECT_EQ(keys[i], "s" + std::to_string(i));
    }
    ++i;
  }
  EXPECT_TRUE(got[7].empty);
  // A bad record under the default policy stops the pass with the pipeline's message.
  io::ReaderOptions fail;
  io::RecordReader again(in, fail);
  io::BadRecords stop(fail);
  try {
    sketch_records(again, in, spec, fail, 2, stop, [](const SketchedRecord&) {});
    ADD_FAILURE() << "the bad record did not stop the pass";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("in.jsonl:124"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sketch_records(again, in, PipelineSpec::parse("words:5 simhash verify:0.8").resolved(), fail, 2, stop,
                              [](const SketchedRecord&) {}),
               UsageError);
}

}  // namespace
}  // namespace neardup
