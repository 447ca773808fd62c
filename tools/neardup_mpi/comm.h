// The few MPI exchanges neardup-mpi makes, over byte buffers: every rank sends one buffer to each
// rank (MPI_Alltoallv), in rounds of at most kRoundBytes from any rank so that 32-bit counts and
// memory stay bounded; gathers and broadcasts. Values are packed with Packer and read back with
// Unpacker (host byte order: every rank of a job runs the same binary on the same kind of CPU).
#pragma once

#include <mpi.h>

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
    const auto n = get<uint64_t>();
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
  std::vector<std::string> exchange(std::vector<std::string> out) {
    std::vector<std::string> in(static_cast<size_t>(size_));
    std::vector<size_t> sent(static_cast<size_t>(size_), 0);
    for (int r = 0; r < size_; ++r)
      if (r != rank_) shuffled += out[static_cast<size_t>(r)].size();
    // What stays here is moved, not copied through MPI.
    in[static_cast<size_t>(rank_)] = std::move(out[static_cast<size_t>(rank_)]);
    out[static_cast<size_t>(rank_)].clear();
    for (;;) {
      // One round: up to kRoundBytes / size from each buffer not yet sent whole.
      const size_t chunk = kRoundBytes / static_cast<size_t>(size_);
      std::vector<int> scount(static_cast<size_t>(size_)), sdispl(static_cast<size_t>(size_)), rcount(static_cast<size_t>(size_)),
          rdispl(static_cast<size_t>(size_));
      std::string sendbuf;
      int left = 0;
      for (int r = 0; r < size_; ++r) {
        const std::string& o = out[static_cast<size_t>(r)];
        const size_t n = std::min(chunk, o.size() - sent[static_cast<size_t>(r)]);
        sdispl[static_cast<size_t>(r)] = static_cast<int>(sendbuf.size());
        scount[static_cast<size_t>(r)] = static_cast<int>(n);
        sendbuf.append(o, sent[static_cast<size_t>(r)], n);
        sent[static_cast<size_t>(r)] += n;
        left |= sent[static_cast<size_t>(r)] < o.size() ? 1 : 0;
      }
      MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        rdispl[static_cast<size_t>(r)] = total;
        total += rcount[static_cast<size_t>(r)];
      }
      std::string recvbuf(static_cast<size_t>(total), '\0');
      MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), MPI_BYTE, recvbuf.data(), rcount.data(), rdispl.data(),
                    MPI_BYTE, MPI_COMM_WORLD);
      for (int r = 0; r < size_; ++r)
        if (r != rank_)
          in[static_cast<size_t>(r)].append(recvbuf, static_cast<size_t>(rdispl[static_cast<size_t>(r)]),
                                            static_cast<size_t>(rcount[static_cast<size_t>(r)]));
      int any = 0;
      MPI_Allreduce(&left, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (!any) break;
    }
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
    MPI_Allreduce(&v, &r, 1, type, op, MPI_COMM_WORLD);
    return r;
  }

  /// Bytes this rank sent to other ranks so far.
  uint64_t shuffled = 0;

 private:
  static constexpr size_t kRoundBytes = size_t{1} << 30;
  int rank_ = 0, size_ = 1;
};

}  // namespace neardup::mpi
