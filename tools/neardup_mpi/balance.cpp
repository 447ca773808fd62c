// The candidate components spread over the ranks by the text they hold, so that each rank
// verifies about as many bytes as the others.
#include "run.h"

namespace neardup::mpi {

// by_component leaves each component on the rank that read its first document, where most of
// its documents were read. But candidates are not spread like the input: a share with many long
// near-copies (a stretch of licence files, a mirrored tree) holds most of the candidate text,
// and its rank re-read and verified it while the others waited (the crowded mix: 312 MB on one
// of two ranks, 138 MB on the other). Every document is read again by the rank that verifies
// it (fetch), so moving components moves that work. The components, in the order of their
// first documents over all ranks, are cut into runs of equal text, one run per rank: only the
// totals are gathered (one number per rank), each rank sends its own components to the runs
// they fall in, and every rank's components stay in that order.
Buckets Run::balance(Buckets mine) {
  const auto& lists = mine.lists;
  const std::vector<uint64_t>& bytes = mine.text;
  uint64_t here = 0;
  for (const uint64_t b : bytes) here += b;
  uint64_t before = 0;
  MPI_Exscan(&here, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (c_.rank() == 0) before = 0;
  const uint64_t total = std::max<uint64_t>(1, c_.all_reduce(here, MPI_SUM));
  const auto ranks = static_cast<uint64_t>(c_.size());
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  uint64_t at = before;
  for (size_t i = 0, c = 0; i < lists.size(); ++c) {
    // The rank whose run holds the component's middle gets its text and lists.
    const uint64_t middle = at + bytes[c] / 2;
    const auto to = static_cast<size_t>(std::min<uint64_t>(ranks - 1, static_cast<uint64_t>((static_cast<__uint128_t>(middle) * ranks) / total)));
    at += bytes[c];
    size_t j = i + 1;
    while (j < lists.size() && mine.component[j] == mine.component[i]) ++j;
    Packer p;
    p.put(mine.component[i]);
    p.put(bytes[c]);
    p.put(static_cast<uint64_t>(j - i));
    for (; i < j; ++i) p.put_vector(lists[i]);
    out[to] += p.bytes();
  }
  std::vector<std::vector<DocId>>().swap(mine.lists);
  Buckets moved;
  for (const std::string& buf : c_.exchange(std::move(out))) {  // from the ranks in order: components ascending
    Unpacker u(buf);
    while (!u.done()) {
      const auto component = u.get<DocId>();
      moved.text.push_back(u.get<uint64_t>());
      for (auto n = u.get<uint64_t>(); n > 0; --n) {
        moved.component.push_back(component);
        moved.lists.push_back(u.get_vector<DocId>());
      }
    }
  }
  return moved;
}

}  // namespace neardup::mpi
