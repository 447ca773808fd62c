// Several outputs moved into place as one commit (io::commit_together, io::OutputCommit): all
// of them or none, and a failure part way puts back what was moved.
#include "neardup/io/writer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "neardup/error.h"
#include "test_util.h"

using namespace neardup;

namespace {

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The temporary file a finished output waits in (named by finish()).
std::string temporary_of(const std::string& dir, const std::string& name) {
  for (const std::string& n : names_in(dir))
    if (n.starts_with("." + name + ".neardup-tmp-")) return dir + "/" + n;
  return {};
}

struct Three {
  test::TempDir d;
  std::vector<std::unique_ptr<io::AtomicFile>> files;
  std::vector<io::AtomicFile*> ptrs;
  // a.txt and b.txt exist ("old a", "old b"); c.txt does not. Each is written "new X".
  Three() {
    test::write_file(d.file("a.txt"), "old a");
    test::write_file(d.file("b.txt"), "old b");
    for (const char* n : {"a.txt", "b.txt", "c.txt"}) {
      files.push_back(std::make_unique<io::AtomicFile>(d.file(n)));
      files.back()->write(std::string("new ") + n[0]);
      ptrs.push_back(files.back().get());
    }
  }
  std::string read(const char* n) { return test::read_file(d.file(n)); }
};

}  // namespace

TEST(CommitTogether, MovesEveryOutputAndLeavesNoTemporaryFile) {
  Three t;
  io::commit_together(t.ptrs);
  EXPECT_EQ(t.read("a.txt"), "new a");
  EXPECT_EQ(t.read("b.txt"), "new b");
  EXPECT_EQ(t.read("c.txt"), "new c");
  EXPECT_EQ(names_in(t.d.path()), (std::vector<std::string>{"a.txt", "b.txt", "c.txt"}));
  for (const io::AtomicFile* f : t.ptrs) EXPECT_TRUE(f->committed());
}

// The last output cannot be moved (its temporary file is gone): the two moved before it are put
// back, the new file where there was none removed, and the error says no output was replaced.
TEST(CommitTogether, AFailedMovePutsBackTheOutputsMovedBefore) {
  Three t;
  io::OutputCommit c(t.ptrs);
  c.finish();
  const std::string temp_c = temporary_of(t.d.path(), "c.txt");
  ASSERT_FALSE(temp_c.empty());
  ASSERT_EQ(::unlink(temp_c.c_str()), 0);
  try {
    c.place();
    FAIL() << "place() should have thrown";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("c.txt: cannot move output into place"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no output was replaced"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.read("a.txt"), "old a");
  EXPECT_EQ(t.read("b.txt"), "old b");
  EXPECT_FALSE(std::filesystem::exists(t.d.file("c.txt")));
  t.files.clear();  // the writers remove their temporary files
  EXPECT_EQ(names_in(t.d.path()), (std::vector<std::string>{"a.txt", "b.txt"}));
}

// A commit spanning processes: this part moved its outputs, another part failed, undo() puts
// these back.
TEST(CommitTogether, UndoPutsBackWhatPlaceMoved) {
  Three t;
  io::OutputCommit c(t.ptrs);
  c.finish();
  c.place();
  EXPECT_EQ(t.read("a.txt"), "new a");
  EXPECT_TRUE(c.undo().empty());
  EXPECT_EQ(t.read("a.txt"), "old a");
  EXPECT_EQ(t.read("b.txt"), "old b");
  EXPECT_FALSE(std::filesystem::exists(t.d.file("c.txt")));
  t.files.clear();
  EXPECT_EQ(names_in(t.d.path()), (std::vector<std::string>{"a.txt", "b.txt"}));
}

// Finished but never placed (the run failed after finishing): nothing changes.
TEST(CommitTogether, FinishedButNotPlacedChangesNothing) {
  Three t;
  {
    io::OutputCommit c(t.ptrs);
    c.finish();
  }
  t.files.clear();
  EXPECT_EQ(names_in(t.d.path()), (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(t.read("a.txt"), "old a");
}

// One output alone keeps the single file's message.
TEST(CommitTogether, OneOutputFailingSaysItsPreviousFileIsUntouched) {
  test::TempDir d;
  test::write_file(d.file("a.txt"), "old");
  io::AtomicFile f(d.file("a.txt"));
  f.write("new");
  f.finish();
  ASSERT_EQ(::unlink(temporary_of(d.path(), "a.txt").c_str()), 0);
  try {
    f.commit();
    FAIL() << "commit() should have thrown";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the previous file, if any, is untouched"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::read_file(d.file("a.txt")), "old");
}
