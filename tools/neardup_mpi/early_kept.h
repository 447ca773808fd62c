// Rank 0's kept records of dedup -o, copied to the output while verification runs. The output
// holds every rank's kept records in input order, and rank 0's come first; a document is
// decided by the rank that verifies its component, and rank 0 verifies the components that
// start first, group after group, in order. Once a group is clustered, every document before
// the next group's first component (and before the first component another rank verifies) has
// its fate: it is in no component, or in one rank 0 has clustered. So rank 0 copies those as it
// goes, as one process writes beside its verification, instead of copying all of its share
// after every rank has finished (on the crowded mix a third of the output, 0.3 s of disk time,
// which would otherwise follow verification).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "io/range_appender.h"
#include "neardup/io/reader.h"
#include "pipeline/background_job.h"

namespace neardup::mpi {

struct Local;

// Two buffers of the direct writes, 2 MiB of each used: one fills while the other is written
// (one process's output takes four of 4 MiB). Writing through the page cache instead costs a
// fresh page per 4 KiB, CPU that verification on the same cores is short of.
constexpr size_t kEarlyDirectBuffers = 2, kEarlyDirectBufferBytes = size_t{2} << 20;

class EarlyKept {
 public:
  /// Copies the kept records of `local`'s documents (rank 0's share, sources from
  /// `first_source` on, read with `inputs`) to `out` as they are decided, on a thread of its own,
  /// up to document `limit` (global number: the first component another rank verifies). The
  /// direct writes take kEarlyDirectBuffers (AtomicFile::limit_direct_buffers): their buffers
  /// come on top of verification's peak.
  EarlyKept(const Local& local, const io::InputSet& inputs, size_t first_source, io::AtomicFile& out, uint64_t limit);
  ~EarlyKept() { stop(); }
  EarlyKept(const EarlyKept&) = delete;
  EarlyKept& operator=(const EarlyKept&) = delete;

  /// Document d (global number, read here) is removed.
  void removed(uint64_t d) { removed_[d - base_] = 1; }
  /// Every document before `d` is decided (the marks before it are final).
  void decided_below(uint64_t d);
  /// Waits for the copying thread (throwing its error), then copies the rest of the share,
  /// `kept(i)` telling whether local document i is kept, with the direct writes allowed again.
  void finish(const std::function<bool(size_t)>& kept);
  /// Stops the thread without waiting for decisions (the run failed).
  void stop() noexcept;

 private:
  void follow();
  void copy(size_t to, const std::function<bool(size_t)>& kept);
  const Local& local_;
  const io::InputSet& inputs_;
  io::AtomicFile& out_;
  uint64_t base_, limit_;
  std::vector<uint8_t> removed_;  // per local document
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t decided_ = 0;  // global: the documents before it are decided
  bool stopped_ = false;
  BackgroundJob job_;
  // The copy's place: the next local document, its source and that source's appender.
  size_t next_ = 0;
  size_t source_;
  std::optional<io::RangeAppender> appender_;
  std::vector<io::ByteRange> ranges_;
};

}  // namespace neardup::mpi
