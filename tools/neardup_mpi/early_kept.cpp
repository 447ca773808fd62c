// Rank 0's kept records copied while verification runs (early_kept.h).
#include "early_kept.h"

#include "run.h"

namespace neardup::mpi {

EarlyKept::EarlyKept(const Local& local, const io::InputSet& inputs, size_t first_source, io::AtomicFile& out, uint64_t limit)
    : local_(local), inputs_(inputs), out_(out), base_(local.base), limit_(limit), removed_(local.size()), source_(first_source) {
  out_.limit_direct_buffers(kEarlyDirectBuffers, kEarlyDirectBufferBytes);
  job_.start([this] { follow(); });
}

void EarlyKept::decided_below(uint64_t d) {
  {
    const std::lock_guard<std::mutex> lock(m_);
    decided_ = std::max(decided_, std::min(d, limit_));
  }
  cv_.notify_all();
}

void EarlyKept::stop() noexcept {
  {
    const std::lock_guard<std::mutex> lock(m_);
    stopped_ = true;
  }
  cv_.notify_all();
  job_.join_quietly();
}

// The thread: copies what is decided until the limit, or until the run says it is over.
void EarlyKept::follow() {
  const auto kept = [this](size_t i) { return removed_[i] == 0; };
  const uint64_t end = std::min<uint64_t>(limit_, base_ + local_.size());
  for (;;) {
    uint64_t upto = 0;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] { return stopped_ || decided_ > base_ + next_ || decided_ >= end; });
      if (stopped_) return;
      upto = std::min(decided_, end);
    }
    copy(static_cast<size_t>(upto - std::min(upto, base_)), kept);
    if (upto >= end) return;
  }
}

// Appends the kept records of local documents [next_, to), runs of consecutive records at
// once, each source through its own appender (a compressed source is read on from where it was).
void EarlyKept::copy(size_t to, const std::function<bool(size_t)>& kept) {
  const auto& sources = inputs_.sources();
  const auto append = [&] {
    if (ranges_.empty()) return;
    if (!appender_) appender_.emplace(sources[source_].path, sources[source_].display, inputs_.read_from_copy(source_));
    appender_->append(ranges_, out_);
    ranges_.clear();
  };
  for (; next_ < to; ++next_) {
    if (local_.source[next_] != source_) {
      append();
      appender_.reset();
      source_ = local_.source[next_];
    }
    if (kept(next_)) io::add_record_line(ranges_, local_.pos[next_]);
  }
  append();
}

void EarlyKept::finish(const std::function<bool(size_t)>& kept) {
  decided_below(limit_);  // the thread copies to its limit, if verification ended before it
  job_.join();
  copy(local_.size(), kept);
  out_.flush_appends();
}

}  // namespace neardup::mpi
