// One client connection of `neardup serve`: its socket read and written with a deadline per
// request.
//
// cpp-httplib serves a connection on one thread and gives every read the same timeout, so a
// client that sends its request a byte at a time, each byte just within the timeout, holds the
// thread for as long as it likes (the "slowloris" attack); a few hundred such clients starve
// every other one. Here a request must arrive whole by a deadline: its request line and headers
// within the read timeout of their start (the first request's: of the connection's accept,
// however long it waited for a thread), its body (ConnectionStream::allow_body) within one more
// second per MiB. Past the deadline only bytes already received are read; the next read fails
// and the connection is closed. So a connection that waited behind slow ones is served at once
// if its client sent its request, and dropped at once if not.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace neardup::cli {

class ConnectionStream : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  ConnectionStream(int fd, int read_timeout_seconds, int write_timeout_seconds)
      : fd_(fd), read_ms_(read_timeout_seconds * 1000), write_ms_(write_timeout_seconds * 1000) {}
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  /// A new request starts at `t`: it must arrive by t + the read timeout.
  void start_request(Clock::time_point t) { deadline_ = t + std::chrono::milliseconds(read_ms_); }
  /// Its headers are read: a body of `bytes` may take one more second per MiB.
  void allow_body(uint64_t bytes) {
    deadline_ += std::chrono::milliseconds(1000 + std::min<uint64_t>(bytes, uint64_t{1} << 40) / 1024 / 1024 * 1000);
  }
  /// The request is read: what follows (the handler, the answer) has no deadline.
  void request_read() { deadline_ = Clock::time_point::max(); }
  /// The connection this thread serves, or null.
  static ConnectionStream* current();
  /// When the connection about to be served on this thread was accepted.
  static void set_accepted(Clock::time_point t);

 private:
  /// Waits until the socket is readable (POLLIN) or writable, within `timeout_ms` and the
  /// deadline; false if it is not.
  bool wait(short events, int timeout_ms) const;
  int fd_;
  int read_ms_, write_ms_;
  Clock::time_point deadline_ = Clock::time_point::max();
};

/// Serves the connection `fd` until it closes, stays idle for `keep_alive_seconds`, has served
/// `keep_alive_max` requests, or `stopping()` says the server stops; then closes it. Each request
/// goes to `serve_one(stream, last, closed)` (cpp-httplib's process_request) with its deadline.
bool serve_connection(int fd, int read_timeout, int write_timeout, int keep_alive_seconds, size_t keep_alive_max,
                      const std::function<bool(httplib::Stream&, bool, bool&)>& serve_one, const std::function<bool()>& stopping);

}  // namespace neardup::cli
