#include "io/sync_behind.h"

#include <unistd.h>

#include <cerrno>

#include "io/retry.h"

namespace neardup::io {

void SyncBehind::wrote(uint64_t written) {
  if (written - asked_at_ < kEvery) return;
  asked_at_ = written;
  {
    std::lock_guard lock(m_);
    if (stopping_) return;
    pending_ = true;
  }
  if (!thread_) {
    try {
      pid_ = static_cast<int>(::getpid());
      thread_ = std::make_unique<std::thread>([this] { run(); });
    } catch (const std::system_error&) {  // no thread to be had: the final sync does it all
      std::lock_guard lock(m_);
      stopping_ = true;
      return;
    }
  }
  cv_.notify_one();
}

void SyncBehind::run() {
  std::unique_lock lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return pending_ || stopping_; });
    if (stopping_) return;
    pending_ = false;
    lock.unlock();
    const int rc = retry_eintr([&] { return sync_(fd_); });
    const int e = rc != 0 ? errno : 0;
    lock.lock();
    if (e != 0 && e != EINVAL && error_ == 0) error_ = e;
  }
}

int SyncBehind::stop() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_) {
    if (static_cast<int>(::getpid()) == pid_)
      thread_->join();
    else
      static_cast<void>(thread_.release());  // a forked child: the thread is its parent's
    thread_.reset();
  }
  std::lock_guard lock(m_);
  return error_;
}

}  // namespace neardup::io
