// PairWriter, the thread that writes a pairs run's lines while the join lists the next pairs:
// every pair in order, a queue bounded while the writer is behind, the writer's error stopping
// the listing, and a writer dropped without finish() stopping without writing the rest.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pipeline/pair_writer.h"

namespace neardup {
namespace {

std::vector<ScoredPair> chunk_of(uint32_t first, size_t n) {
  std::vector<ScoredPair> c(n);
  for (size_t i = 0; i < n; ++i) c[i] = {first + static_cast<uint32_t>(i), first + static_cast<uint32_t>(i) + 1, 0.5};
  return c;
}

TEST(PairWriter, WritesEveryPairInOrder) {
  std::vector<uint32_t> written;
  PairWriter w([&](std::span<const ScoredPair> c) {
    for (const ScoredPair& p : c) written.push_back(p.a);
  });
  uint32_t next = 0;
  // Small chunks, and chunks larger than the whole queue, copied a piece at a time.
  for (int i = 0; i < 300; ++i) {
    const size_t n = i % 50 == 7 ? PairWriter::kMaxQueued * 2 + 3 : static_cast<size_t>(i % 13) * 97;
    w.add(chunk_of(next, n));
    next += static_cast<uint32_t>(n);
  }
  w.finish();
  ASSERT_EQ(written.size(), next);
  for (uint32_t i = 0; i < next; ++i) ASSERT_EQ(written[i], i);
}

TEST(PairWriter, ListingWaitsWhileTheWriterIsBehind) {
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  std::atomic<size_t> written{0};
  PairWriter w([&](std::span<const ScoredPair> c) {
    gate.wait();
    written += c.size();
  });
  constexpr size_t kChunk = 1000, kChunks = 3 * PairWriter::kMaxQueued / kChunk;
  std::atomic<size_t> added{0};
  std::thread lister([&] {
    for (size_t i = 0; i < kChunks; ++i) {
      w.add(chunk_of(static_cast<uint32_t>(i * kChunk), kChunk));
      ++added;
    }
  });
  // The writer holds its first chunk; the lister gets at most a queue's worth ahead of it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LE(added.load(), PairWriter::kMaxQueued / kChunk + 1);
  EXPECT_EQ(written.load(), 0u);
  open.set_value();
  lister.join();
  w.finish();
  EXPECT_EQ(written.load(), kChunks * kChunk);
}

TEST(PairWriter, WritersErrorStopsTheListing) {
  int calls = 0;
  PairWriter w([&](std::span<const ScoredPair>) {
    if (++calls == 3) throw std::runtime_error("no space left on the device");
  });
  size_t added = 0;
  std::string error;
  try {
    for (; added < 100000; ++added) w.add(chunk_of(0, 1000));
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "no space left on the device");
  EXPECT_LT(added, 100000u);
  EXPECT_THROW(w.finish(), std::runtime_error);
  EXPECT_EQ(calls, 3);  // nothing written after the error
}

TEST(PairWriter, DroppedWithoutFinishWritesNoMore) {
  std::atomic<int> calls{0};
  {
    PairWriter w([&](std::span<const ScoredPair>) {
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
    for (int i = 0; i < 100; ++i) w.add(chunk_of(0, 10));
  }  // the listing failed: the queue is dropped
  EXPECT_LT(calls.load(), 100);
}

}  // namespace
}  // namespace neardup
