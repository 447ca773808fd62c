#include "serve_connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace neardup::cli {

namespace {

thread_local ConnectionStream* t_current = nullptr;
thread_local ConnectionStream::Clock::time_point t_accepted{};

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (rc != 0) return;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0) return;
  ip = host;
  port = std::atoi(serv);
}

}  // namespace

ConnectionStream* ConnectionStream::current() { return t_current; }

void ConnectionStream::set_accepted(Clock::time_point t) { t_accepted = t; }

bool ConnectionStream::wait(short events, int timeout_ms) const {
  for (;;) {
    int ms = timeout_ms;
    if (deadline_ != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      ms = static_cast<int>(std::clamp<long long>(left, 0, ms));  // late: only what has arrived
    }
    pollfd p{fd_, events, 0};
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

bool ConnectionStream::is_readable() const { return wait(POLLIN, read_ms_); }

bool ConnectionStream::is_writable() const { return wait(POLLOUT, write_ms_); }

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (!wait(POLLIN, read_ms_)) return -1;
  for (;;) {
    const ssize_t n = ::recv(fd_, ptr, size, 0);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (!wait(POLLOUT, write_ms_)) return -1;
  for (;;) {
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const { address_of(fd_, true, ip, port); }

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const { address_of(fd_, false, ip, port); }

bool serve_connection(int fd, int read_timeout, int write_timeout, int keep_alive_seconds, size_t keep_alive_max,
                      const std::function<bool(httplib::Stream&, bool, bool&)>& serve_one, const std::function<bool()>& stopping) {
  ConnectionStream strm(fd, read_timeout, write_timeout);
  t_current = &strm;
  bool ok = true;
  const auto start = t_accepted == ConnectionStream::Clock::time_point{} ? ConnectionStream::Clock::now() : t_accepted;
  for (size_t left = keep_alive_max; left > 0 && !stopping(); --left) {
    // Idle before a request: the first until its deadline (counted from the accept), later ones
    // for the keep-alive time; looking every 100 ms for a server stop.
    const bool first = left == keep_alive_max;
    const auto now = ConnectionStream::Clock::now();
    const auto idle_until = first ? start + std::chrono::seconds(read_timeout) : now + std::chrono::seconds(keep_alive_seconds);
    bool readable = false;
    while (!readable && !stopping()) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(idle_until - ConnectionStream::Clock::now()).count();
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(ms, 0, 100)));
      if (r < 0 && errno != EINTR) break;
      readable = r > 0;
      if (ms <= 0) break;
    }
    if (!readable) break;
    strm.start_request(first ? start : ConnectionStream::Clock::now());
    bool closed = false;
    ok = serve_one(strm, left == 1, closed);
    strm.request_read();
    if (!ok || closed) break;
  }
  t_current = nullptr;
  t_accepted = {};
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  return ok;
}

}  // namespace neardup::cli
