// The shingle sets exact verification compares: those the first pass keeps (every set for the
// exact method; for LSH, the sets of documents that already share a band key with an earlier
// document when sketched, up to RunTuning::first_pass_set_bytes), and those read again by
// position for the documents in buckets (Pipeline's sets.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "internal/seen_keys.h"
#include "neardup/verify.h"

namespace neardup {

class SetStore {
 public:
  /// Before the first pass: `all` keeps every document's set; `early` the sets of documents
  /// whose band keys an earlier document had.
  void start(bool all, bool early) {
    held_ = all ? std::make_unique<ShingleSets>() : nullptr;
    early_ = ShingleSets();
    early_bytes_ = 0;
    seen_ = early ? std::make_unique<internal::SeenKeys>() : nullptr;
    released_ = false;
  }

  /// First pass, on any thread: records a document's band keys, and tells whether its set
  /// (`bytes` at most) is kept: an earlier document had one of its keys and the budget allows.
  /// Every key is inserted, since a later document must find each of them.
  bool keep_early(std::span<const uint64_t> keys, uint64_t bytes, uint64_t budget) const {
    for (const uint64_t key : keys) seen_->prefetch(key);
    bool seen = false;
    for (const uint64_t key : keys) seen |= seen_->insert(key);
    return seen && early_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes <= budget;
  }

  /// First pass, in input order: stores doc's set, kept early or kept whole. In that order, so
  /// that a repeated set's copy is let go for the sets after it.
  void add(DocId doc, std::vector<ShingleHash>&& set, bool early) {
    if (early && !set.empty()) early_.set(doc, std::move(set));
    if (held_) held_->set(doc, std::move(set));
  }

  /// After the first pass: the band keys seen are let go.
  void end_first_pass() { seen_.reset(); }

  /// The first pass's early sets of the documents with needed[d] != 0 become the store's (the
  /// others let go). `sparse`: a run whose memory is limited finds the sets it will hold through
  /// a table of those only (ShingleSets::use_sparse_slots), where none was kept early.
  void take_early(std::span<const uint8_t> needed, bool sparse) {
    held_ = std::make_unique<ShingleSets>(std::move(early_));
    early_ = ShingleSets();
    if (!sparse || !held_->use_sparse_slots()) held_->keep_only(needed);
  }

  /// The sets held (null when the run keeps none: estimated verification, or before any).
  ShingleSets* sets() noexcept { return held_.get(); }
  const ShingleSets* sets() const noexcept { return held_.get(); }

  /// Exchanges the sets held with `other` (a group's sets read in a store of their own).
  void swap_sets(ShingleSets& other) noexcept { std::swap(*held_, other); }

  /// Lets the verified documents' sets go (a group's, once decided).
  void release(std::span<const DocId> docs) {
    held_->release(docs);
    released_ = true;
  }
  /// The verified documents' sets are let go elsewhere (with the store that holds them, once
  /// another is swapped in: swap_sets).
  void will_release() { released_ = true; }
  /// Lets every set go, and the table of the documents' slots with them (4 B per document of
  /// the run), once the verification is over.
  void release_all() {
    if (held_) *held_ = ShingleSets();
    released_ = true;
  }
  /// Whether sets were let go after verification (RunTuning::keep_sets off).
  bool released() const noexcept { return released_; }

 private:
  std::unique_ptr<ShingleSets> held_;
  ShingleSets early_;
  // Shared by the first pass's threads (keep_early, const as the sketching is): an atomic count
  // and a concurrent table.
  mutable std::atomic<uint64_t> early_bytes_{0};
  std::unique_ptr<internal::SeenKeys> seen_;
  bool released_ = false;
};

}  // namespace neardup
