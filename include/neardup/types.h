// Basic types and the conventions shared by every module.
//
// Conventions (stated once here):
//  * A document is identified inside a run by its ordinal `DocId`: its position in the input
//    order (inputs in the order given, records in file order, directory files sorted by path),
//    counting only records that became documents (skipped bad records get no ordinal).
//  * A shingle is a 64-bit hash (see shingle.h). A shingle set is a sorted vector of distinct hashes.
//  * A batch of n signatures of length k is one row-major buffer: value j of document i is
//    `sigs[i * k + j]`. Signature values are 32-bit.
//  * A pair (a, b) of documents always has a < b.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace neardup {

/// Scratch memory a sketcher or kernel keeps between documents, per buffer, at most: a large
/// document grows its buffers for its own time only (internal/scratch.h).
inline constexpr size_t kScratchKeepBytes = size_t{1} << 20;

/// How far a reading pass is, handed to a ProgressFn after each batch (RunTuning::progress).
struct Progress {
  const char* stage = "";  ///< "sketch", "verify", "write"
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  uint64_t documents = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

using DocId = uint32_t;
using ShingleHash = uint64_t;
using SigValue = uint32_t;

/// std::allocator, except that a vector's resize() leaves its new elements default-initialised
/// (integers: unwritten) instead of zeroing them.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() noexcept = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// Hashes (word or shingle hashes) in a buffer that is resized and then written whole: the
/// scratch of the shingling path, where zeroing every resized buffer first took 3% of the time
/// of `pairs` on a crowded corpus (a std::vector<uint64_t> otherwise).
using HashVector = std::vector<uint64_t, DefaultInitAllocator<uint64_t>>;

/// A pair of documents with a similarity (a < b).
struct ScoredPair {
  DocId a = 0;
  DocId b = 0;
  double similarity = 0.0;
  friend bool operator==(const ScoredPair&, const ScoredPair&) = default;
};

/// The order of pair lists: by (a, b).
inline bool by_pair(const ScoredPair& x, const ScoredPair& y) noexcept { return x.a != y.a ? x.a < y.a : x.b < y.b; }

/// A candidate pair before scoring (a < b).
struct DocPair {
  DocId a = 0;
  DocId b = 0;
  friend auto operator<=>(const DocPair&, const DocPair&) = default;
};

/// Exact Jaccard similarity of two sorted sets of distinct hashes. Two empty sets give 0:
/// an empty document is never similar to anything.
double jaccard(std::span<const ShingleHash> a, std::span<const ShingleHash> b) noexcept;

/// jaccard(a, b) if it is at least `floor`; otherwise some value below `floor`, found sooner: the
/// size filter (J <= min / max) and a merge that stops once the values left cannot bring the
/// intersection up to what `floor` needs (the size and overlap bounds of Bayardo, Ma and
/// Srikant, "Scaling up all pairs similarity search", WWW 2007).
double jaccard_at_least(std::span<const ShingleHash> a, std::span<const ShingleHash> b, double floor) noexcept;

}  // namespace neardup
