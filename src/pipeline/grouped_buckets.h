// The LSH buckets of a verification in groups (Pipeline::Impl::verify_in_groups), handed out a
// group at a time: from memory, or, for a run whose memory is limited, from nameless files in
// the temporary folder, written in group order once the groups are known, so that the buckets
// of the groups to come (9-10 bytes per document of 10 million short ones in clusters) are not
// held while each group verifies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "internal/spilled_columns.h"
#include "neardup/lsh_index.h"

namespace neardup {

class GroupedBuckets {
 public:
  /// Group g holds buckets order[start[g], start[g + 1]). With a `spill_dir`, they are written
  /// there now and `buckets` let go (IoError naming the folder if the disk refuses).
  GroupedBuckets(LshBuckets&& buckets, std::vector<uint32_t>&& order, std::vector<size_t>&& start, const std::string* spill_dir)
      : buckets_(std::move(buckets)), order_(std::move(order)), start_(std::move(start)) {
    if (spill_dir) spill(*spill_dir);
  }

  size_t groups() const noexcept { return start_.size() - 1; }
  bool empty(size_t g) const noexcept { return start_[g] == start_[g + 1]; }

  /// Group g's buckets into `out`.
  void load(size_t g, LshBuckets& out) const {
    out.offsets.assign(1, 0);
    out.members.clear();
    if (!disk_) {
      for (size_t k = start_[g]; k < start_[g + 1]; ++k) {
        const auto b = buckets_[order_[k]];
        out.members.insert(out.members.end(), b.begin(), b.end());
        out.offsets.push_back(out.members.size());
      }
      return;
    }
    const auto* sizes = reinterpret_cast<const uint32_t*>(sizes_.data());
    const auto* members = reinterpret_cast<const DocId*>(members_.data());
    for (size_t k = start_[g]; k < start_[g + 1]; ++k) out.offsets.push_back(out.offsets.back() + sizes[k]);
    out.members.assign(members + member_at_[g], members + member_at_[g + 1]);
    // What this group read is not read again.
    disk_->drop_pages(kSizes, start_[g] * sizeof(uint32_t), start_[g + 1] * sizeof(uint32_t));
    disk_->drop_pages(kMembers, member_at_[g] * sizeof(DocId), member_at_[g + 1] * sizeof(DocId));
  }

 private:
  enum Column { kMembers, kSizes, kColumns };
  void spill(const std::string& dir) {
    disk_ = std::make_unique<internal::SpilledColumns>(dir, kColumns, "the LSH buckets");
    member_at_.assign(groups() + 1, 0);
    for (size_t g = 0; g < groups(); ++g) {
      member_at_[g + 1] = member_at_[g];
      for (size_t k = start_[g]; k < start_[g + 1]; ++k) {
        const auto b = buckets_[order_[k]];
        const auto size = static_cast<uint32_t>(b.size());
        disk_->append(kMembers, b.data(), b.size() * sizeof(DocId));
        disk_->append(kSizes, &size, sizeof size);
        member_at_[g + 1] += b.size();
      }
    }
    disk_->finish();
    buckets_ = LshBuckets();
    std::vector<uint32_t>().swap(order_);
    members_ = disk_->map(kMembers);
    sizes_ = disk_->map(kSizes);
  }

  LshBuckets buckets_;
  std::vector<uint32_t> order_;
  std::vector<size_t> start_;
  std::unique_ptr<internal::SpilledColumns> disk_;
  std::vector<uint64_t> member_at_;  // per group, its first member on disk
  std::span<const std::byte> members_, sizes_;
};

}  // namespace neardup
