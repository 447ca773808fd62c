#include "neardup/io/writer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "neardup/error.h"
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

TEST(AtomicFile, MissingDirectoryIsAnIoError) {
  test::TempDir d;
  EXPECT_THROW(io::AtomicFile(d.file("no/such/dir/out.txt")), IoError);
}
