// The candidate components spread over the ranks by the text they hold, so that each rank
// verifies about as many bytes as the others.
#include "run.h"

namespace neardup::mpi {

// The distinct documents of `lists`, ascending, and their text lengths from the ranks that read
// them (what balance() and group_ends() weigh components and groups by).
Run::MemberLengths Run::member_lengths(const std::vector<std::vector<DocId>>& lists) {
  MemberLengths ml;
  for (const auto& b : lists) ml.members.insert(ml.members.end(), b.begin(), b.end());
  std::sort(ml.members.begin(), ml.members.end());
  ml.members.erase(std::unique(ml.members.begin(), ml.members.end()), ml.members.end());
  std::vector<std::string> storage;
  auto told = ask_owners(ml.members, [&](std::span<const DocId> want, Packer& p) {
    for (const DocId d : want) p.put(local_.lengths[d - local_.base]);
  }, storage);
  ml.length.resize(ml.members.size());
  for (size_t i = 0; i < ml.members.size(); ++i) ml.length[i] = told[static_cast<size_t>(owner_of(bases_, ml.members[i]))].get<uint32_t>();
  return ml;
}

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
  const MemberLengths ml = member_lengths(lists);
  const std::vector<DocId>& members = ml.members;
  const std::vector<uint32_t>& length = ml.length;
  // Each component's text: its distinct documents' lengths (+1, so that empty texts count).
  std::vector<uint64_t> bytes;  // per component, in order
  std::vector<size_t> starts;   // each component's first list
  std::vector<uint32_t> counted(members.size(), UINT32_MAX);  // the last component that counted a member
  for (size_t i = 0; i < lists.size(); ++i) {
    if (i == 0 || mine.component[i] != mine.component[i - 1]) {
      starts.push_back(i);
      bytes.push_back(0);
    }
    const auto c = static_cast<uint32_t>(bytes.size() - 1);
    for (const DocId d : lists[i]) {
      const size_t m = place_in(members, d);
      if (counted[m] != c) bytes.back() += uint64_t{length[m]} + 1;
      counted[m] = c;
    }
  }
  uint64_t here = 0;
  for (const uint64_t b : bytes) here += b;
  uint64_t before = 0;
  MPI_Exscan(&here, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (c_.rank() == 0) before = 0;
  const uint64_t total = std::max<uint64_t>(1, c_.all_reduce(here, MPI_SUM));
  const auto ranks = static_cast<uint64_t>(c_.size());
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  starts.push_back(lists.size());
  uint64_t at = before;
  for (size_t c = 0; c + 1 < starts.size(); ++c) {
    // The rank whose run holds the component's middle.
    const uint64_t middle = at + bytes[c] / 2;
    const auto to = static_cast<size_t>(std::min<uint64_t>(ranks - 1, static_cast<uint64_t>((static_cast<__uint128_t>(middle) * ranks) / total)));
    at += bytes[c];
    Packer p;
    for (size_t i = starts[c]; i < starts[c + 1]; ++i) {
      p.put(mine.component[i]);
      p.put_vector(lists[i]);
    }
    out[to] += p.bytes();
  }
  std::vector<std::vector<DocId>>().swap(mine.lists);
  Buckets moved;
  for (const std::string& buf : c_.exchange(std::move(out))) {  // from the ranks in order: components ascending
    Unpacker u(buf);
    while (!u.done()) {
      moved.component.push_back(u.get<DocId>());
      moved.lists.push_back(u.get_vector<DocId>());
    }
  }
  return moved;
}

}  // namespace neardup::mpi
