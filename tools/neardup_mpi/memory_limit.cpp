// A rank's memory under a limit: whether it keeps its band keys on disk, and how large the
// shuffle's rounds are.
#include "run.h"

#include <sys/statvfs.h>

namespace neardup::mpi {

// The limit is each rank's: --memory-limit, or by default a share of the memory available (as
// one process takes it: default_memory_limit()) split between the ranks of the node. A rank keeps
// per document its band keys (8 bytes per band; with estimated verification its signature
// instead), and its id, text length and record position (about 80 bytes besides the id); the
// shuffle holds what it sends, receives and sorts, three rounds of entries of 16 bytes; the
// program and its reading buffers take about 28 MiB per thread (Pipeline::buffer_bytes). A rank
// expected over the limit writes its band keys to the temporary folder during the first pass
// (the largest part of its state, as one process does under a limit: RunTuning::spill_band_keys)
// and reads them back a band at a time for the shuffle, and the shuffle's rounds shrink to an
// eighth of the limit. A rank's documents are estimated from a sample of the inputs' first bytes
// (the shares are cut by bytes); every rank decides alike.
void Run::choose_spill() {
  const uint64_t limit = o_.memory_limit > 0 ? o_.memory_limit : default_memory_limit() / static_cast<uint64_t>(ranks_on_this_node());
  if (limit == 0) return;
  const io::InputSample in = io::sample_inputs(*inputs_, ro_.reader, uint64_t{4} << 20, [](std::string_view, std::string_view) {});
  const double docs = in.records / c_.size();
  const bool exact = spec_.verify == VerifyMode::Exact;
  const double bands = spec_.lsh.bands, keys = exact ? 8.0 * bands : sizeof(SigValue) * static_cast<double>(spec_.num_perm);
  const double ids = in.records > 0 ? in.id_bytes / in.records : 0;
  const double rounds = 3.0 * std::min(static_cast<double>(round_bytes_), docs * 16.0 * bands);
  const double expected = 10.0 * (1 << 20) + 28.0 * (1 << 20) * threads_ + docs * (keys + 80.0 + ids) + rounds;
  round_bytes_ = std::clamp<uint64_t>(limit / 8, uint64_t{4} << 20, uint64_t{64} << 20);
  const bool spill = exact && expected > static_cast<double>(limit);
  spill_keys_ = c_.all_reduce(static_cast<int>(spill), MPI_MAX) != 0;
  if (!spill_keys_) return;
  const std::string dir = io::temp_directory();
  struct statvfs fs {};
  const double need = docs * keys * ranks_on_this_node();
  if (::statvfs(dir.c_str(), &fs) == 0 && static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) < need)
    throw IoError("the ranks' expected memory is over the memory limit, and their band keys need " + std::to_string(static_cast<uint64_t>(need / 1e6)) +
                  " MB free in " + dir + ", which has less; set TMPDIR to a directory on a larger disk, or raise --memory-limit");
  if (c_.rank() == 0 && !o_.quiet)
    std::fprintf(stderr,
                 "neardup: about %.0f documents a rank, expected memory %.1f MB a rank, over the memory limit of %.1f MB: the ranks keep "
                 "their band keys on disk in %s (about %.1f MB a rank)\n",
                 docs, expected / 1e6, static_cast<double>(limit) / 1e6, dir.c_str(), docs * keys / 1e6);
}

}  // namespace neardup::mpi
