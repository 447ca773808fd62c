// The decompressors (and plain files): any bytes either decompress or raise FormatError, never
// crash or hang; reading in odd-sized pieces and skipping give the same bytes as one read.
// Output is capped at 8 MiB per input, so a small bomb does not stall the fuzzer.
#include <algorithm>
#include <string>

#include "fuzz_util.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"

using namespace neardup;

namespace {

constexpr size_t kCap = 8u << 20;

std::string read_pieces(io::ByteStream& s, size_t piece) {
  std::string out;
  std::string buf(piece, '\0');
  while (out.size() < kCap) {
    const size_t got = s.read(buf.data(), std::min(piece, kCap - out.size()));
    if (got == 0) break;
    FUZZ_CHECK(got <= piece);
    out.append(buf.data(), got);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::MemFile file(data, size);
  const size_t piece = size ? 1 + data[size - 1] % 97 : 1;
  std::string whole;
  try {
    auto s = io::open_stream(file.path(), "fuzz");
    whole = read_pieces(*s, 1 << 16);
    if (s->compression() == io::Compression::None) FUZZ_CHECK(whole == std::string(reinterpret_cast<const char*>(data), size));
  } catch (const FormatError&) {
    return 0;
  }
  if (whole.size() >= kCap) return 0;
  auto s = io::open_stream(file.path(), "fuzz");
  FUZZ_CHECK(read_pieces(*s, piece) == whole);
  const uint64_t skip = whole.size() / 2;
  auto t = io::open_stream(file.path(), "fuzz");
  FUZZ_CHECK(t->skip(skip) == skip);
  FUZZ_CHECK(read_pieces(*t, 4096) == whole.substr(skip));
  return 0;
}
