// The shares: the inputs cut into one run of bytes per rank, at line boundaries where a file can
// be cut.
#include "run.h"

namespace neardup::mpi {

// Whether a source can be split between ranks at line boundaries: an uncompressed JSONL file
// (a compressed stream has no byte offsets to start at).
bool splittable(const io::Source& src) {
  if (src.kind != io::SourceKind::Jsonl) return false;
  unsigned char magic[6] = {};
  std::FILE* f = std::fopen(src.path.c_str(), "rb");
  if (!f) return false;
  const size_t n = std::fread(magic, 1, sizeof magic, f);
  std::fclose(f);
  return io::compression_of_magic(magic, n) == io::Compression::None;
}

// The inputs laid end to end are cut into N runs of about total / N bytes: position p belongs to
// rank p * N / total. A file that cannot be split goes whole to the rank its first byte belongs
// to; an uncompressed JSONL file (when `split`) is cut, each line going to the rank its first
// byte belongs to. Documents are numbered in input order, so every rank's documents are a
// contiguous range of the numbers one process gives them.
std::vector<Share> split_inputs(const io::InputSet& inputs, int ranks, bool split) {
  const auto& sources = inputs.sources();
  std::vector<uint64_t> start(sources.size() + 1, 0);
  std::vector<bool> cut(sources.size(), false);
  for (size_t s = 0; s < sources.size(); ++s) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(sources[s].path, ec);
    start[s + 1] = start[s] + (ec ? 0 : size);
    cut[s] = split && !ec && size > 0 && splittable(sources[s]);
  }
  const uint64_t total = std::max<uint64_t>(1, start.back());
  const auto n = static_cast<uint64_t>(ranks);
  auto owner = [&](uint64_t p) { return static_cast<int>(std::min<uint64_t>(n - 1, static_cast<uint64_t>((static_cast<__uint128_t>(p) * n) / total))); };
  // The first position of rank r: the smallest p with p * N / total >= r.
  auto lo = [&](int r) { return static_cast<uint64_t>((static_cast<__uint128_t>(r) * total + n - 1) / n); };
  std::vector<Share> shares(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    Share& sh = shares[static_cast<size_t>(r)];
    const uint64_t from = lo(r), to = r + 1 == ranks ? UINT64_MAX : lo(r + 1);
    bool any = false;
    for (size_t s = 0; s < sources.size(); ++s) {
      const bool mine = cut[s] ? start[s] < to && start[s + 1] > from : owner(start[s]) == r;
      if (!mine) continue;
      if (!any) {
        sh.first = s;
        sh.begin = cut[s] && start[s] < from ? from - start[s] : 0;
        any = true;
      }
      sh.last = s + 1;
      sh.end = cut[s] && start[s + 1] > to ? to - start[s] : UINT64_MAX;
    }
    if (!any) sh.first = sh.last = r == 0 ? 0 : shares[static_cast<size_t>(r) - 1].last;
  }
  return shares;
}

}  // namespace neardup::mpi
