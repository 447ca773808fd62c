// The few MPI exchanges neardup-mpi makes, over byte buffers: every rank sends one buffer to each
// rank (point to point, in messages of at most kMessageBytes so that 32-bit counts hold); gathers
// and broadcasts. Values are packed with Packer and read back with
// Unpacker (host byte order: every rank of a job runs the same binary on the same kind of CPU).
#pragma once

#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace neardup::mpi {

class Packer {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_string(std::string_view s) {
    put(static_cast<uint64_t>(s.size()));
    buf_.append(s.data(), s.size());
  }
  /// A run of values, read back with Unpacker::get_vector.
  template <class T>
  void put_vector(std::span<const T> v) {
    put(static_cast<uint64_t>(v.size()));
    buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    put_vector(std::span<const T>(v));
  }
  std::string& bytes() noexcept { return buf_; }

 private:
  std::string buf_;
};

class Unpacker {
 public:
  explicit Unpacker(std::string_view data) : data_(data) {}
  bool done() const noexcept { return at_ >= data_.size(); }
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, data_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string_view get_string() {
    const auto n = get<uint64_t>();
    const std::string_view s = data_.substr(at_, n);
    at_ += n;
    return s;
  }
  template <class T>
  std::vector<T> get_vector() {
    return get_values<T>(get<uint64_t>());
  }
  /// n values (a run whose count was read already).
  template <class T>
  std::vector<T> get_values(uint64_t n) {
    std::vector<T> v(n);
    std::memcpy(v.data(), data_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return v;
  }

 private:
  std::string_view data_;
  size_t at_ = 0;
};

class Comm {
 public:
  Comm() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// Sends out[r] to rank r; returns what each rank sent here (in[r] from rank r). Counts the
  /// bytes sent to other ranks in `shuffled`.
  ///
  /// Point to point, straight from each buffer into its destination: after the sizes are known
  /// (one MPI_Alltoall, which also keeps one exchange's messages apart from the next's), each
  /// buffer goes in messages of at most kMessageBytes (counts are 32-bit), so memory holds what
  /// is sent and what comes, with no staging copy of either.
  std::vector<std::string> exchange(std::vector<std::string> out) {
    const size_t n = static_cast<size_t>(size_);
    std::vector<std::string> in(n);
    std::vector<uint64_t> sizes(n), coming(n);
    for (size_t r = 0; r < n; ++r) sizes[r] = out[r].size();
    MPI_Request sized = MPI_REQUEST_NULL;
    MPI_Ialltoall(sizes.data(), 1, MPI_UINT64_T, coming.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &sized);
    wait_all(std::span<MPI_Request>(&sized, 1));
    // What stays here is moved, not copied through MPI.
    in[static_cast<size_t>(rank_)] = std::move(out[static_cast<size_t>(rank_)]);
    std::vector<MPI_Request> requests;
    for (size_t r = 0; r < n; ++r) {
      if (static_cast<int>(r) == rank_) continue;
      in[r].resize(coming[r]);
      for (uint64_t at = 0; at < coming[r]; at += kMessageBytes) {
        MPI_Request& q = requests.emplace_back(MPI_REQUEST_NULL);
        MPI_Irecv(in[r].data() + at, piece(coming[r], at), MPI_BYTE, static_cast<int>(r), kTag, MPI_COMM_WORLD, &q);
      }
    }
    for (size_t r = 0; r < n; ++r) {
      if (static_cast<int>(r) == rank_) continue;
      shuffled += out[r].size();
      for (uint64_t at = 0; at < out[r].size(); at += kMessageBytes) {
        MPI_Request& q = requests.emplace_back(MPI_REQUEST_NULL);
        MPI_Isend(out[r].data() + at, piece(out[r].size(), at), MPI_BYTE, static_cast<int>(r), kTag, MPI_COMM_WORLD, &q);
      }
    }
    wait_all(requests);
    return in;
  }

  /// Every rank's `mine`, in rank order, on every rank.
  std::vector<std::string> all_gather(const std::string& mine) {
    std::vector<std::string> out(static_cast<size_t>(size_), mine);
    return exchange(std::move(out));
  }

  template <class T>
  T all_reduce(T v, MPI_Op op) {
    static_assert(std::is_same_v<T, uint64_t> || std::is_same_v<T, int> || std::is_same_v<T, double>);
    T r{};
    const MPI_Datatype type = std::is_same_v<T, uint64_t> ? MPI_UINT64_T : std::is_same_v<T, int> ? MPI_INT : MPI_DOUBLE;
    MPI_Request q = MPI_REQUEST_NULL;
    MPI_Iallreduce(&v, &r, 1, type, op, MPI_COMM_WORLD, &q);
    wait_all(std::span<MPI_Request>(&q, 1));
    return r;
  }

  /// Waits for `requests` without holding a core. MPI's blocking calls poll on the waiting core
  /// (Open MPI's default), so a rank that waits for a slower one burns a core the whole time:
  /// with as many ranks as cores, that is CPU taken from the ranks still working (and counted
  /// as the job's). This one polls, and after a few polls sleeps between them, up to
  /// kMaxPause: a wait ends at most that much after its messages arrived.
  static void wait_all(std::span<MPI_Request> requests) {
    long pause_ns = 0;
    for (int polls = 0;; ++polls) {
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done) return;
      if (polls < kBusyPolls) continue;
      pause_ns = std::min(kMaxPauseNs, pause_ns * 2 + 1000);
      const timespec ts{0, pause_ns};
      ::nanosleep(&ts, nullptr);
    }
  }

  /// Bytes this rank sent to other ranks so far.
  uint64_t shuffled = 0;

 private:
  // Messages of 1 GiB at most: their counts are ints. Messages between two ranks with one tag
  // arrive in the order they were sent (MPI's non-overtaking rule), so the pieces of a buffer
  // land in place.
  static constexpr uint64_t kMessageBytes = uint64_t{1} << 30;
  static constexpr int kTag = 7;
  static constexpr int kBusyPolls = 100;
  static constexpr long kMaxPauseNs = 200'000;
  // The length of the message of a buffer of `size` bytes that starts at `at`.
  static int piece(uint64_t size, uint64_t at) noexcept { return static_cast<int>(std::min<uint64_t>(kMessageBytes, size - at)); }
  int rank_ = 0, size_ = 1;
};

}  // namespace neardup::mpi
