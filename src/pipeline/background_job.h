// A job on a thread of its own whose error the run takes over: dedup's writer of the kept
// records, which follows verification's decisions while verification goes on
// (Pipeline::run_dedup). The run checks it between groups, so that a writer that failed (a full
// disk, an input that changed) stops the run without waiting for verification to end.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "internal/start_thread.h"

namespace neardup {

class BackgroundJob {
 public:
  BackgroundJob() = default;
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;
  /// The owner joins (join or join_quietly) before it goes.
  ~BackgroundJob() { join_quietly(); }

  /// Runs job on a new thread; what it throws is kept for join().
  void start(std::function<void()> job) {
    done_ = false;
    error_ = nullptr;
    bytes.store(0, std::memory_order_relaxed);
    docs.store(0, std::memory_order_relaxed);
    started = std::chrono::steady_clock::now();
    thread_ = internal::start_thread([this, job = std::move(job)] {
      try {
        job();
      } catch (...) {
        error_ = std::current_exception();
      }
      {
        const std::lock_guard<std::mutex> lock(m_);
        done_ = true;
      }
      cv_.notify_all();
    });
  }

  bool running() const noexcept { return thread_.joinable(); }

  /// Waits for the job to end, calling tick() every `every` meanwhile.
  void wait(std::chrono::milliseconds every, const std::function<void()>& tick) {
    std::unique_lock<std::mutex> lock(m_);
    while (!cv_.wait_for(lock, every, [&] { return done_; }))
      if (tick) tick();
  }

  /// Whether the job has ended with an error (join() then throws it).
  bool failed() {
    const std::lock_guard<std::mutex> lock(m_);
    return done_ && error_;
  }

  /// Waits for the job; throws its error, if any.
  void join() {
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  /// Waits for the job and forgets its error (the run stops with its own).
  void join_quietly() noexcept {
    if (thread_.joinable()) thread_.join();
    error_ = nullptr;
  }

  /// Progress the job reports, for the run's thread to show.
  std::atomic<uint64_t> bytes{0}, docs{0};
  std::chrono::steady_clock::time_point started{};

 private:
  std::thread thread_;
  std::exception_ptr error_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
};

}  // namespace neardup
