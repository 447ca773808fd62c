// An output's data synced to the disk while it is still being written, so that the sync that
// ends it (AtomicFile::finish) waits only for the last part. An fsync waits for every byte
// written since the one before it to reach stable storage: where the device (or the host of a
// virtual machine) caches writes, the 335 MB of pairs of dense licence files, written in 0.6 s,
// took 0.14-0.2 s more to sync at the end, and 0.01 s when a thread had synced every 32 MiB
// meanwhile (a write of the same pace without neardup, bench/data on this project's VM: 0.19
// against 0.012 s; buffered writes of 170 MB, 0.072 against 0.006 s).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include <unistd.h>

namespace neardup::io {

class SyncBehind {
 public:
  /// Syncs `fd` (a regular file, which stays open while this lives) on a thread of its own, with
  /// `sync` (fdatasync; another for tests: 0, or -1 with errno set).
  explicit SyncBehind(int fd, int (*sync)(int) = &::fdatasync) noexcept : fd_(fd), sync_(sync) {}
  ~SyncBehind() { stop(); }
  SyncBehind(const SyncBehind&) = delete;
  SyncBehind& operator=(const SyncBehind&) = delete;

  /// `written` bytes are handed to the kernel so far: a sync (fdatasync) of what is written by
  /// then starts once kEvery bytes more than at the last one are, unless one is running.
  void wrote(uint64_t written);
  /// Waits for the sync running, if any; later wrote() calls sync nothing. Returns the errno of a
  /// sync that failed (0 if none did): an error a sync reported is not reported again to the
  /// next sync of the same descriptor, so the caller's final sync would not see it.
  int stop();

  static constexpr uint64_t kEvery = uint64_t{32} << 20;

 private:
  void run();
  const int fd_;
  int (*const sync_)(int);
  uint64_t asked_at_ = 0;  // written when the last sync was asked for
  std::mutex m_;
  std::condition_variable cv_;
  bool pending_ = false, stopping_ = false;
  int error_ = 0;
  std::unique_ptr<std::thread> thread_;  // started at the first sync
  int pid_ = 0;                          // of the process that started it
};

}  // namespace neardup::io
