#include "neardup/io/writer.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <thread>

#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "test_util.h"

using namespace neardup;

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
