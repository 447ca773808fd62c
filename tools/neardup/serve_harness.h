// `neardup serve`'s request handling without a socket: the bytes a client sends go in, the bytes
// the service answers come out, through the same routes, limits and error handling. The fuzz
// target over request parsing and routing (fuzz/fuzz_serve.cpp) drives the service this way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace neardup {
class LiveIndex;
}

namespace neardup::cli {

class ServeHarness {
 public:
  /// The service over `live` (whose file is `index_path`) with `neardup serve`'s defaults, and
  /// a bearer token if `token` is not empty.
  ServeHarness(LiveIndex& live, const std::string& index_path, const std::string& token = "");
  ~ServeHarness();
  ServeHarness(const ServeHarness&) = delete;
  ServeHarness& operator=(const ServeHarness&) = delete;
  /// Serves the requests in `bytes` as one connection (keep-alive, at most 64 requests) and
  /// returns what the service answered.
  std::string serve(std::string_view bytes);
  /// How many answers so far were server errors (5xx but 503, which asks to retry): an internal
  /// error reached a client.
  uint64_t server_errors() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::cli
