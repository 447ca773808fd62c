// The outputs: each rank's pieces moved to rank 0 in chunks and appended in input order; the
// kept records of the files each rank read.
#include "run.h"

namespace neardup::mpi {

// --clusters: each member goes to the rank that read its cluster's first document, which numbers
// its clusters after those of the ranks before it (clusters are numbered in the order of their
// first documents) and writes them, members in input order; rank 0 joins the pieces.
void Run::write_clusters(const std::vector<Fate>& fates, io::AtomicFile* out) {
  std::vector<std::string> send(static_cast<size_t>(c_.size()));
  for (const Fate& f : fates) {
    Packer p;
    p.put(f.first);
    p.put(f.doc);
    p.put(static_cast<uint8_t>(f.keeper == f.doc));
    p.put_string(local_.ids[f.doc - local_.base]);
    send[static_cast<size_t>(owner_of(bases_, f.first))] += p.bytes();
  }
  struct Member {
    DocId first, doc;
    bool kept;
    std::string_view id;
  };
  const auto got = c_.exchange(std::move(send));
  std::vector<Member> members;
  for (const std::string& g : got) {
    Unpacker u(g);
    while (!u.done()) {
      Member mb;
      mb.first = u.get<DocId>();
      mb.doc = u.get<DocId>();
      mb.kept = u.get<uint8_t>() != 0;
      mb.id = u.get_string();
      members.push_back(mb);
    }
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.first != b.first ? a.first < b.first : a.doc < b.doc; });
  uint64_t here = 0;
  for (size_t i = 0; i < members.size(); ++i) here += i == 0 || members[i].first != members[i - 1].first;
  uint64_t before = 0;
  MPI_Exscan(&here, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (c_.rank() == 0) before = 0;
  std::unique_ptr<io::AtomicFile> piece;
  const std::string path = piece_path("clusters");
  steps_.agree([&] {
        piece = std::make_unique<io::AtomicFile>(path);
        std::string line;
        uint64_t g = before;
        for (size_t i = 0; i < members.size(); ++i) {
          if (i > 0 && members[i].first != members[i - 1].first) ++g;
          line.assign(std::to_string(g)).push_back('\t');
          line.append(members[i].id).push_back('\t');
          line.append(members[i].kept ? "kept" : "removed").push_back('\n');
          piece->write(line);
        }
      });
  write_piece(path, piece.get(), out);
}

// Pieces of an output travel to rank 0 as chunks of up to kChunkBytes, each piece (or part)
// ended by an empty message.
constexpr size_t kChunkBytes = size_t{32} << 20;

// A send to rank 0 that waits without holding a core (Comm::wait_all): rank 0 takes the chunks
// as it reaches them in input order, which can be long after they are sent.
void send_waiting(const char* data, int n, int tag) {
  MPI_Request q = MPI_REQUEST_NULL;
  MPI_Isend(data, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &q);
  Comm::wait_all(std::span<MPI_Request>(&q, 1));
}

// Sends up to `bytes` of `f` to rank 0 with `tag`, then the empty message; false if the file
// ended first (what was read is sent, and the empty message still ends it).
bool send_chunks(std::FILE* f, uint64_t bytes, int tag, std::string& buf) {
  buf.resize(kChunkBytes);
  bool whole = true;
  for (uint64_t left = bytes; left > 0 && f;) {
    const size_t n = std::fread(buf.data(), 1, static_cast<size_t>(std::min<uint64_t>(left, kChunkBytes)), f);
    if (n == 0) {
      whole = bytes == UINT64_MAX;  // to the end of the file: not short
      break;
    }
    send_waiting(buf.data(), static_cast<int>(n), tag);
    left -= n;
  }
  send_waiting(buf.data(), 0, tag);
  return whole && f;
}

// Rank 0: receives rank r's chunks with `tag` up to the empty message, handing each to `put`
// until one throws; the first error is kept in `failed`, and the chunks after it are received
// and dropped, so that rank r is never left blocked in a send.
void receive_chunks(int r, int tag, std::string& buf, const std::function<void(std::string_view)>& put, std::exception_ptr& failed) {
  buf.resize(kChunkBytes);
  for (;;) {
    MPI_Status st;
    MPI_Probe(r, tag, MPI_COMM_WORLD, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    MPI_Recv(buf.data(), n, MPI_BYTE, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (n == 0) return;
    try {
      if (!failed) put(std::string_view(buf.data(), static_cast<size_t>(n)));
    } catch (...) {
      failed = std::current_exception();
    }
  }
}

// Whether JSONL source s is compressed (read from its decompressed copy, or decompressed).
bool Run::compressed(size_t s) const { return inputs_->read_from_copy(s) || !splittable(inputs_->sources()[s]); }

// -o of JSONL: rank 0 writes every rank's kept records in rank order, each rank's sources in
// order: by copying the ranges a rank sent from the inputs, or, for a source flagged
// `bytes_follow`, by receiving its bytes from that rank, which sends them from its piece
// (`piece`, per source `piece_bytes`; listed for removal on a signal as `piece_slot`), a chunk at
// a time and an empty message after each source.
// Rank 0 keeps receiving after a failed write, so that no rank is left blocked in a send.
void Run::append_kept(const std::vector<std::string>& got, uint64_t bytes_follow, const std::string& piece,
                      const std::vector<uint64_t>& piece_bytes, int piece_slot, io::AtomicFile& final_out) {
  constexpr int kTag = 8;
  std::exception_ptr failed;  // the first error, raised once every byte was received
  std::string buf;
  if (c_.rank() == 0) {
    for (size_t r = 0; r < got.size(); ++r) {
      Unpacker u(got[r]);
      while (!u.done()) {
        const uint64_t word = u.get<uint64_t>();
        const size_t s = static_cast<size_t>(word & ~bytes_follow);
        const bool follow = (word & bytes_follow) != 0;
        std::vector<io::ByteRange> ranges;
        if (!follow) ranges = u.get_vector<io::ByteRange>();
        try {
          if (!follow && !failed) {
            const io::Source& src = inputs_->sources()[s];
            io::append_ranges(src.path, src.display, ranges, final_out, inputs_->read_from_copy(s));
          }
        } catch (...) {
          failed = std::current_exception();
        }
        if (!follow) continue;
        receive_chunks(static_cast<int>(r), kTag, buf, [&](std::string_view chunk) { final_out.write(chunk); }, failed);
      }
    }
  } else if (!piece.empty()) {
    // Each source's bytes end with an empty message, even from a short piece, whose error then
    // fails the run on every rank below.
    std::FILE* f = std::fopen(piece.c_str(), "rb");
    if (!f) failed = std::make_exception_ptr(IoError(piece + ": cannot open a piece of the output"));
    for (const uint64_t bytes : piece_bytes)
      if (!send_chunks(failed ? nullptr : f, bytes, kTag, buf) && !failed)
        failed = std::make_exception_ptr(IoError(piece + ": a piece of the output is shorter than was written"));
    if (f) std::fclose(f);
    std::remove(piece.c_str());
    io::unregister_temporary_file(piece_slot);
  }
  steps_.agree([&] {
    if (failed) std::rethrow_exception(failed);
  });
}

// Rank 0 writes `final_out` (opened before the work): its own piece, then each other rank's in
// rank order, sent over MPI a chunk at a time. Pieces are written to temporary files first.
void Run::write_piece(const std::string& path, io::AtomicFile* piece, io::AtomicFile* final_out) {
  int slot = -1;  // the committed piece, removed on a signal until it is read
  steps_.agree([&] {
        if (piece) piece->commit();
        if (piece) slot = io::register_temporary_file(path);
      });
  std::exception_ptr failed;
  std::string buf;
  if (c_.rank() == 0) {
    try {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw IoError(path + ": cannot open a piece of the output");
      for (uint64_t off = 0;; off += kChunkBytes)
        if (final_out->append_from(fd, off, kChunkBytes, path) < kChunkBytes) break;
      ::close(fd);
    } catch (...) {
      failed = std::current_exception();
    }
    for (int r = 1; r < c_.size(); ++r)
      receive_chunks(r, 7, buf, [&](std::string_view chunk) { final_out->write(chunk); }, failed);
  } else {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    send_chunks(f, UINT64_MAX, 7, buf);
    if (f) std::fclose(f);
  }
  std::remove(path.c_str());
  io::unregister_temporary_file(slot);
  steps_.agree([&] {
    if (failed) std::rethrow_exception(failed);
  });
}

}  // namespace neardup::mpi
