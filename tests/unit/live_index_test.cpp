#include "neardup/live_index.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "neardup/error.h"
#include "test_util.h"

using namespace neardup;
using namespace neardup::test;

namespace {

PipelineSpec small_spec() { return PipelineSpec::parse("words:3 minhash:64 lsh:16x4 verify:0.7").resolved(); }

std::string text_of(std::mt19937_64& rng) { return join(random_words(rng, 60, 4000)); }

LiveChange add(std::string id, std::string text, bool dedup = true) {
  LiveChange c;
  c.id = std::move(id);
  c.text = std::move(text);
  c.dedup = dedup;
  return c;
}

LiveChange del(std::string id) {
  LiveChange c;
  c.kind = LiveChange::Kind::Remove;
  c.id = std::move(id);
  return c;
}

uint64_t file_size(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// An index at dir/i.ndx whose log holds adds of d0, d1, ... left unfolded (the live index is not
// closed, as a crash would leave it): `singles` applied one at a time (each its own synced group),
// then `grouped` in one apply (one write, one sync).
std::string logged_index(TempDir& dir, uint64_t seed, int singles, int grouped = 0) {
  const std::string path = dir.file("i.ndx");
  NearDupIndex::create(path, small_spec());
  std::mt19937_64 rng(seed);
  auto live = LiveIndex::open(path);
  for (int i = 0; i < singles; ++i) live->apply(add("d" + std::to_string(i), text_of(rng)));
  std::vector<LiveChange> group;
  for (int i = singles; i < singles + grouped; ++i) group.push_back(add("d" + std::to_string(i), text_of(rng)));
  if (!group.empty()) live->apply(std::move(group));
  return path;
}

}  // namespace

TEST(LiveIndex, ChangesSurviveReopeningThroughTheLog) {
  TempDir dir;
  const std::string path = dir.file("i.ndx");
  NearDupIndex::create(path, small_spec());
  std::mt19937_64 rng(1);
  std::vector<std::string> texts;
  for (int i = 0; i < 50; ++i) texts.push_back(text_of(rng));
  {
    auto live = LiveIndex::open(path);
    for (int i = 0; i < 50; ++i) ASSERT_EQ(live->apply(add("d" + std::to_string(i), texts[i])).outcome, LiveResult::Outcome::Added);
    EXPECT_EQ(live->apply(add("d3", texts[7])).outcome, LiveResult::Outcome::IdExists);
    const LiveResult dup = live->apply(add("copy", texts[9]));
    ASSERT_EQ(dup.outcome, LiveResult::Outcome::Duplicate);
    EXPECT_EQ(dup.matches.front().id, "d9");
    EXPECT_DOUBLE_EQ(dup.matches.front().similarity, 1.0);
    EXPECT_EQ(live->apply(del("d4")).outcome, LiveResult::Outcome::Removed);
    EXPECT_EQ(live->apply(del("d4")).outcome, LiveResult::Outcome::Absent);
    EXPECT_EQ(live->stats().log_records, 51u);
    // Not closed: the destructor stops the writer without folding, as a crash would leave it.
  }
  // Other readers refuse the index while its log holds changes.
  EXPECT_THROW(NearDupIndex::open(path), FormatError);
  auto live = LiveIndex::open(path);
  EXPECT_EQ(live->stats().replayed, 51u);
  EXPECT_EQ(live->stats().documents, 49u);
  EXPECT_FALSE(live->contains("d4"));
  for (int i = 0; i < 50; ++i) {
    if (i == 4) continue;
    const auto m = live->query(texts[i], 0.99);
    ASSERT_EQ(m.size(), 1u) << i;
    EXPECT_EQ(m[0].id, "d" + std::to_string(i));
    EXPECT_TRUE(live->query(texts[i], 0.99, "d" + std::to_string(i)).empty());
  }
  live->close();
  EXPECT_EQ(file_size(LiveIndex::log_path(path)), 64u);  // folded: an empty log
  auto idx = NearDupIndex::open(path);
  EXPECT_EQ(idx->size(), 49u);
  idx->verify();
}

TEST(LiveIndex, ATornRecordAtTheEndIsCutOff) {
  TempDir dir;
  const std::string path = logged_index(dir, 2, 5);
  const std::string log = LiveIndex::log_path(path);
  const uint64_t whole = file_size(log);
  // Every prefix of the last record is a crash in the middle of appending it.
  const std::string bytes = read_file(log);
  for (const uint64_t cut : {whole - 1, whole - 9, whole - 200}) {
    write_file(log, bytes.substr(0, cut));
    auto live = LiveIndex::open(path);
    const LiveStats st = live->stats();
    EXPECT_EQ(st.replayed, 4u) << cut;
    EXPECT_GT(st.torn_bytes, 0u);
    EXPECT_FALSE(live->contains("d4"));
    EXPECT_TRUE(live->contains("d3"));
    // Appending after the cut works, and the next open sees it.
    EXPECT_EQ(live->apply(add("after", "words after the cut of the torn record")).outcome, LiveResult::Outcome::Added);
    live.reset();
    auto again = LiveIndex::open(path);
    EXPECT_EQ(again->stats().replayed, 5u);
    EXPECT_EQ(again->stats().torn_bytes, 0u);
    EXPECT_TRUE(again->contains("after"));
    again.reset();
  }
  // A damaged header is refused, not ignored.
  std::string bad = bytes;
  bad[20] ^= 1;
  write_file(log, bad);
  EXPECT_THROW(LiveIndex::open(path), FormatError);
}

// Where the record `n` (from 1) of a log starts.
size_t record_offset(const std::string& log, int n) {
  size_t at = 64;
  for (int i = 1; i < n; ++i) {
    uint32_t payload;
    std::memcpy(&payload, log.data() + at + 8, 4);
    at += 16 + payload;
  }
  return at;
}

TEST(LiveIndex, DamageBeforeALaterGroupIsRefusedAndCanBeSalvaged) {
  TempDir dir;
  const std::string path = logged_index(dir, 3, 6);  // one change per group: each synced before the next
  const std::string log = LiveIndex::log_path(path);
  std::string bytes = read_file(log);
  bytes[record_offset(bytes, 2) + 40] ^= 1;  // a bit of record 2 turned on the disk
  write_file(log, bytes);
  try {
    LiveIndex::open(path);
    ADD_FAILURE() << "a log damaged before later synced groups was opened";
  } catch (const FormatError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("record 2 "), std::string::npos) << m;
    EXPECT_NE(m.find("index fold " + path + " --salvage"), std::string::npos) << m;
  }
  EXPECT_EQ(read_file(log), bytes);  // refused, not cut
  LiveIndexOptions salvage;
  salvage.salvage_log = true;
  auto live = LiveIndex::open(path, salvage);
  const LiveStats st = live->stats();
  EXPECT_EQ(st.replayed, 5u);
  EXPECT_GT(st.salvaged_bytes, 0u);
  EXPECT_EQ(st.torn_bytes, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(live->contains("d" + std::to_string(i)), i != 1) << i;
  EXPECT_EQ(file_size(log), 64u);  // folded at once: the damage is gone from the log
  live.reset();
  EXPECT_EQ(LiveIndex::open(path)->stats().documents, 5u);
}

TEST(LiveIndex, DamageInsideTheLastGroupIsATornEnd) {
  TempDir dir;
  const std::string path = logged_index(dir, 4, 3, 3);
  const std::string log = LiveIndex::log_path(path);
  const std::string bytes = read_file(log);
  // A crash while the last group was written may leave any of its pages and not others.
  for (const int damaged : {4, 5}) {
    std::string b = bytes;
    std::fill(b.begin() + static_cast<long>(record_offset(b, damaged)) + 20,
              b.begin() + static_cast<long>(record_offset(b, damaged + 1)), '\0');
    write_file(log, b);
    auto live = LiveIndex::open(path);
    EXPECT_EQ(live->stats().replayed, static_cast<uint64_t>(damaged - 1)) << damaged;
    EXPECT_GT(live->stats().torn_bytes, 0u);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(live->contains("d" + std::to_string(i)), i < damaged - 1) << damaged << " " << i;
    live.reset();
  }
}

TEST(LiveIndex, ALogOfAnEarlierSaveIsNotReplayed) {
  // A crash after the fold's rename of the index and before the log's: the old log names the
  // state before the fold, and replaying it would apply its changes twice.
  TempDir dir;
  const std::string path = dir.file("i.ndx");
  NearDupIndex::create(path, small_spec());
  std::mt19937_64 rng(3);
  const std::string t1 = text_of(rng), t2 = text_of(rng);
  {
    auto live = LiveIndex::open(path);
    live->apply(add("a", t1));
    live->apply(del("a"));
    live->apply(add("a", t2));
  }
  const std::string log = LiveIndex::log_path(path);
  const std::string old_log = read_file(log);
  {
    auto live = LiveIndex::open(path);
    live->fold();
  }
  write_file(log, old_log);  // as if the log's rename had not happened
  auto live = LiveIndex::open(path);
  EXPECT_EQ(live->stats().replayed, 0u);
  EXPECT_EQ(live->stats().documents, 1u);
  ASSERT_EQ(live->query(t2, 0.99).size(), 1u);
  EXPECT_TRUE(live->query(t1, 0.99).empty());
}

TEST(LiveIndex, ConcurrentNearCopiesAdmitExactlyOne) {
  TempDir dir;
  const std::string path = dir.file("i.ndx");
  NearDupIndex::create(path, small_spec());
  auto live = LiveIndex::open(path);
  std::mt19937_64 rng(4);
  for (int round = 0; round < 10; ++round) {
    const auto words = random_words(rng, 80, 4000);
    std::atomic<int> added{0}, dups{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < 8; ++k)
      threads.emplace_back([&, k] {
        auto w = words;
        w[static_cast<size_t>(k) * 9 % w.size()] = "changed" + std::to_string(k);
        const LiveResult r = live->apply(add("r" + std::to_string(round) + "-" + std::to_string(k), join(w)));
        (r.outcome == LiveResult::Outcome::Added ? added : dups)++;
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(added.load(), 1) << round;
    EXPECT_EQ(dups.load(), 7) << round;
  }
}

TEST(LiveIndex, ConcurrentQueriesDuringAddsAndFolds) {
  TempDir dir;
  const std::string path = dir.file("i.ndx");
  NearDupIndex::create(path, small_spec());
  LiveIndexOptions o;
  o.fold_bytes = 64 << 10;  // folds while the readers read
  auto live = LiveIndex::open(path, o);
  std::mt19937_64 rng(5);
  std::vector<std::string> texts;
  for (int i = 0; i < 400; ++i) texts.push_back(text_of(rng));
  std::atomic<bool> done{false};
  std::atomic<int> found{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&, r] {
      for (size_t i = static_cast<size_t>(r); !done; i = (i + 7) % texts.size()) {
        const auto m = live->query(texts[i], 0.99);
        // A document is found only by itself, once added.
        ASSERT_LE(m.size(), 1u);
        if (!m.empty()) {
          EXPECT_EQ(m[0].id, "d" + std::to_string(i));
          ++found;
        }
        live->contains("d" + std::to_string(i));
        live->stats();
        // The exact search, extended as documents are added and built again by each fold: a
        // document added is its own best answer.
        const auto top = live->query(texts[i], IndexQuery{IndexQuery::Kind::Top, 0.0, 1});
        if (!top.empty() && top[0].similarity == 1.0) {
          EXPECT_EQ(top[0].id, "d" + std::to_string(i));
        }
        if (!m.empty()) {
          EXPECT_FALSE(top.empty());
        }
      }
    });
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (size_t i = static_cast<size_t>(w); i < texts.size(); i += 2) {
        std::vector<LiveChange> batch;
        batch.push_back(add("d" + std::to_string(i), texts[i]));
        ASSERT_EQ(live->apply(std::move(batch)).front().outcome, LiveResult::Outcome::Added);
      }
    });
  for (auto& t : writers) t.join();
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(live->stats().folds, 0u);
  EXPECT_EQ(live->stats().documents, 400u);
  live->close();
  EXPECT_THROW(live->apply(add("late", "too late")), UsageError);
  auto idx = NearDupIndex::open(path);
  EXPECT_EQ(idx->size(), 400u);
}

TEST(LiveIndex, TooManyPendingChangesAreRefusedWhole) {
  TempDir dir;
  const std::string path = dir.file("i.ndx");
  NearDupIndex::create(path, small_spec());
  LiveIndexOptions o;
  o.max_pending = 3;
  auto live = LiveIndex::open(path, o);
  std::vector<LiveChange> four;
  for (int i = 0; i < 4; ++i) four.push_back(add("b" + std::to_string(i), "text number " + std::to_string(i) + " of a batch"));
  for (const LiveResult& r : live->apply(std::move(four))) EXPECT_EQ(r.outcome, LiveResult::Outcome::Busy);
  EXPECT_FALSE(live->contains("b0"));
  EXPECT_EQ(live->stats().log_records, 0u);
}

TEST(LiveIndex, ASecondWriterIsRefusedAtOnce) {
  TempDir dir;
  const std::string path = dir.file("i.ndx");
  NearDupIndex::create(path, small_spec());
  auto live = LiveIndex::open(path);
  try {
    LiveIndex::open(path);
    FAIL() << "a second LiveIndex opened the same index";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("being changed by this process"), std::string::npos) << e.what();
  }
}
