#include "internal/dense_postings.h"

#include <gtest/gtest.h>

#include "kernels/jaccard_kernels.h"
#include "neardup/cpu.h"

#include <random>
#include <set>
#include <utility>
#include <vector>

using neardup::internal::DensePostings;

// A walk over a list's bitmap gives, for each member in the range not met before, its place in
// the list, ascending, and marks every member of the range as met, as a walk over the postings
// does, with every kernel: lists of every density over member counts around the 64-bit words and
// the 8-word blocks, ranges that start and end inside words or at their edges, and members met
// before (some in the list, some not).
TEST(DensePostings, WalksGiveTheNewMembersAndTheirPlacesInTheList) {
  using Kernel = size_t (*)(const uint64_t*, const uint32_t*, uint32_t, uint32_t, uint64_t*, uint32_t*) noexcept;
  std::vector<std::pair<const char*, Kernel>> kernels{{"scalar", neardup::internal::dense_walk_scalar}};
  if (neardup::detected_isa() >= neardup::Isa::Avx2) kernels.emplace_back("popcnt", neardup::internal::dense_walk_popcnt);
  if (neardup::detected_isa() >= neardup::Isa::Avx512) kernels.emplace_back("avx512", neardup::internal::dense_walk_avx512);
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 150; ++trial) {
    const uint32_t members = 64 + static_cast<uint32_t>(rng() % (trial % 4 == 0 ? 200 : 5000));
    // Lists of 0 to all members; only those of at least max(64, members / 64) are dense.
    std::vector<std::vector<uint32_t>> lists(1 + rng() % 6);
    std::vector<uint64_t> head{0};
    std::vector<uint32_t> post;
    for (auto& l : lists) {
      const double density = std::uniform_real_distribution<double>(0, 1)(rng);
      for (uint32_t m = 0; m < members; ++m)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < density) l.push_back(m);
      post.insert(post.end(), l.begin(), l.end());
      head.push_back(post.size());
    }
    DensePostings dense;
    dense.build(head, post.data(), members);
    const size_t min_list = std::max<size_t>(DensePostings::kMinList, members / 64);
    for (size_t r = 0; r < lists.size(); ++r) {
      ASSERT_EQ(dense.row(static_cast<uint32_t>(r)) != DensePostings::kSparse, lists[r].size() >= min_list) << trial;
      if (dense.row(static_cast<uint32_t>(r)) == DensePostings::kSparse) continue;
      for (int walk = 0; walk < 4; ++walk) {
        uint32_t lo = static_cast<uint32_t>(rng() % (members + 1)), hi = static_cast<uint32_t>(rng() % (members + 1));
        if (walk == 0) lo = 0, hi = members;
        if (lo > hi) std::swap(lo, hi);
        std::vector<uint64_t> start(dense.words(), 0);
        std::set<uint32_t> met_before;
        for (uint32_t m = 0; m < members; ++m)
          if (rng() % 3 == 0) {
            start[m >> 6] |= uint64_t{1} << (m & 63);
            met_before.insert(m);
          }
        std::vector<uint32_t> want;
        for (uint64_t k = 0; k < lists[r].size(); ++k)
          if (lists[r][k] >= lo && lists[r][k] < hi && !met_before.count(lists[r][k])) want.push_back(static_cast<uint32_t>(k));
        const uint32_t row = dense.row(static_cast<uint32_t>(r));
        for (const auto& [name, kernel] : kernels) {
          std::vector<uint64_t> met = start;
          std::vector<uint32_t> got(lists[r].size() + 1);
          got.resize(kernel(dense.row_bits(row), dense.row_before(row), lo, hi, met.data(), got.data()));
          ASSERT_EQ(got, want) << name << " trial " << trial << " list " << r << " [" << lo << ", " << hi << ")";
          for (uint32_t m = 0; m < members; ++m) {
            const bool in_range = m >= lo && m < hi && std::binary_search(lists[r].begin(), lists[r].end(), m);
            ASSERT_EQ((met[m >> 6] >> (m & 63)) & 1, (met_before.count(m) || in_range) ? 1u : 0u) << name << " member " << m;
          }
        }
      }
    }
  }
}

TEST(DensePostings, NoListDenseNoBitmaps) {
  const std::vector<uint64_t> head{0, 3, 5};
  const std::vector<uint32_t> post{1, 7, 9, 2, 3};
  DensePostings dense;
  dense.build(head, post.data(), 10);
  EXPECT_FALSE(dense.any());
  EXPECT_EQ(dense.row(0), DensePostings::kSparse);
  EXPECT_EQ(dense.row(1), DensePostings::kSparse);
}
