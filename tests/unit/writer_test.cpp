// The outputs (io/writer.h): atomic files and their temporary files, refused output paths, byte
// ranges copied from inputs (plain and compressed, in the kernel or read directly), scratch copies
// and direct writes.
#include "neardup/io/writer.h"
#include "io/range_appender.h"
#include "io/sync_behind.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "internal/spilled_columns.h"
#include "internal/testing.h"
#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/io/stream.h"
#include "neardup/io/tsv.h"
#include "test_util.h"

using namespace neardup;
using namespace neardup::io;

namespace {
size_t files_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}
}  // namespace

TEST(AtomicFile, CommitReplacesTheFile) {
  test::TempDir d;
  test::write_file(d.file("out.txt"), "old");
  {
    io::AtomicFile f(d.file("out.txt"));
    f.write("new ");
    f.put('!');
    EXPECT_EQ(test::read_file(d.file("out.txt")), "old");  // untouched until commit
    f.commit();
  }
  EXPECT_EQ(test::read_file(d.file("out.txt")), "new !");
  EXPECT_EQ(files_in(d.path()), 1u);
}

TEST(AtomicFile, WithoutCommitNothingChangesAndNoTempIsLeft) {
  test::TempDir d;
  test::write_file(d.file("out.txt"), "old");
  {
    io::AtomicFile f(d.file("out.txt"));
    f.write("partial");
  }
  EXPECT_EQ(test::read_file(d.file("out.txt")), "old");
  EXPECT_EQ(files_in(d.path()), 1u);
}

// A process killed while it writes an output (kill -9, the OOM killer: no handler runs) leaves
// nothing behind where the file system makes files without a name (O_TMPFILE): the output is
// named only by commit(). Half a direct write's buffers and 2 MiB through stdio were on disk.
TEST(AtomicFile, KilledWhileWritingLeavesNothing) {
  test::TempDir d;
  const int probe = io::open_unnamed(d.path());
  if (probe < 0) GTEST_SKIP() << "no O_TMPFILE in " << d.path();
  ::close(probe);
  test::write_file(d.file("out.txt"), "old");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    io::AtomicFile f(d.file("out.txt"));
    f.write(std::string(2 << 20, 'a'));
    f.write_directly();
    f.write(std::string(6 << 20, 'b'));
    f.flush_appends();
    ::kill(::getpid(), SIGKILL);
    std::_Exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(test::read_file(d.file("out.txt")), "old");
  EXPECT_EQ(files_in(d.path()), 1u);
}

TEST(AtomicFile, MissingDirectoryIsAnIoError) {
  test::TempDir d;
  EXPECT_THROW(io::AtomicFile(d.file("no/such/dir/out.txt")), IoError);
}

// A symbolic link is written through: its target is replaced, the link stays a link.
TEST(AtomicFile, SymlinkIsWrittenThrough) {
  test::TempDir d;
  test::write_file(d.file("target.txt"), "old");
  std::filesystem::create_symlink("target.txt", d.file("link.txt"));
  io::AtomicFile f(d.file("link.txt"));
  f.write("new");
  f.commit();
  EXPECT_TRUE(std::filesystem::is_symlink(d.file("link.txt")));
  EXPECT_EQ(test::read_file(d.file("target.txt")), "new");
}

// An existing file keeps its permissions.
TEST(AtomicFile, ExistingFileKeepsItsMode) {
  test::TempDir d;
  for (const auto mode : {std::filesystem::perms(0444), std::filesystem::perms(0600), std::filesystem::perms(0640)}) {
    test::write_file(d.file("out.txt"), "old");
    std::filesystem::permissions(d.file("out.txt"), mode);
    io::AtomicFile f(d.file("out.txt"));
    f.write("new");
    f.commit();
    EXPECT_EQ(std::filesystem::status(d.file("out.txt")).permissions(), mode);
    EXPECT_EQ(test::read_file(d.file("out.txt")), "new");
    std::filesystem::permissions(d.file("out.txt"), std::filesystem::perms(0644));
  }
}

// Special files are written in place: /dev/null stays a character device, a FIFO a FIFO.
TEST(AtomicFile, SpecialFilesAreWrittenInPlace) {
  {
    io::AtomicFile f("/dev/null");
    EXPECT_TRUE(f.direct());
    f.write("nothing");
    f.commit();
  }
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  test::TempDir d;
  const std::string fifo = d.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = test::read_file(fifo); });
  {
    io::AtomicFile f(fifo);
    f.write("through the pipe");
    f.commit();
  }
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
}

// .gz and .zst names are compressed when asked; names neardup cannot write are refused.
TEST(AtomicFile, CompressedByName) {
  test::TempDir d;
  std::string data;
  for (int i = 0; i < 20000; ++i) data += "line " + std::to_string(i) + "\n";
  for (const std::string name : {"out.jsonl.gz", "out.jsonl.zst"}) {
    io::AtomicFile f(d.file(name), io::OutputCompression::ByName);
    f.write(data.substr(0, 1000));
    f.put('\n');
    f.write(data.substr(1000));
    f.commit();
    EXPECT_LT(std::filesystem::file_size(d.file(name)), data.size() / 3) << name;
    EXPECT_EQ(io::read_all(d.file(name), name), data.substr(0, 1000) + "\n" + data.substr(1000)) << name;
  }
  EXPECT_THROW(io::AtomicFile(d.file("out.jsonl.xz"), io::OutputCompression::ByName), UsageError);
  io::AtomicFile plain(d.file("index.gz"));  // OutputCompression::None: bytes as written
  plain.write("raw");
  plain.commit();
  EXPECT_EQ(test::read_file(d.file("index.gz")), "raw");
}

// An output that is an input, the same file as another output (also through a link or a hard
// link), or standard output twice is refused; two outputs on /dev/null are fine.
TEST(CheckOutputs, RefusesOutputsThatAreInputsOrEachOther) {
  test::TempDir d;
  test::write_file(d.file("in.jsonl"), "{}\n");
  std::filesystem::create_symlink("in.jsonl", d.file("link.jsonl"));
  std::filesystem::create_hard_link(d.file("in.jsonl"), d.file("hard.jsonl"));
  const std::vector<io::NamedPath> in = {{d.file("in.jsonl"), "the input"}};
  auto check = [&](std::vector<io::NamedPath> outs) { io::check_outputs(in, outs); };
  EXPECT_THROW(check({{d.file("in.jsonl"), "--output"}}), UsageError);
  EXPECT_THROW(check({{d.file("link.jsonl"), "--output"}}), UsageError);
  EXPECT_THROW(check({{d.file("hard.jsonl"), "--removed"}}), UsageError);
  EXPECT_THROW(check({{d.file("x"), "--output"}, {d.file("x"), "--removed"}}), UsageError);
  EXPECT_THROW(check({{d.file("x"), "--output"}, {d.path() + "/./x", "--removed"}}), UsageError);
  EXPECT_THROW(check({{"-", "--output"}, {"-", "--removed"}}), UsageError);
  EXPECT_NO_THROW(check({{"/dev/null", "--output"}, {"/dev/null", "--removed"}}));
  EXPECT_NO_THROW(check({{d.file("x"), "--output"}, {d.file("y"), "--removed"}}));
}

// ---- Copying ranges, scratch copies and direct writes ----

// append_ranges copies byte ranges of plain (in the kernel) and compressed data, and adds the
// newline of a last line that had none; RangeAppender does the same a batch at a time.
TEST(Writer, AppendRangesCopiesPlainAndCompressedData) {
  test::TempDir d;
  std::string data;
  for (int i = 0; i < 20000; ++i) data += "line " + std::to_string(i) + "\n";
  data += "last line without newline";
  test::write_file(d.file("p.txt"), data);
  test::write_file(d.file("g.gz"), test::gzip(data));
  test::write_file(d.file("z.zst"), test::zstd(data));
  const std::vector<ByteRange> ranges = {{0, 5}, {100, 1000}, {1100, 7}, {50000, 60000}, {data.size() - 25, 26}};
  std::string want;
  for (const auto& r : ranges) want += data.substr(r.offset, r.length);  // the last one is 1 byte short
  want += '\n';
  for (const std::string f : {"p.txt", "g.gz", "z.zst"}) {
    {
      AtomicFile out(d.file(f + ".out"));
      out.write("head:");
      append_ranges(d.file(f), f, ranges, out);
      out.write(":tail");
      out.commit();
    }
    const std::string got = test::read_file(d.file(f + ".out"));
    EXPECT_TRUE(got == "head:" + want + ":tail") << f << ": " << got.size() << " bytes, want " << want.size() + 10;
    AtomicFile out(d.file(f + ".bad"));
    const std::vector<ByteRange> past = {{data.size() - 5, 10}};
    EXPECT_THROW(append_ranges(d.file(f), f, past, out), IoError) << f;
    // A batch at a time, from one appender: the same bytes (a compressed source goes on from
    // where the last batch stopped).
    {
      AtomicFile batches(d.file(f + ".batches"));
      RangeAppender appender(d.file(f), f);
      for (const ByteRange& r : ranges) appender.append(std::span<const ByteRange>(&r, 1), batches);
      batches.commit();
    }
    EXPECT_TRUE(test::read_file(d.file(f + ".batches")) == want) << f;
    // A range after the short last line: the data ended, the input changed.
    AtomicFile after(d.file(f + ".after"));
    RangeAppender appender(d.file(f), f);
    appender.append(std::span<const ByteRange>(&ranges.back(), 1), after);
    const std::vector<ByteRange> beyond = {{data.size() + 1, 4}};
    EXPECT_THROW(appender.append(beyond, after), IoError) << f;
    // Out of order across batches: a programming error.
    RangeAppender backwards(d.file(f), f);
    backwards.append(std::span<const ByteRange>(&ranges[1], 1), after);
    EXPECT_THROW(backwards.append(std::span<const ByteRange>(&ranges[0], 1), after), UsageError) << f;
  }
}

// The kept lines of a plain file, most of them short and a few removed between them (read a
// window at a time, gaps and all), some long or far apart (copied one by one): the same bytes,
// in one batch or many, with the newline of a last line that had none inside a window; a window
// whose file ends before its last range fails as the input changed.
TEST(Writer, RangeAppenderCopiesWindowsOfShortLines) {
  test::TempDir d;
  std::mt19937_64 rng(62);
  std::string data;
  std::vector<RecordPos> lines;
  while (data.size() < (3u << 20)) {
    const size_t len = rng() % 50 == 0 ? 17000 + rng() % 9000 : rng() % 10 == 0 ? 5000 : 1 + rng() % 400;
    lines.push_back({0, static_cast<uint32_t>(len), data.size()});
    data += std::string(len, static_cast<char>('a' + rng() % 26)) + "\n";
  }
  lines.push_back({0, 10, data.size()});
  data += "no newline";
  test::write_file(d.file("p.txt"), data);
  std::vector<ByteRange> ranges;
  std::string want;
  for (const RecordPos& p : lines)
    if (&p == &lines.back() || rng() % 10 < 7) {
      add_record_line(ranges, p);
      want += data.substr(p.offset, p.length) + "\n";
    }
  for (const size_t batch : {ranges.size(), size_t{1}, size_t{37}}) {
    {
      AtomicFile out(d.file("out"));
      RangeAppender appender(d.file("p.txt"), "p.txt");
      for (size_t i = 0; i < ranges.size(); i += batch)
        appender.append(std::span<const ByteRange>(ranges).subspan(i, std::min(batch, ranges.size() - i)), out);
      out.commit();
    }
    EXPECT_TRUE(test::read_file(d.file("out")) == want) << "batches of " << batch;
  }
  const uint64_t end = data.size();
  const std::vector<ByteRange> past = {{end - 300, 100}, {end - 150, 50}, {end - 50, 60}};
  AtomicFile bad(d.file("bad"));
  RangeAppender appender(d.file("p.txt"), "p.txt");
  EXPECT_THROW(appender.append(past, bad), IoError);
}

// A plain file read with O_DIRECT (RangeAppender's read_directly, for a ScratchCopy): the same
// bytes as through the page cache, for ranges within, across and after its 4 MiB reads, the
// newline of a last line that had none, and an error for a range past the end. Read directly,
// the file's pages stay out of the page cache; read through it, they come in.
TEST(Writer, RangeAppenderReadsDirectlyTheSameBytes) {
  test::TempDir d;
  std::mt19937_64 rng(61);
  std::string data;
  while (data.size() < (13u << 20)) data += std::string(1 + rng() % 3000, static_cast<char>('a' + rng() % 26)) + "\n";
  data += "no newline";
  test::write_file(d.file("p.txt"), data);
  const uint64_t four = uint64_t{4} << 20;
  const std::vector<ByteRange> ranges = {{3, 5000}, {four - 10, 20}, {four + 100, four + 7}, {3 * four - 1, 2}, {3 * four + 4096, 8192},
                                         {data.size() - 10, 11}};
  std::string want;
  for (const auto& r : ranges) want += data.substr(r.offset, r.length);
  want += '\n';
  const int fd = ::open(d.file("p.txt").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const bool dropped = test::cached_pages(fd, 0, four) == 0;  // the page cache let go of the file
  for (const bool direct : {true, false}) {
    {
      AtomicFile out(d.file("out"));
      RangeAppender appender(d.file("p.txt"), "p.txt", direct);
      for (const ByteRange& r : ranges) appender.append(std::span<const ByteRange>(&r, 1), out);
      out.commit();
    }
    EXPECT_TRUE(test::read_file(d.file("out")) == want) << "read directly: " << direct;
    if (dropped) {
      if (direct)
        EXPECT_EQ(test::cached_pages(fd, 0, four), 0u) << "read through the page cache";
      else
        EXPECT_GT(test::cached_pages(fd, 0, four), 0u);
    }
    AtomicFile bad(d.file("bad"));
    RangeAppender appender(d.file("p.txt"), "p.txt", direct);
    const std::vector<ByteRange> past = {{data.size() - 5, 10}};
    EXPECT_THROW(appender.append(past, bad), IoError) << "read directly: " << direct;
  }
  ::close(fd);
}

// A ScratchCopy holds what was appended, under no name in its directory, and one given up (the
// free space below its reserve) takes no more and holds nothing.
TEST(Writer, ScratchCopyHoldsWhatWasAppended) {
  test::TempDir d;
  auto c = ScratchCopy::create(d.path());
  if (!c) GTEST_SKIP() << "no scratch copies in " << d.path() << " (not ext4)";
  std::mt19937_64 rng(62);
  std::string data;
  for (size_t n : {size_t{1}, size_t{4095}, size_t{3} << 20, size_t{5} << 20, size_t{12345}}) {
    const size_t at = data.size();
    data.resize(at + n);
    for (size_t i = at; i < data.size(); ++i) data[i] = static_cast<char>(rng());
    EXPECT_TRUE(c->append(data.data() + at, n));
  }
  EXPECT_TRUE(c->finish());
  EXPECT_EQ(c->size(), data.size());
  EXPECT_TRUE(test::read_file(c->path()) == data);
  EXPECT_TRUE(std::filesystem::is_empty(d.path()));  // no name
  const std::string path = c->path();
  struct statfs fs {};
  ASSERT_EQ(::statfs(d.path().c_str(), &fs), 0);
  auto full = ScratchCopy::create(d.path(), uint64_t{fs.f_bavail} * static_cast<uint64_t>(fs.f_bsize) - (uint64_t{32} << 20));
  ASSERT_TRUE(full);
  EXPECT_FALSE(full->append(data.data(), 100));
  EXPECT_NE(full->why().find("free space in " + d.path()), std::string::npos) << full->why();
  EXPECT_FALSE(full->append(data.data(), 100));
  EXPECT_FALSE(full->finish());
  struct stat st {};
  ASSERT_EQ(::stat(full->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_FALSE(ScratchCopy::create(d.path(), uint64_t{1} << 62));  // no room for any
}

// append_from splits a copy at the next block boundary where the input's and the output's offsets
// are congruent but not aligned (so that a file system with reflinks can clone the rest): the
// bytes are the same however the ranges fall, congruent or not, within a block or across many.
TEST(Writer, AppendFromCopiesTheSameBytesWhereverTheRangesFall) {
  test::TempDir d;
  std::mt19937_64 rng(41);
  std::string data(300000, '\0');
  for (char& c : data) c = static_cast<char>('a' + rng() % 26);
  test::write_file(d.file("in.txt"), data);
  const int fd = ::open(d.file("in.txt").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (int round = 0; round < 4; ++round) {
    std::string want;
    {
      AtomicFile out(d.file("out.txt"));
      if (round % 2) {  // the output one byte ahead of the input: never congruent
        out.write("#");
        want += "#";
      }
      uint64_t at = 0;
      while (at < data.size()) {
        const uint64_t len = std::min<uint64_t>(data.size() - at, 1 + rng() % (round < 2 ? 9000 : 70));
        EXPECT_EQ(out.append_from(fd, at, len, "in.txt"), len);
        want += data.substr(at, len);
        at += len + (round == 3 && rng() % 4 == 0 ? 1 + rng() % 5000 : 0);  // gaps: removed records
      }
      out.commit();
    }
    EXPECT_TRUE(test::read_file(d.file("out.txt")) == want) << "round " << round;
  }
  ::close(fd);
}

// The output `name` in `d` holds `want`, and on ext4 was written directly: before it is read,
// under a tenth of its pages are in the page cache.
void expect_written_directly(const test::TempDir& d, const std::string& name, const std::string& want) {
  struct statfs fs {};
  if (::statfs(d.path().c_str(), &fs) == 0 && fs.f_type == 0xEF53) {
    const int fd = ::open(d.file(name).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const uint64_t size = static_cast<uint64_t>(::lseek(fd, 0, SEEK_END));
    EXPECT_LT(test::cached_pages(fd, 0, size & ~uint64_t{4095}), size / 4096 / 10) << name << " written through the page cache";
    ::close(fd);
  }
  const std::string got = test::read_file(d.file(name));
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << name << " differs";
}

// Into a file of its own on ext4, append_from's bytes and all written after them go to the disk
// directly from buffers of its own: the output is the same as writing in order when copies of
// many megabytes (more than its buffers hold) from several inputs, each closed at once, are
// mixed with written bytes, started after written bytes that end inside a block, and paused
// (flush_appends) and resumed; the copied output is not in the page cache. Elsewhere the same
// bytes come by copy_file_range.
TEST(Writer, AppendFromWrittenDirectlyGivesTheBytesInOrder) {
  test::TempDir d;
  std::mt19937_64 rng(43);
  std::vector<std::string> data(3);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i].resize((size_t{9} << 20) + 12345 * i);
    for (char& c : data[i]) c = static_cast<char>('a' + rng() % 26);
    test::write_file(d.file("in" + std::to_string(i)), data[i]);
  }
  for (const bool head : {false, true}) {
    std::string want = head ? std::string(5000, '#') : "";
    {
      AtomicFile out(d.file("out.txt"));
      out.write(want);
      for (int round = 0; round < 40; ++round) {
        const size_t i = rng() % data.size();
        const int fd = ::open(d.file("in" + std::to_string(i)).c_str(), O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        const uint64_t at = rng() % data[i].size(), len = 1 + rng() % (round % 3 == 0 ? (uint64_t{6} << 20) : 5000);
        const uint64_t got = std::min<uint64_t>(len, data[i].size() - at);
        EXPECT_EQ(out.append_from(fd, at, len, "in"), got);  // past the end: short, as a read
        ::close(fd);
        want += data[i].substr(at, got);
        if (rng() % 2) {
          const std::string line = "line " + std::to_string(round);
          out.write(line);
          out.put('\n');
          want += line + "\n";
        }
        if (round == 20) out.flush_appends();
      }
      out.commit();
    }
    SCOPED_TRACE(head ? "after written bytes" : "from the start");
    expect_written_directly(d, "out.txt", want);
  }
}

// limit_direct_buffers: with fewer and smaller buffers (down to one block each) the direct
// writes give the same bytes; with none, append_from copies through the page cache (the output
// is then in it), and once the limit is raised the copies after it are written directly.
TEST(Writer, LimitedDirectBuffersGiveTheSameBytes) {
  test::TempDir d;
  std::mt19937_64 rng(45);
  std::string data((size_t{5} << 20) + 777, ' ');
  for (char& c : data) c = static_cast<char>('a' + rng() % 26);
  test::write_file(d.file("in"), data);
  struct Limit {
    size_t buffers, bytes;
  };
  for (const Limit limit : {Limit{2, size_t{2} << 20}, Limit{1, 4096}, Limit{3, 10000}}) {
    std::string want = "head";
    {
      AtomicFile out(d.file("out.txt"));
      out.limit_direct_buffers(limit.buffers, limit.bytes);
      out.write(want);
      const int fd = ::open(d.file("in").c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      for (int round = 0; round < 12; ++round) {
        const uint64_t at = rng() % data.size(), len = 1 + rng() % (round % 2 ? 5000 : (uint64_t{3} << 20));
        const uint64_t got = std::min<uint64_t>(len, data.size() - at);
        EXPECT_EQ(out.append_from(fd, at, len, "in"), got);
        want += data.substr(at, got);
      }
      ::close(fd);
      out.commit();
    }
    SCOPED_TRACE(std::to_string(limit.buffers) + " buffers of " + std::to_string(limit.bytes) + " bytes");
    expect_written_directly(d, "out.txt", want);
  }
  struct statfs fs {};
  const bool ext4 = ::statfs(d.path().c_str(), &fs) == 0 && fs.f_type == 0xEF53;
  {
    AtomicFile out(d.file("held.txt"));
    out.limit_direct_buffers(0);
    const int fd = ::open(d.file("in").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(out.append_from(fd, 0, data.size(), "in"), data.size());
    out.commit();
    const int held = ::open(d.file("held.txt").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(held, 0);
    if (ext4) {
      EXPECT_GT(test::cached_pages(held, 0, data.size() & ~uint64_t{4095}), data.size() / 4096 / 2) << "not through the page cache";
    }
    ::close(held);
    ::close(fd);
  }
  EXPECT_TRUE(test::read_file(d.file("held.txt")) == data);
  {
    AtomicFile out(d.file("raised.txt"));
    out.limit_direct_buffers(0);
    const int fd = ::open(d.file("in").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(out.append_from(fd, 0, 10000, "in"), 10000u);
    out.limit_direct_buffers(2);
    EXPECT_EQ(out.append_from(fd, 10000, data.size(), "in"), data.size() - 10000);
    ::close(fd);
    out.commit();
  }
  expect_written_directly(d, "raised.txt", data);
}

// write_directly() starts the direct writes for bytes written from memory (records decompressed):
// after bytes written through the page cache that end inside a block, writes of every size (more
// than the buffers hold in all) give the output of writing in order, not in the page cache on
// ext4; paused (flush_appends) and resumed; elsewhere the same bytes as before.
TEST(Writer, WriteDirectlyGivesTheBytesInOrder) {
  test::TempDir d;
  std::mt19937_64 rng(44);
  std::string want(4097, '#');
  {
    AtomicFile out(d.file("out.txt"));
    out.write(want);
    out.write_directly();
    std::string chunk;
    for (int round = 0; round < 60; ++round) {
      chunk.resize(1 + rng() % (round % 4 == 0 ? (size_t{3} << 20) : 70000));
      for (char& c : chunk) c = static_cast<char>('a' + rng() % 26);
      out.write(chunk);
      out.put('\n');
      want += chunk + "\n";
      if (round == 30) out.flush_appends();
    }
    out.commit();
  }
  expect_written_directly(d, "out.txt", want);
}

// The exit code of attempt() run in a child process whose files may not exceed 1 MiB (writes
// past it fail with EFBIG; SIGXFSZ ignored); 4 if the limit cannot be set.
namespace {
int exit_code_under_a_file_size_limit(const std::function<int()>& attempt) {
  const pid_t pid = ::fork();  // the limit and the signal's disposition in a child process
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {1 << 20, 1 << 20};
    ::_exit(::setrlimit(RLIMIT_FSIZE, &lim) != 0 ? 4 : attempt());
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}
}  // namespace

// A failed direct write is reported by the next call, flush_appends() or commit() as the
// output's error, with what to do, and the destination is left as it was; an input that cannot
// be read is reported at once, by its name.
TEST(Writer, AppendFromWrittenDirectlyReportsAFailedWrite) {
  test::TempDir d;
  test::write_file(d.file("dest.txt"), "before\n");
  test::write_file(d.file("in.txt"), std::string(size_t{12} << 20, 'x'));
  const auto attempt = [&] {
    try {
      AtomicFile out(d.file("dest.txt"));
      const int fd = ::open(d.file("in.txt").c_str(), O_RDONLY | O_CLOEXEC);
      out.append_from(fd, 0, size_t{12} << 20, "in.txt");
      ::close(fd);
      out.commit();
    } catch (const IoError& e) {
      return std::string(e.what()).find("file size limit") != std::string::npos ? 0 : 2;
    } catch (...) {
      return 3;
    }
    return 1;
  };
  EXPECT_EQ(exit_code_under_a_file_size_limit(attempt), 0) << "1: no error, 2: wrong message, 3: wrong type, 4: no limit";
  EXPECT_EQ(test::read_file(d.file("dest.txt")), "before\n");
  {
    AtomicFile out(d.file("dest.txt"));
    const int fd = ::open(d.file("in.txt").c_str(), O_WRONLY | O_CLOEXEC);  // cannot be read
    ASSERT_GE(fd, 0);
    try {
      out.append_from(fd, 0, 100000, "in.txt");
      ADD_FAILURE() << "append_from succeeded";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("in.txt"), std::string::npos) << e.what();
    }
    ::close(fd);
  }
  EXPECT_EQ(test::read_file(d.file("dest.txt")), "before\n");
  size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) left += e.path().filename().string().find("neardup-tmp") != std::string::npos;
  EXPECT_EQ(left, 0u);
}

// A sync counted (and failed, when fail_with is set) in place of fdatasync.
namespace {
std::atomic<int> syncs{0}, synced_fd{-1}, fail_with{0};
int fake_sync(int fd) {
  synced_fd = fd;
  ++syncs;
  if (fail_with != 0) {
    errno = fail_with;
    return -1;
  }
  return 0;
}
// Waits up to 10 s for the fake to have synced `n` times.
bool synced(int n) {
  for (int i = 0; i < 1000 && syncs < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return syncs >= n;
}
}  // namespace

// An output is synced on a thread once SyncBehind::kEvery bytes more are written than at the
// last sync, not before; stop() waits for the thread and reports no error when none happened.
TEST(SyncBehind, SyncsEveryKEveryBytesWritten) {
  syncs = 0;
  fail_with = 0;
  SyncBehind s(7, &fake_sync);
  s.wrote(SyncBehind::kEvery - 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(syncs, 0) << "synced before kEvery bytes were written";
  s.wrote(SyncBehind::kEvery);
  ASSERT_TRUE(synced(1));
  EXPECT_EQ(synced_fd, 7);
  s.wrote(SyncBehind::kEvery + 10);  // 10 bytes more than at the last sync: none
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(syncs, 1);
  s.wrote(3 * SyncBehind::kEvery);
  ASSERT_TRUE(synced(2));
  EXPECT_EQ(s.stop(), 0);
  s.wrote(10 * SyncBehind::kEvery);  // stopped: nothing more
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(syncs, 2);
}

// A failed sync is reported by stop(), which the output's commit then reports: the error is
// not reported again by a later sync of the same descriptor (Linux reports a write-back error
// once per open file), so it would otherwise be lost. An interrupted sync is retried, and a sync
// refused as unsupported is no error.
TEST(SyncBehind, StopReportsAFailedSync) {
  syncs = 0;
  fail_with = EIO;
  SyncBehind s(3, &fake_sync);
  s.wrote(SyncBehind::kEvery);
  ASSERT_TRUE(synced(1));
  EXPECT_EQ(s.stop(), EIO);
  syncs = 0;
  fail_with = EINVAL;
  SyncBehind t(3, &fake_sync);
  t.wrote(SyncBehind::kEvery);
  ASSERT_TRUE(synced(1));
  EXPECT_EQ(t.stop(), 0);
  fail_with = 0;
}

// Outputs larger than SyncBehind::kEvery, through the page cache and written directly, come out
// whole: the syncs on their own thread while they are written change nothing in them.
TEST(AtomicFile, SyncedWhileWrittenKeepsEveryByte) {
  test::TempDir d;
  std::string text;
  std::mt19937_64 rng(5);
  while (text.size() < 2 * SyncBehind::kEvery + 12345) text += std::to_string(rng()) + "\n";
  for (const bool directly : {false, true}) {
    AtomicFile out(d.file("out.txt"));
    if (directly) out.write_directly();
    for (size_t at = 0; at < text.size(); at += 100000) out.write(std::string_view(text).substr(at, 100000));
    out.commit();
    EXPECT_EQ(test::read_file(d.file("out.txt")), text) << directly;
  }
}

// Similarities are printed without printf (io/tsv.cpp); every output must still read as "%.6f"
// would print it: every fraction k / n of sets up to 400 hashes (what exact Jaccard gives), the
// exact halves at the sixth decimal (ties, rounded to even by printf), their neighbours, and
// random values.
TEST(Tsv, SimilaritiesPrintAsPrintfDoes) {
  const auto expect_printf = [](double s) {
    std::string fast;
    append_similarity(fast, s);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6f", s);
    ASSERT_EQ(fast, buf) << "for " << std::hexfloat << s;
  };
  for (int n = 1; n <= 400; ++n)
    for (int k = 0; k <= n; ++k) expect_printf(static_cast<double>(k) / n);
  for (int k = 0; k < 2000000; k += 1) {
    const double tie = (k + 0.5) / 1e6;
    expect_printf(tie);
    expect_printf(std::nextafter(tie, 0.0));
    expect_printf(std::nextafter(tie, 1.0));
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> any(0.0, 1.0);
  for (int i = 0; i < 1000000; ++i) expect_printf(any(rng));
  for (const double s : {0.0, 1.0, 0.0000005, 0.9999995, 1e-300, -0.0, 0.125, 0.875})
    expect_printf(s);
}

// The pairs output, put together in place (io/tsv.cpp): line for line what formatting each pair
// by itself gives, across the 1 MiB writes, with an id longer than the whole buffer, runs of one
// first document broken by another, and the SimHash distance column.
TEST(Tsv, PairsWriteEachLineAsFormattedAlone) {
  test::TempDir d;
  std::vector<std::string> ids;
  for (int i = 0; i < 500; ++i) ids.push_back("doc/" + std::to_string(i) + std::string(40 + static_cast<size_t>(i % 7) * 10, 'x'));
  ids[499] = std::string((size_t{3} << 20) + 17, 'L');  // over the writes' buffer
  std::vector<ScoredPair> pairs;
  std::mt19937_64 rng(11);
  for (DocId a = 0; a < 400; ++a) {
    const DocId last = std::min<DocId>(a + 1 + static_cast<DocId>(rng() % 300), 499);
    for (DocId b = a + 1; b < last; ++b)
      pairs.push_back({a, b, static_cast<double>(rng() % 1000001) / 1e6});
    if (a == 7) pairs.push_back({a, 499, 0.5});
  }
  pairs.push_back({499, 498, 1.0});
  std::vector<uint64_t> simhashes(500);
  for (auto& h : simhashes) h = rng();
  const IdOf id = [&](DocId x) { return std::string_view(ids[x]); };
  for (const bool with_distance : {false, true}) {
    std::string want;
    for (const ScoredPair& p : pairs) {
      want += ids[p.a] + "\t" + ids[p.b] + "\t";
      append_similarity(want, p.similarity);
      if (with_distance) want += "\t" + std::to_string(std::popcount(simhashes[p.a] ^ simhashes[p.b]));
      want += "\n";
    }
    AtomicFile out(d.file("pairs.tsv"));
    write_pairs(out, pairs, id, with_distance ? std::span<const uint64_t>(simhashes) : std::span<const uint64_t>());
    out.commit();
    ASSERT_GT(want.size(), size_t{9} << 20);
    // The first line that differs, not a diff of 12 MB (which gtest would try to compute).
    const std::string got = test::read_file(d.file("pairs.tsv"));
    const size_t at = static_cast<size_t>(std::mismatch(got.begin(), got.end(), want.begin(), want.end()).first - got.begin());
    const size_t line = want.rfind('\n', at == 0 ? 0 : at - 1) + 1;
    EXPECT_TRUE(got == want) << "with_distance " << with_distance << ", sizes " << got.size() << " and " << want.size()
                             << ", from byte " << at << ": " << got.substr(line, 120) << " | expected " << want.substr(line, 120);
  }
}

// Columns spilled to disk read back what was pushed or appended, from any range or mapped;
// nothing is left in the directory; a directory that does not exist, and a disk that refuses the
// writes (a file size limit), are errors that name the columns and the directory and say what
// to do.
TEST(SpilledColumns, ReadBackWhatWasPushed) {
  test::TempDir d;
  std::mt19937_64 rng(5);
  std::vector<std::vector<uint64_t>> want(3);
  {
    internal::SpilledColumns cols(d.path(), 3);
    for (size_t i = 0; i < 100000; ++i)
      for (size_t c = 0; c < 3; ++c) {
        want[c].push_back(rng());
        cols.push(c, want[c].back());
      }
    cols.finish();
    EXPECT_EQ(cols.rows(), 100000u);
    EXPECT_EQ(cols.bytes(), 3u * 100000 * 8);
    EXPECT_TRUE(std::filesystem::is_empty(d.path())) << "the files have no name";
    std::vector<uint64_t> got(30000);
    for (const size_t begin : {size_t{0}, size_t{1}, size_t{8191}, size_t{70000}})
      for (size_t c = 0; c < 3; ++c) {
        cols.read(c, begin, 30000, got.data());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want[c].begin() + static_cast<ptrdiff_t>(begin))) << c << " " << begin;
      }
    EXPECT_THROW(cols.read(0, 90000, 20000, got.data()), UsageError);
  }
  try {
    internal::SpilledColumns missing(d.file("no/such"), 2);
    ADD_FAILURE() << "made columns in a missing directory";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(d.file("no/such")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set TMPDIR"), std::string::npos) << e.what();
  }
  {  // columns of bytes, mapped; an empty column maps to nothing
    internal::SpilledColumns cols(d.path(), 3, "the test's columns");
    std::string want;
    for (int i = 0; i < 20000; ++i) {
      const std::string piece(rng() % 40, static_cast<char>('a' + i % 26));
      want += piece;
      cols.append(0, piece.data(), piece.size());
      cols.push(1, static_cast<uint64_t>(i));
    }
    const std::string big(200000, 'B');  // longer than a buffer
    cols.append(0, big.data(), big.size());
    want += big;
    EXPECT_THROW(cols.map(0), UsageError) << "mapped before finish()";
    cols.finish();
    const auto bytes = cols.map(0);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), want);
    const auto values = cols.map(1);
    ASSERT_EQ(values.size(), 20000u * 8);
    EXPECT_EQ(reinterpret_cast<const uint64_t*>(values.data())[19999], 19999u);
    EXPECT_TRUE(cols.map(2).empty());
    cols.drop_pages();  // read again from the file
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), want);
    EXPECT_EQ(cols.bytes(), want.size() + 20000u * 8);
  }
  try {
    internal::SpilledColumns named(d.file("no/such"), 1, "the test's columns");
    ADD_FAILURE() << "made columns in a missing directory";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the test's columns spilled to " + d.file("no/such"), 0), 0u) << e.what();
  }
  const auto full = [&] {
    try {
      internal::SpilledColumns cols(d.path(), 2);
      for (uint64_t i = 0; i < 1000000; ++i) cols.push(i % 2, i);
      cols.finish();
    } catch (const IoError& e) {
      const std::string what = e.what();
      return what.find(d.path()) != std::string::npos && what.find("raise --memory-limit") != std::string::npos ? 0 : 2;
    } catch (...) {
      return 3;
    }
    return 1;
  };
  EXPECT_EQ(exit_code_under_a_file_size_limit(full), 0) << "1: no error, 2: wrong message, 3: wrong type, 4: no limit";
}
