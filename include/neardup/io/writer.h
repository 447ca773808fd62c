// Output files that never leave a half-written file in place and never replace what they should
// write through.
//
// * A regular file (or a new one) is written to a temporary file in the destination's directory,
//   which commit() flushes, syncs and moves over the destination (commit_together: exchanged
//   with an existing file, which is then removed), then syncs the directory so that the move
//   survives a crash. A run with several outputs commits them together: none is moved until all
//   are synced, and one that cannot be moved puts back those moved before it. Where the file system allows it (O_TMPFILE), that file has
//   no name until commit() gives it one just before the rename, so that a process killed while
//   writing (kill -9, the OOM killer) leaves nothing behind. An existing file keeps its mode (and owner, where allowed).
//   A writer destroyed without commit() (an error, an exception) removes its temporary file, so
//   an existing file at the destination is never damaged.
// * A symbolic link is followed: its final target is what is replaced, the link stays a link.
// * Special files (character devices such as /dev/null, FIFOs and process substitutions,
//   sockets, /dev/stdout, /dev/fd/N) are written directly: renaming over them would replace the
//   device or the shell's pipe with a regular file. "-" is standard output.
// * Bytes copied from a file (append_from) into a file of its own on ext4 go to the disk directly
//   (O_DIRECT) from buffers of the writer's own, with every byte written after them; the output
//   is then not in the page cache. Elsewhere they are copied with copy_file_range (a clone where
//   the file system has reflinks). A writer of large copies that come from memory (records
//   decompressed) asks for the same with write_directly().
// * With OutputCompression::ByName, a name ending in .gz or .zst is written compressed (gzip at
//   zlib's default level, zstd at its default level 3); .xz, .bz2 and other compressed names
//   that neardup cannot write are refused, rather than written as plain text under that name.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace neardup::io {

enum class OutputCompression {
  None,    ///< bytes as written, whatever the name (the index's own files)
  ByName,  ///< .gz and .zst names compressed
};

/// The buffers of an output written directly (AtomicFile::append_from on ext4): 4 of 4 MiB.
inline constexpr size_t kDirectBufferBytes = size_t{4} << 20, kDirectBuffers = 4;

class SyncBehind;  // src/io/sync_behind.h

class AtomicFile {
 public:
  /// Opens `path` for writing (see above). Throws IoError if it cannot, UsageError for a
  /// compressed name that cannot be written.
  explicit AtomicFile(const std::string& path, OutputCompression compression = OutputCompression::None);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view data);
  void put(char c);
  /// Finishes the file (the compressed stream ended, flushed, synced) without moving it into
  /// place: commit() or commit_together() does that. Throws IoError (for example on a full disk).
  void finish();
  /// Finishes the file and moves it into place (commit_together of this one file). Throws
  /// IoError (for example on a full disk).
  void commit();
  /// Appends `length` bytes of the file open as `fd` from `offset` (copy_file_range, falling
  /// back to pread); returns how many there were (fewer only at its end). From the first call on,
  /// a file of its own on ext4 (not standard output, a special file or a compressed one) is
  /// written directly to the disk (O_DIRECT) from buffers of its own by two threads, whose
  /// errors the next call, flush_appends() or commit() reports.
  uint64_t append_from(int fd, uint64_t offset, uint64_t length, const std::string& display);
  /// Large writes follow: a file of its own on ext4 is written directly to the disk from here on,
  /// as after append_from(); elsewhere nothing changes.
  void write_directly();
  /// The direct writes take at most `n` buffers and fill `bytes` of each (kDirectBuffers of
  /// kDirectBufferBytes unless set): less for a writer that runs beside a stage at its memory
  /// peak. With n = 0, append_from copies through the page cache (copy_file_range, written
  /// behind) instead of starting direct writes; once raised, the next append_from starts them
  /// where they can be.
  void limit_direct_buffers(size_t n, size_t bytes = kDirectBufferBytes) noexcept;
  /// Waits for the direct writes and frees their buffers (a writer of several outputs in turn
  /// calls it as it leaves one); throws IoError if one failed.
  void flush_appends();
  const std::string& path() const noexcept { return path_; }
  /// Whether the file is in place (committed).
  bool committed() const noexcept { return committed_; }

  /// Whether the output is written in place (standard output or a special file), not renamed.
  bool direct() const noexcept { return direct_; }

 private:
  friend class ScratchCopy;
  friend class OutputCommit;
  // What moving a finished file into place did with the file it replaced (commit_together.cpp).
  enum class Previous : uint8_t {
    None,       ///< there was none: the new file was renamed to the path
    Exchanged,  ///< the two were exchanged: the previous file is at temp_ until drop_previous()
    Replaced,   ///< renamed over it (the file system cannot exchange): the previous file is gone
  };
  void place();
  /// Puts back what place() replaced, where it can; false if the previous file is gone.
  bool unplace() noexcept;
  void drop_previous() noexcept;
  Previous previous_ = Previous::None;
  bool finished_ = false;
  struct Encoder;
  struct Direct;
  std::unique_ptr<SyncBehind> sync_behind_;  ///< a file of its own: synced while it is written
  [[noreturn]] void fail(const char* what);
  void raw_write(const char* data, size_t n);
  void write_behind();
  static constexpr uint64_t kWriteBehind = uint64_t{32} << 20;
  uint64_t written_ = 0;  ///< bytes written so far (to the file: compressed)
  uint64_t synced_ = 0;   ///< bytes whose disk writes were started
  uint64_t clone_block_ = 0;  ///< the output's block for clones (append_from), once looked up
  std::string path_;      ///< as given (for messages)
  std::string target_;    ///< what is replaced: the path with symbolic links followed
  std::string temp_;      ///< the temporary file's name (for an unnamed one: from commit() on)
  std::string temp_template_;  ///< its name with XXXXXX for mkstemp or commit()
  int temp_slot_ = -1;  ///< in the list of temporary files
  std::FILE* f_ = nullptr;
  int fd_ = -1;  ///< f_'s descriptor
  bool direct_ = false;   ///< written in place (stdout, a special file)
  bool stdout_ = false;
  bool committed_ = false;
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Direct> direct_io_;  ///< the direct writes, once append_from or write_directly started them
  bool direct_tried_ = false;
  size_t direct_buffers_ = kDirectBuffers, direct_buffer_bytes_ = kDirectBufferBytes;  ///< limit_direct_buffers
};

/// Moves several outputs into place as one commit: each is finished first (flushed and synced;
/// a failure there leaves every output's previous file untouched), then each is moved into
/// place. An existing file is exchanged with the new one (renameat2 RENAME_EXCHANGE), so that if
/// a later output cannot be moved, those moved before are put back and the error says that no
/// output was replaced; on a file system that cannot exchange, the error names the outputs that
/// were replaced and those that were not. The directories are synced at the end. Null entries
/// are skipped. Throws IoError. The steps one at a time: OutputCommit.
void commit_together(std::span<AtomicFile* const> files);

/// commit_together's steps, for a commit that spans processes (neardup-mpi's ranks each move
/// their own outputs once every rank has finished its own, and put them back if another failed).
class OutputCommit {
 public:
  explicit OutputCommit(std::span<AtomicFile* const> files);
  /// Finishes every file. Throws IoError, leaving every previous file untouched.
  void finish();
  /// Moves every file into place; on a failure, puts back those moved and throws IoError naming
  /// what was replaced and what was not.
  void place();
  /// Puts back the files place() moved (another part of the commit failed); returns the paths
  /// whose previous file could not be put back.
  std::vector<std::string> undo() noexcept;
  /// Lets go of the previous files and syncs the directories: the commit is durable.
  void done() noexcept;

 private:
  std::vector<AtomicFile*> files_, moved_;
};

/// The compression an output name asks for: "gzip", "zstd", "" (none); throws UsageError for a
/// compressed name neardup cannot write (.xz, .bz2, .lz4, .br).
std::string output_compression_of(const std::string& path);

/// A path named on the command line, and what it is for ("input", "--output", "the index").
struct NamedPath {
  std::string path;
  std::string role;
};

/// Refuses (UsageError) before any work an output that is the same file as an input, the index
/// or another output: same device and inode when it exists, the same resolved path otherwise.
/// Symbolic links are followed; "-" is standard output and may be named once. Two outputs on
/// one character device (/dev/null) are allowed: nothing written there can be lost.
void check_outputs(std::span<const NamedPath> inputs, std::span<const NamedPath> outputs);

/// Where temporary files go: `dir` if given, else $TMPDIR, else /tmp.
std::string temp_directory(const std::string& dir = "");
/// The name a descriptor of this process is opened again by: /proc/self/fd/N.
std::string descriptor_path(int fd);
/// A new file without a name in directory `dir` (O_TMPFILE), open for reading and writing and
/// reachable by descriptor_path(), or -1 where the file system cannot make one or /proc is not
/// mounted. Nothing is left of it when its last descriptor closes, however the process ends.
int open_unnamed(const std::string& dir);

/// Temporary files (AtomicFile's, the spooled copy of stdin) are listed while they exist, so
/// that a signal handler can remove them: remove_temporary_files() is async-signal-safe (it only
/// reads the list and calls unlink). Up to 128 files at a time are listed.
void remove_temporary_files() noexcept;
/// Lists `path`; returns its slot, or -1 if the list is full or the path too long.
int register_temporary_file(const std::string& path) noexcept;
/// Takes a slot off the list (-1: nothing).
void unregister_temporary_file(int slot) noexcept;

class ByteStream;
class DirectReader;

/// A temporary file without a name (O_TMPFILE) on ext4, written directly to the disk (O_DIRECT)
/// from buffers of its own while it is filled, and read again by the name /proc/self/fd/N: the
/// first pass keeps a compressed input's decompressed bytes in one, so that later passes read
/// its records by position rather than decompressing it again. It takes no page cache while
/// written, and it goes with the process, whatever ends it (kill -9 included).
class ScratchCopy {
 public:
  /// In directory `dir`, to keep at least `keep_free` bytes free on its file system (0: the
  /// larger of 1 GiB and 5% of it). Null where none can be made there: no O_TMPFILE, not ext4
  /// (a tmpfs would hold it in memory), /proc not mounted, or less free space than that.
  static std::unique_ptr<ScratchCopy> create(const std::string& dir, uint64_t keep_free = 0);
  /// Why create() gave none in `dir`, for messages.
  static std::string unavailable(const std::string& dir);
  ~ScratchCopy();
  ScratchCopy(const ScratchCopy&) = delete;
  ScratchCopy& operator=(const ScratchCopy&) = delete;
  /// Appends n bytes. False once the copy is given up (a failed write, or free space down to
  /// the reserve): it then takes no more bytes, and why() says why.
  bool append(const char* p, size_t n) noexcept;
  /// Writes what is left and cuts the file to its length; false if the copy was given up.
  bool finish() noexcept;
  uint64_t size() const noexcept { return size_; }
  /// The name to open it by (/proc/self/fd/N), valid while this object lives.
  const std::string& path() const noexcept { return path_; }
  /// Why the copy was given up (empty if it was not).
  const std::string& why() const noexcept { return why_; }

 private:
  ScratchCopy() = default;
  void give_up(std::string why) noexcept;
  int fd_ = -1;
  std::string path_, dir_, why_;
  std::unique_ptr<AtomicFile::Direct> direct_;
  uint64_t size_ = 0, keep_free_ = 0, checked_at_ = 0;
  bool finished_ = false;
};

/// A byte range of a source's decompressed data.
struct ByteRange {
  uint64_t offset = 0, length = 0;
};

/// Appends the byte ranges `ranges` (increasing, not overlapping) of source `path`'s decompressed
/// data (named `display` in errors) to `out`: a plain file by AtomicFile::append_from (written
/// directly on ext4, copy_file_range elsewhere), a compressed one decompressed once, skipping the
/// gaps. If the data ends exactly one byte short of a range, a newline is written in its place (a
/// last line without one); any range after it, or data ending earlier, throws IoError naming the
/// source (the input changed). With `read_directly`, a plain file not in the page cache (a
/// ScratchCopy) is read with O_DIRECT where the system allows it.
void append_ranges(const std::string& path, const std::string& display, std::span<const ByteRange> ranges, AtomicFile& out,
                   bool read_directly = false);

}  // namespace neardup::io
