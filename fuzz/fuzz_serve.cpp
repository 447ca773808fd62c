// `neardup serve`'s request parsing and routing (tools/neardup/serve_harness.h): the input is
// what one client connection sends (request lines, headers, bodies, NDJSON batches, ids, query
// strings, several requests kept alive). Every request gets an HTTP answer; none is a 500 (an
// internal error) or ends the process; the index stays readable.
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "neardup/index.h"
#include "neardup/live_index.h"
#include "serve_harness.h"

using namespace neardup;

namespace {

// A fresh index in a temporary folder (on /dev/shm where there is one: its log syncs cost
// nothing), opened live, every few thousand inputs, so that it stays small.
struct Service {
  std::string dir, path;
  std::unique_ptr<LiveIndex> live;
  std::unique_ptr<cli::ServeHarness> harness;
  int uses = 0;

  void reopen() {
    harness.reset();
    live.reset();
    if (dir.empty()) {
      std::string tmpl = (::access("/dev/shm", W_OK) == 0 ? std::string("/dev/shm") : std::string("/tmp")) + "/neardup-fuzz-serve-XXXXXX";
      FUZZ_CHECK(::mkdtemp(tmpl.data()) != nullptr);
      dir = tmpl;
      path = dir + "/i.ndx";
    }
    ::unlink((path + ".wal").c_str());
    NearDupIndex::create(path, PipelineSpec::parse("words:3 oph:64 verify:0.5"));
    LiveIndexOptions o;
    o.fold_bytes = uint64_t{1} << 20;  // folds happen while fuzzing
    live = LiveIndex::open(path, o);
    harness = std::make_unique<cli::ServeHarness>(*live, path);
    uses = 0;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Service service;
  if (!service.harness || ++service.uses > 5000) service.reopen();
  const uint64_t errors = service.harness->server_errors();
  const std::string out = service.harness->serve(std::string_view(reinterpret_cast<const char*>(data), size));
  FUZZ_CHECK(out.empty() || out.starts_with("HTTP/1.1 "));
  // No 5xx but 503 (the bytes cannot tell: a body may quote the request, "HTTP/1.1 500" and all).
  FUZZ_CHECK(service.harness->server_errors() == errors);
  (void)service.live->stats();
  return 0;
}
