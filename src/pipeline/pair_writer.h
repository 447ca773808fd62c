// Pairs written on a thread of their own while the join lists the next ones
// (Pipeline::write_pairs). The listing hands its chunks over in order from one thread, its
// workers waiting meanwhile: formatting and writing the 4 M pairs of the dense licence mix
// (335 MB of lines) held that thread for 0.6-1.2 s in which the other core stood idle. Here the
// chunks are copied into a queue and written in order by the writer's thread; the listing waits
// only when the writer is kMaxQueued pairs behind, so the queue's memory stays bounded.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "internal/start_thread.h"
#include "neardup/types.h"

namespace neardup {

class PairWriter {
 public:
  using Write = std::function<void(std::span<const ScoredPair>)>;
  /// Pairs queued at most (24 bytes each: 6 MiB), copied kPiece at a time: a run that holds its
  /// pairs hands them all over in one chunk, which is not copied whole.
  static constexpr size_t kMaxQueued = size_t{1} << 18, kPiece = kMaxQueued / 4;

  /// Starts the thread that calls write(chunk) for each chunk added, in order.
  explicit PairWriter(Write write) : write_(std::move(write)) {
    thread_ = internal::start_thread([this] { run(); });
  }
  PairWriter(const PairWriter&) = delete;
  PairWriter& operator=(const PairWriter&) = delete;
  /// Without finish() (the listing failed): what is queued is dropped and the thread stopped.
  ~PairWriter() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  /// Queues a copy of chunk; throws the writer's error once it has failed (a full disk), so that
  /// the listing stops.
  void add(std::span<const ScoredPair> chunk) {
    for (size_t i = 0; i < chunk.size(); i += kPiece) add_piece(chunk.subspan(i, std::min(kPiece, chunk.size() - i)));
  }

  /// Waits until every pair added is written; throws the writer's error.
  void finish() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      closed_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void add_piece(std::span<const ScoredPair> chunk) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return error_ || queued_ + chunk.size() <= kMaxQueued; });
    if (error_) std::rethrow_exception(error_);
    std::vector<ScoredPair> copy;
    if (!spare_.empty()) {
      copy = std::move(spare_.back());
      spare_.pop_back();
    }
    copy.assign(chunk.begin(), chunk.end());
    queued_ += copy.size();
    queue_.push_back(std::move(copy));
    lock.unlock();
    cv_.notify_all();
  }

  void run() {
    for (;;) {
      std::vector<ScoredPair> chunk;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stop_ || closed_ || !queue_.empty(); });
        if (stop_ || queue_.empty()) return;  // stopped, or closed and written
        chunk = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        write_(chunk);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(m_);
        error_ = std::current_exception();
        queue_.clear();
        cv_.notify_all();
        return;
      }
      {
        const std::lock_guard<std::mutex> lock(m_);
        queued_ -= chunk.size();
        if (spare_.size() < kSpares) spare_.push_back(std::move(chunk));
      }
      cv_.notify_all();
    }
  }

  Write write_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::vector<ScoredPair>> queue_;
  // Written chunks' buffers, for the next copies: fresh ones would be mapped and zeroed anew
  // (1.5 MiB each, past malloc's mapping threshold). As many as the queue holds full pieces,
  // the one being written and the one being copied, and a few more.
  static constexpr size_t kSpares = 8;
  std::vector<std::vector<ScoredPair>> spare_;
  size_t queued_ = 0;                            // pairs in queue_ and in the chunk being written
  bool closed_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace neardup
