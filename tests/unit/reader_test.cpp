#include "neardup/io/reader.h"
#include "io/raw_records.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/vfs.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <tuple>

#include "internal/realloc_buffer.h"
#include "internal/testing.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/io/writer.h"
#include "neardup/text.h"
#include "test_util.h"

using namespace neardup;
using namespace neardup::io;
using neardup::test::gzip;
using neardup::test::zstd;

namespace {

struct Rec {
  std::string id, text, raw;
  uint64_t line;
  bool operator==(const Rec&) const = default;
};

std::vector<Rec> read_all_records(const std::vector<std::string>& paths, ReaderOptions opt = {},
                                  ReaderStats* stats = nullptr) {
  InputSet in(paths, opt.format);
  RecordReader r(in, opt);
  std::vector<Rec> out;
  Record rec;
  while (r.next(rec)) out.push_back({std::string(rec.id), std::string(rec.text), std::string(rec.raw), rec.line});
  if (stats) *stats = r.stats();
  return out;
}

std::string error_of(const std::vector<std::string>& paths, ReaderOptions opt = {}) {
  try {
    read_all_records(paths, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kJsonl =
    "{\"id\": \"a\", \"text\": \"hello world\"}\n"
    "{\"text\": \"no id here\", \"other\": [1, 2]}\n"
    "\n"
    "{\"id\": 17, \"text\": \"numeric id\"}\r\n"
    "{\"id\": \"u\", \"text\": \"caf\\u00e9 \\ud83d\\ude00\"}";  // no final newline

}  // namespace

TEST(Reader, JsonlRecordsIdsAndRawLines) {
  test::TempDir d;
  test::write_file(d.file("x.jsonl"), kJsonl);
  const auto r = read_all_records({d.file("x.jsonl")});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].id, "a");
  EXPECT_EQ(r[0].text, "hello world");
  EXPECT_EQ(r[0].raw, "{\"id\": \"a\", \"text\": \"hello world\"}");
  EXPECT_EQ(r[1].id, d.file("x.jsonl") + ":2");  // missing id: file:line
  EXPECT_EQ(r[2].id, "17");
  EXPECT_EQ(r[2].line, 4u);  // the blank line 3 is not a record
  EXPECT_EQ(r[2].raw, "{\"id\": 17, \"text\": \"numeric id\"}\r");  // CRLF kept as it was
  EXPECT_EQ(r[3].text, "café \xF0\x9F\x98\x80");  // escapes and a surrogate pair decoded
}

TEST(Reader, CustomFields) {
  test::TempDir d;
  test::write_file(d.file("x.jsonl"), "{\"doc\": \"k1\", \"content\": \"abc\"}\n");
  ReaderOptions opt;
  opt.text_field = "content";
  opt.id_field = "doc";
  const auto r = read_all_records({d.file("x.jsonl")}, opt);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].id, "k1");
  EXPECT_EQ(r[0].text, "abc");
}

TEST(Reader, CompressionOfMagic) {
  const auto of = [](std::string_view b) { return compression_of_magic(reinterpret_cast<const unsigned char*>(b.data()), b.size()); };
  EXPECT_EQ(of(std::string_view("\x1f\x8b\x08", 3)), Compression::Gzip);
  EXPECT_EQ(of(std::string_view("\x28\xb5\x2f\xfd\x00", 5)), Compression::Zstd);
  EXPECT_EQ(of(std::string_view("\xfd" "7zXZ\0", 6)), Compression::Xz);
  EXPECT_EQ(of("BZh9"), Compression::Bzip2);
  EXPECT_EQ(of("BZh "), Compression::None);  // not a block size
  EXPECT_EQ(of(std::string_view("\x28\xb5\x2f", 3)), Compression::None);  // too short to tell
  EXPECT_EQ(of("{\"id\": 1}"), Compression::None);
  EXPECT_EQ(of(""), Compression::None);
}

TEST(Reader, CompressionOfName) {
  EXPECT_EQ(compression_of_name("a.jsonl.gz"), Compression::Gzip);
  EXPECT_EQ(compression_of_name("a.jsonl.zst"), Compression::Zstd);
  EXPECT_EQ(compression_of_name("a.jsonl.zstd"), Compression::Zstd);
  EXPECT_EQ(compression_of_name("notes.txt.xz"), Compression::Xz);
  EXPECT_EQ(compression_of_name("notes.txt.bz2"), Compression::Bzip2);
  EXPECT_EQ(compression_of_name("a.jsonl"), Compression::None);
  EXPECT_EQ(compression_of_name("gz"), Compression::None);
}

TEST(Reader, GzipAndZstdByMagicNotName) {
  test::TempDir d;
  test::write_file(d.file("a.jsonl.gz"), gzip(kJsonl));
  test::write_file(d.file("b.jsonl"), zstd(kJsonl));  // zstd content under a plain name
  // Two concatenated gzip members are one stream.
  test::write_file(d.file("c.jsonl.gz"), gzip("{\"id\":\"1\",\"text\":\"x\"}\n") + gzip("{\"id\":\"2\",\"text\":\"y\"}\n"));
  EXPECT_EQ(read_all_records({d.file("a.jsonl.gz")}).size(), 4u);
  EXPECT_EQ(read_all_records({d.file("b.jsonl")}).size(), 4u);
  EXPECT_EQ(read_all_records({d.file("c.jsonl.gz")}).size(), 2u);
}

TEST(Reader, TruncatedCompressedFilesAreErrors) {
  test::TempDir d;
  std::string big;
  for (int i = 0; i < 2000; ++i) big += "{\"id\": \"" + std::to_string(i) + "\", \"text\": \"some text " + std::to_string(i * 7919) + "\"}\n";
  const std::string gz = gzip(big), zs = zstd(big);
  test::write_file(d.file("t.jsonl.gz"), gz.substr(0, gz.size() / 2));
  test::write_file(d.file("t.jsonl.zst"), zs.substr(0, zs.size() / 2));
  EXPECT_NE(error_of({d.file("t.jsonl.gz")}).find("truncated gzip"), std::string::npos);
  EXPECT_NE(error_of({d.file("t.jsonl.zst")}).find("truncated zstd"), std::string::npos);
  try {
    read_all_records({d.file("t.jsonl.gz")});
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Format);
    EXPECT_EQ(e.source(), d.file("t.jsonl.gz"));
  }
}

TEST(Reader, BadRecordsNameFileAndLine) {
  test::TempDir d;
  const std::string f = d.file("bad.jsonl");
  test::write_file(f, "{\"id\": \"a\", \"text\": \"ok\"}\n{\"id\": \"b\", \"text\": \"unterminated}\n");
  EXPECT_EQ(error_of({f}).rfind(f + ":2: malformed JSON", 0), 0u) << error_of({f});
  test::write_file(f, "{\"id\": \"a\"}\n");
  EXPECT_EQ(error_of({f}).rfind(f + ":1: missing text field \"text\"", 0), 0u) << error_of({f});
  for (const char* v : {"42", "null", "[\"a\"]", "{\"x\": 1}", "true"}) {
    test::write_file(f, std::string("{\"id\": \"a\", \"text\": ") + v + "}\n");
    EXPECT_NE(error_of({f}).find(":1: text field \"text\" is "), std::string::npos) << v;
  }
  test::write_file(f, "[1, 2]\n");
  EXPECT_NE(error_of({f}).find(":1: the line is an array, not a JSON object"), std::string::npos);
  test::write_file(f, "{\"id\": null, \"text\": \"x\"}\n");
  EXPECT_NE(error_of({f}).find("id field \"id\" is null"), std::string::npos);
  EXPECT_NE(error_of({f}).find("on_error=skip"), std::string::npos);  // says what to do
}

// The error of a bad record carries its place and the option that would skip it, so that each
// front end words it its own way; no flag name is in the library's text.
TEST(Reader, BadRecordErrorIsStructured) {
  test::TempDir d;
  const std::string f = d.file("bad.jsonl");
  test::write_file(f, "{\"id\": \"a\", \"text\": \"ok\"}\n{\"id\": \"b\"}\n");
  try {
    read_all_records({f});
    FAIL() << "a record without its text field was accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Format);
    EXPECT_EQ(e.source(), f);
    EXPECT_EQ(e.line(), 2u);
    EXPECT_EQ(e.option(), "text_field");
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
    const auto python = [](std::string_view option, std::string_view value) {
      return std::string(option) + (value.empty() ? "" : "=\"" + std::string(value) + "\"");
    };
    EXPECT_EQ(e.message(python), f + ":2: missing text field \"text\" (choose another with text_field; nested fields as a.b); "
                                     "fix the input, or skip bad records with on_error=\"skip\"");
  }
}

TEST(Reader, SkipPolicyCountsBadRecords) {
  test::TempDir d;
  const std::string f = d.file("mixed.jsonl");
  test::write_file(f, "{\"id\": \"a\", \"text\": \"ok\"}\nnot json\n{\"id\": \"c\"}\n{\"id\": \"d\", \"text\": \"fine\"}\n");
  ReaderOptions opt;
  opt.on_error = OnError::Skip;
  ReaderStats st;
  const auto r = read_all_records({f}, opt, &st);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].id, "d");
  EXPECT_EQ(st.skipped, 2u);
  ASSERT_EQ(st.first_skips.size(), 2u);
  EXPECT_EQ(st.first_skips[0].rfind(f + ":2:", 0), 0u);
}

TEST(Reader, EmptyFileAndMissingPath) {
  test::TempDir d;
  test::write_file(d.file("empty.jsonl"), "");
  EXPECT_NE(error_of({d.file("empty.jsonl")}).find("file is empty"), std::string::npos);
  test::write_file(d.file("empty.jsonl.gz"), gzip(""));
  EXPECT_NE(error_of({d.file("empty.jsonl.gz")}).find("file is empty"), std::string::npos);
  try {
    read_all_records({d.file("nope.jsonl")});
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos);
    EXPECT_EQ(e.category(), ErrorCategory::Io);
  }
}

TEST(Reader, UnreadableFileIsAnIoError) {
  test::TempDir d;
  test::write_file(d.file("secret.jsonl"), "{\"text\": \"x\"}\n");
  std::filesystem::permissions(d.file("secret.jsonl"), std::filesystem::perms::none);
  auto attempt = [&]() -> int {  // 0: IoError naming the file and the permission problem
    try {
      read_all_records({d.file("secret.jsonl")});
    } catch (const IoError& e) {
      const std::string m = e.what();
      return m.find("secret.jsonl") != std::string::npos && m.find("ermission denied") != std::string::npos ? 0 : 2;
    } catch (...) {
      return 3;
    }
    return 1;
  };
  if (::geteuid() != 0) {
    EXPECT_EQ(attempt(), 0);
    return;
  }
  // Root reads every file: try as nobody in a child process.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(4);
    ::_exit(attempt());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no error, 2: wrong message, 3: wrong type, 4: cannot drop root";
}

TEST(Reader, InvalidUtf8IsNotAnError) {
  test::TempDir d;
  const std::string line = "{\"id\": \"x\", \"text\": \"ab\xFF" "cd\"}";
  test::write_file(d.file("u.jsonl"), line + "\n");
  ReaderStats st;
  const auto r = read_all_records({d.file("u.jsonl")}, {}, &st);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].text, "ab\xEF\xBF\xBD" "cd");
  EXPECT_EQ(r[0].raw, line);  // the raw line is untouched
  EXPECT_EQ(st.invalid_utf8, 1u);
}

// Ids are the folder as given joined with the path inside it (unique across folders), and the
// record's raw form (what dedup prints as kept) is the same string.
TEST(Reader, DirectoriesAreWalkedSortedWithJoinedIds) {
  test::TempDir d;
  test::write_file(d.file("root/b.txt"), "second");
  test::write_file(d.file("root/a/z.txt"), "first");
  test::write_file(d.file("root/c/empty.txt"), "");
  const auto r = read_all_records({d.file("root") + "/"});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].id, d.file("root/a/z.txt"));
  EXPECT_EQ(r[0].text, "first");
  EXPECT_EQ(r[0].raw, r[0].id);
  EXPECT_EQ(r[1].id, d.file("root/b.txt"));
  EXPECT_EQ(r[2].id, d.file("root/c/empty.txt"));  // an empty file inside a directory is an empty document
  EXPECT_EQ(r[2].text, "");
}

// Hidden entries, binary files and --exclude globs are left out of a folder and counted; a
// binary file named directly is a bad record.
TEST(Reader, FoldersLeaveOutHiddenBinaryAndExcludedFiles) {
  test::TempDir d;
  test::write_file(d.file("root/a.txt"), "text");
  test::write_file(d.file("root/.hidden"), "secret");
  test::write_file(d.file("root/.git/objects/x"), "object");
  test::write_file(d.file("root/img.png"), std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  test::write_file(d.file("root/skip.log"), "log");
  io::ReaderOptions opt;
  opt.exclude = {"*.log"};
  io::InputSet in({d.file("root")}, opt);
  EXPECT_EQ(in.sources().size(), 2u);  // a.txt and img.png; the binary one is found by reading it
  EXPECT_EQ(in.left_out().hidden, 2u);
  EXPECT_EQ(in.left_out().excluded, 1u);
  io::RecordReader reader(in, opt);
  io::Record rec;
  ASSERT_TRUE(reader.next(rec));
  EXPECT_EQ(rec.id, d.file("root/a.txt"));
  EXPECT_FALSE(reader.next(rec));
  EXPECT_EQ(reader.stats().binary, 1u);
  opt.hidden = true;
  EXPECT_EQ(io::InputSet({d.file("root")}, opt).sources().size(), 4u);
  io::InputSet direct({d.file("root/img.png")}, opt);
  io::RecordReader reader2(direct, opt);
  EXPECT_THROW(reader2.next(rec), FormatError);
}

// --max-record-bytes holds for a line that fits the read buffer, and names its line.
TEST(Reader, MaxRecordBytesHoldsForShortLinesWithTheRightLine) {
  test::TempDir d;
  std::string data = "{\"text\": \"" + std::string(600, 'a') + "\"}\n";
  for (int i = 0; i < 100; ++i) data += "{\"text\": \"b\"}\n";
  test::write_file(d.file("a.jsonl"), data);
  io::ReaderOptions opt;
  opt.max_record_bytes = 500;
  io::InputSet in({d.file("a.jsonl")}, opt);
  io::RecordReader reader(in, opt);
  io::Record rec;
  try {
    reader.next(rec);
    FAIL() << "a 600-byte line passed a 500-byte limit";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("a.jsonl:1: the line is longer than max_record_bytes=500"), std::string::npos) << e.what();
  }
}

// Nested fields by dotted path; numbers as ids; ids with TAB or newline are bad records.
TEST(Reader, DottedFieldsNumericIdsAndControlCharactersInIds) {
  test::TempDir d;
  test::write_file(d.file("a.jsonl"),
                   "{\"m\": {\"t\": \"one\"}, \"n\": 17}\n"
                   "{\"m\": {\"t\": \"two\"}, \"n\": \"x\\ty\"}\n"
                   "{\"m.t\": \"three\", \"n\": 2.5}\n");
  io::ReaderOptions opt;
  opt.text_field = "m.t";
  opt.id_field = "n";
  opt.on_error = io::OnError::Skip;
  std::vector<std::string> rejected;
  opt.on_reject = [&](const io::Rejected& r) { rejected.push_back(std::string(r.kind) + "|" + std::string(r.record)); };
  io::InputSet in({d.file("a.jsonl")}, opt);
  io::RecordReader reader(in, opt);
  io::Record rec;
  ASSERT_TRUE(reader.next(rec));
  EXPECT_EQ(rec.id, "17");
  EXPECT_EQ(rec.text, "one");
  ASSERT_TRUE(reader.next(rec));
  EXPECT_EQ(rec.id, "2.5");
  EXPECT_EQ(rec.text, "three");
  EXPECT_FALSE(reader.next(rec));
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0], "bad id|{\"m\": {\"t\": \"two\"}, \"n\": \"x\\ty\"}");
  ASSERT_EQ(reader.stats().skip_kinds.size(), 1u);
  EXPECT_EQ(reader.stats().skip_kinds[0].second, 1u);
}

// JSONL named otherwise is recognised by its first line; xz and bzip2 are decompressed.
TEST(Reader, JsonlByContentAndXzBzip2) {
  test::TempDir d;
  const std::string data = "{\"id\": \"a\", \"text\": \"hello\"}\n";
  test::write_file(d.file("data.txt"), data);
  test::write_file(d.file("plain.txt"), "{ not json at all\n");
  io::InputSet in({d.file("data.txt"), d.file("plain.txt")}, io::ReaderOptions{});
  EXPECT_EQ(in.sources()[0].kind, io::SourceKind::Jsonl);
  EXPECT_EQ(in.sources()[1].kind, io::SourceKind::TextFile);
  for (const char* tool : {"xz", "bzip2"}) {
    test::write_file(d.file("c.jsonl"), data + data);
    const std::string cmd = std::string(tool) + " -f " + d.file("c.jsonl");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << tool;
    const std::string packed = d.file(std::string("c.jsonl.") + (tool[0] == 'x' ? "xz" : "bz2"));
    const auto r = read_all_records({packed});
    ASSERT_EQ(r.size(), 2u) << tool;
    EXPECT_EQ(r[1].text, "hello");
  }
}

TEST(Reader, LongLines) {
  test::TempDir d;
  std::string text(5'000'000, 'a');
  test::write_file(d.file("long.jsonl"), "{\"id\": \"L\", \"text\": \"" + text + " b\"}\n{\"id\": \"s\", \"text\": \"c\"}\n");
  const auto r = read_all_records({d.file("long.jsonl")});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].text.size(), text.size() + 2);
  EXPECT_EQ(r[1].id, "s");
  // Lines long enough that the buffer grows past 8 MiB and shrinks back after them, among short
  // ones: every record, line number and raw line as written.
  std::string jsonl;
  std::vector<std::string> lines;
  for (int i = 0; i < 6; ++i) {
    const std::string t = i % 3 == 1 ? std::string(9'000'000 + static_cast<size_t>(i), 'x') : "short " + std::to_string(i);
    lines.push_back("{\"id\": \"r" + std::to_string(i) + "\", \"text\": \"" + t + "\"}");
    jsonl += lines.back() + "\n";
  }
  test::write_file(d.file("mixed.jsonl"), jsonl);
  const auto m = read_all_records({d.file("mixed.jsonl")});
  ASSERT_EQ(m.size(), 6u);
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i].id, "r" + std::to_string(i));
    EXPECT_EQ(m[i].line, i + 1);
    EXPECT_TRUE(m[i].raw == lines[i]) << i;
    EXPECT_EQ(m[i].text.size(), i % 3 == 1 ? 9'000'000 + i : ("short " + std::to_string(i)).size());
  }
}

// The reader's buffer keeps its bytes as it grows from a heap block into a mapping (2 MiB
// aligned, for huge pages), grows in place or is moved when the range after it is taken, shrinks
// and goes back to the heap.
TEST(Reader, ReallocBufferKeepsItsBytesAcrossGrowthAndShrink) {
  using internal::ReallocBuffer;
  const auto fill = [](ReallocBuffer& b, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) b.data()[i] = static_cast<char>(i * 131 % 251);
  };
  const auto holds = [](const ReallocBuffer& b, size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (b.data()[i] != static_cast<char>(i * 131 % 251)) return false;
    return true;
  };
  const auto aligned = [](const ReallocBuffer& b) { return reinterpret_cast<uintptr_t>(b.data()) % internal::kHugePageBytes == 0; };
  ReallocBuffer b(1000);
  fill(b, 0, 1000);
  size_t had = 1000;
  for (const size_t n : {size_t{4} << 20, ReallocBuffer::kMapBytes, size_t{16} << 20, size_t{64} << 20}) {
    b.resize(n);
    ASSERT_EQ(b.size(), n);
    EXPECT_TRUE(holds(b, had)) << n;
    if (n >= ReallocBuffer::kMapBytes) {
      EXPECT_TRUE(aligned(b)) << n;
    }
    fill(b, had, n);
    had = n;
  }
  b.resize(size_t{20} << 20);  // a smaller mapping
  EXPECT_TRUE(holds(b, size_t{20} << 20));
  b.resize(size_t{1} << 20);  // back to the heap
  EXPECT_TRUE(holds(b, size_t{1} << 20));
  // Moved when the range after it is taken: the pages go to a new aligned range.
  ReallocBuffer c(ReallocBuffer::kMapBytes);
  fill(c, 0, c.size());
  void* after = ::mmap(c.data() + internal::huge_pages_of(c.size()), 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  const bool blocked = after != MAP_FAILED && after == c.data() + internal::huge_pages_of(c.size());
  const char* before = c.data();
  c.resize(ReallocBuffer::kMapBytes * 2);
  EXPECT_TRUE(holds(c, ReallocBuffer::kMapBytes));
  EXPECT_TRUE(aligned(c));
  if (blocked) {
    EXPECT_NE(c.data(), before);
  }
  if (after != MAP_FAILED) ::munmap(after, 4096);
  ReallocBuffer d(std::move(c));
  EXPECT_TRUE(holds(d, ReallocBuffer::kMapBytes));
}

// A line the reader marks overwritable (RawRecord::writable) overlaps no other line nor the
// padding read past any other line's end, whichever thread parses that one; lines longer than a
// buffer are marked (they start a buffer of their own), and no line of a mapped window is.
// Writes `count` JSONL records of 100-4,099 bytes of text to `path`, record i with
// long_size(i, rng) bytes instead where that is not 0; returns how many are over 1 MB.
static size_t write_records_with_long_ones(const std::string& path, int count, uint64_t seed,
                                           const std::function<size_t(int, std::mt19937_64&)>& long_size) {
  std::mt19937_64 rng(seed);
  std::string jsonl;
  size_t long_lines = 0;
  for (int i = 0; i < count; ++i) {
    size_t n = long_size(i, rng);
    if (n == 0) n = 100 + rng() % 4000;
    long_lines += n > 1'000'000;
    jsonl += "{\"id\": " + std::to_string(i) + ", \"text\": \"" + std::string(n, 'a' + static_cast<char>(i % 26)) + "\"}\n";
  }
  test::write_file(path, jsonl);
  return long_lines;
}

TEST(Reader, OverwritableLinesOverlapNoOtherLine) {
  test::TempDir d;
  const size_t long_lines = write_records_with_long_ones(d.file("a.jsonl"), 4000, 71, [](int i, std::mt19937_64& rng) {
    return i % 700 == 5 ? 5'000'000 + rng() % 1000 : 0;
  });
  for (const MemoryMap mode : {MemoryMap::Never, MemoryMap::Always}) {
    ReaderOptions opt;
    opt.memory_map = mode;
    const InputSet inputs({d.file("a.jsonl")}, opt);
    RecordReader reader(inputs, opt);
    std::vector<std::shared_ptr<const void>> owners;  // all kept: no buffer is reused
    std::vector<std::pair<const char*, const char*>> spans;  // each line with its padding
    std::vector<size_t> writable;
    RawRecord raw;
    while (io::next_raw(reader, raw)) {
      owners.push_back(io::share_line(reader, raw));
      if (raw.writable) writable.push_back(spans.size());
      spans.emplace_back(raw.bytes.data(), raw.bytes.data() + raw.bytes.size() + JsonlParser::kPadding);
      if (raw.bytes.size() > 1'000'000) {
        EXPECT_EQ(raw.writable, mode == MemoryMap::Never) << spans.size();
      }
    }
    ASSERT_EQ(spans.size(), 4000u);
    if (mode == MemoryMap::Always) {
      EXPECT_TRUE(writable.empty());
      continue;
    }
    EXPECT_GT(writable.size(), long_lines);  // the first line of every buffer too
    EXPECT_LT(writable.size(), 100u);
    for (const size_t w : writable) {
      const char* begin = spans[w].first;
      const char* end = spans[w].second - JsonlParser::kPadding;
      for (size_t j = 0; j < spans.size(); ++j)
        if (j != w) {
          ASSERT_TRUE(spans[j].second <= begin || spans[j].first >= end) << "line " << w << " and line " << j;
        }
    }
  }
}

// Lines longer than the usual buffer stay overwritable when the buffers go round (each let go a
// few lines after it was shared, as batches in flight let go theirs): a buffer grown for one long
// line and given back may be lent for usual reads, but each read asks for no more than a usual
// buffer's worth, so a later long line never lands whole in its middle (where it would be parsed
// whole rather than made word text in place).
TEST(Reader, LongLinesStayOverwritableWhenBuffersAreReused) {
  test::TempDir d;
  // The first long line grows a buffer to 32 MiB, which the pool keeps and lends for usual reads.
  const size_t long_lines = write_records_with_long_ones(d.file("a.jsonl"), 3000, 73, [](int i, std::mt19937_64& rng) -> size_t {
    return i % 300 != 7 ? 0 : i == 7 ? 20'000'000 : 5'000'000 + rng() % 1'000'000;
  });
  ReaderOptions opt;
  opt.memory_map = MemoryMap::Never;
  const InputSet inputs({d.file("a.jsonl")}, opt);
  RecordReader reader(inputs, opt);
  std::deque<std::shared_ptr<const void>> in_flight;
  RawRecord raw;
  size_t lines = 0, long_writable = 0;
  while (io::next_raw(reader, raw)) {
    ++lines;
    if (raw.bytes.size() > 1'000'000) long_writable += raw.writable;
    in_flight.push_back(io::share_line(reader, raw));
    if (in_flight.size() > 200) in_flight.pop_front();
  }
  EXPECT_EQ(lines, 3000u);
  EXPECT_EQ(long_lines, 10u);
  EXPECT_EQ(long_writable, long_lines);
}

// Lines shared out of the reader's buffers (share_line) keep their bytes while their owners live,
// however far the reader goes on (into other buffers, reused ones among them, and across sources
// and lines longer than a buffer); reading by position shares only lines of 1 MiB or more.
TEST(Reader, SharedLinesKeepTheirBytes) {
  test::TempDir d;
  std::mt19937_64 rng(67);
  std::vector<std::string> want;
  for (const char* name : {"a.jsonl", "b.jsonl.zst"}) {
    std::string jsonl;
    for (int i = 0; i < 3000; ++i) {
      const size_t n = i % 500 == 7 ? 2'500'000 : 200 + rng() % 3000;
      std::string t(n, 'x');
      for (size_t j = 0; j < n; j += 1 + rng() % 9) t[j] = static_cast<char>('a' + rng() % 26);
      want.push_back("{\"id\": \"" + std::string(name) + std::to_string(i) + "\", \"text\": \"" + t + "\"}");
      jsonl += want.back() + "\n";
    }
    if (std::string(name).ends_with(".zst")) {
      std::string z(ZSTD_compressBound(jsonl.size()), '\0');
      z.resize(ZSTD_compress(z.data(), z.size(), jsonl.data(), jsonl.size(), 1));
      jsonl = z;
    }
    test::write_file(d.file(name), jsonl);
  }
  const InputSet inputs({d.file("a.jsonl"), d.file("b.jsonl.zst")}, ReaderOptions{});
  RecordReader reader(inputs, ReaderOptions{});
  std::vector<std::pair<std::shared_ptr<const void>, std::string_view>> got;
  std::vector<RecordPos> at;
  RawRecord raw;
  while (io::next_raw(reader, raw)) {
    ASSERT_EQ(raw.kind, RawRecord::Kind::Line);
    auto owner = io::share_line(reader, raw);
    ASSERT_NE(owner, nullptr);
    got.emplace_back(std::move(owner), raw.bytes);
    at.push_back({static_cast<uint32_t>(raw.source), static_cast<uint32_t>(raw.bytes.size()), raw.offset});
    if (got.size() % 7 == 0) got[got.size() - 4].first.reset();  // some owners let go early
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].first) {
      ASSERT_TRUE(got[i].second == want[i]) << "line " << i;
    }
  }
  {  // and past the reader's end
    auto gone = std::make_unique<RecordReader>(inputs, ReaderOptions{});
    ASSERT_TRUE(io::next_raw(*gone, raw));
    auto owner = io::share_line(*gone, raw);
    const std::string_view line = raw.bytes;
    gone.reset();
    EXPECT_TRUE(line == want[0]);
  }
  // By position: the long lines are shared, the others not (and still read right).
  RecordReader selected(inputs, ReaderOptions{});
  selected.select(at);
  size_t i = 0, shared = 0;
  for (; io::next_raw(selected, raw); ++i) {
    ASSERT_LT(i, want.size());
    EXPECT_TRUE(raw.bytes == want[i]) << "line " << i;
    auto owner = io::share_line(selected, raw);
    EXPECT_EQ(owner != nullptr, want[i].size() >= (size_t{1} << 20)) << "line " << i;
    if (owner) {
      EXPECT_TRUE(raw.bytes == want[i]);
      ++shared;
    }
  }
  EXPECT_EQ(i, want.size());
  EXPECT_EQ(shared, 12u);
}

// A plain file is read in place, mapped a window of 4 MiB at a time: every record, line number,
// offset, bad record and skipped line is what reading the same file through read(2) gives, for
// lines across windows' ends, lines longer than a window, lines over --max-record-bytes, a byte
// order mark, a last line without a newline that ends the file on a page boundary, and reading
// by position; and when a window cannot be mapped, the rest of the file read as a stream.
TEST(Reader, MappedFilesReadAsStreamsDo) {
  test::TempDir d;
  std::mt19937_64 rng(91);
  auto record = [&](size_t n, int i) {
    std::string t(n, 'x');
    for (size_t j = 0; j < n; j += 1 + rng() % 7) t[j] = static_cast<char>('a' + rng() % 26);
    return "{\"id\": \"r" + std::to_string(i) + "\", \"text\": \"" + t + "\"}";
  };
  std::string mixed = "\xEF\xBB\xBF";
  for (int i = 0; i < 12000; ++i) {
    const size_t n = i % 5000 == 3 ? 6'000'000 + rng() % 2'000'000 : i % 2997 == 5 ? 4'500'000 : rng() % 900;
    mixed += record(n, i);
    mixed += i % 13 == 0 ? "\r\n" : i % 101 == 0 ? "\n\n  \n" : "\n";
    if (i % 2000 == 17) mixed += "{\"id\": \"bad\", \"text\": 3}\n";  // a bad record
  }
  // The last line has no newline and ends the file on a page boundary: its padding is the page
  // of zeros after the mapped file.
  std::string last = "{\"id\": \"end\", \"text\": \"";
  const size_t tail = 4096 - (mixed.size() + last.size() + 2) % 4096;
  last += std::string(tail, 'z') + "\"}";
  mixed += last;
  ASSERT_EQ(mixed.size() % 4096, 0u);
  test::write_file(d.file("mixed.jsonl"), mixed);
  test::write_file(d.file("tiny.jsonl"), "{\"text\": \"a b c\"}");

  auto read = [&](bool map, uint64_t max_record_bytes, size_t fail_map = 0) {
    fail_input_map_for_testing(fail_map);
    ReaderOptions opt;
    opt.memory_map = map ? MemoryMap::Always : MemoryMap::Never;
    opt.on_error = OnError::Skip;
    opt.max_record_bytes = max_record_bytes;
    const InputSet in({d.file("mixed.jsonl"), d.file("tiny.jsonl")}, opt);
    RecordReader r(in, opt);
    std::vector<std::tuple<std::string, std::string, uint64_t, uint64_t, size_t>> out;
    std::vector<RecordPos> at;
    Record rec;
    while (r.next(rec)) {
      out.emplace_back(std::string(rec.id), std::string(rec.raw), rec.line, rec.offset, rec.text.size());
      at.push_back({static_cast<uint32_t>(rec.source), static_cast<uint32_t>(rec.raw.size()), rec.offset});
    }
    fail_input_map_for_testing(0);
    return std::make_tuple(out, at, r.stats().skipped, r.bytes_read());
  };
  for (const uint64_t limit : {uint64_t{1} << 30, uint64_t{5} << 20}) {
    const auto [mapped, at, mapped_skips, mapped_bytes] = read(true, limit);
    const auto [streamed, at_streamed, streamed_skips, streamed_bytes] = read(false, limit);
    ASSERT_EQ(mapped.size(), streamed.size()) << limit;
    for (size_t i = 0; i < mapped.size(); ++i) ASSERT_TRUE(mapped[i] == streamed[i]) << "record " << i << " limit " << limit;
    EXPECT_EQ(mapped_skips, streamed_skips);
    EXPECT_EQ(mapped_bytes, streamed_bytes);
    // A window that cannot be mapped (a file system without mmap): the file goes on as a stream
    // from there, from its first window or from a later one.
    for (const size_t fail_map : {1, 3}) {
      const auto [fell_back, at_fb, fb_skips, fb_bytes] = read(true, limit, fail_map);
      ASSERT_EQ(fell_back.size(), streamed.size()) << fail_map;
      for (size_t i = 0; i < fell_back.size(); ++i) ASSERT_TRUE(fell_back[i] == streamed[i]) << "record " << i << " failing map " << fail_map;
      EXPECT_EQ(fb_skips, streamed_skips);
    }
    EXPECT_EQ(std::get<0>(mapped.front()), "r0");  // after the byte order mark
    EXPECT_EQ(std::get<3>(mapped.front()), 3u);
    EXPECT_EQ(std::get<0>(mapped[mapped.size() - 2]), "end");
    EXPECT_EQ(std::get<1>(mapped[mapped.size() - 2]), last);
    // Every record over the limit is a skip, and the records after it keep their line numbers.
    EXPECT_EQ(mapped_skips, limit == (uint64_t{1} << 30) ? 6u : 6u + 3u) << limit;
    // By position, one record in s (0: a random one in 40, in runs of neighbours), mapped, or
    // read in runs of lines close together: the same lines.
    for (const size_t stride : {1, 3, 2000, 0})
      for (const MemoryMap how : {MemoryMap::Always, MemoryMap::Auto, MemoryMap::Never}) {
      std::vector<RecordPos> some;
      std::vector<size_t> which;
      std::mt19937_64 pick(stride);
      for (size_t i = stride / 2; i < at.size(); i += stride > 0 ? stride : 1 + pick() % 40) {
        some.push_back(at[i]);
        which.push_back(i);
      }
      ReaderOptions opt;
      opt.memory_map = how;
      const InputSet in({d.file("mixed.jsonl"), d.file("tiny.jsonl")}, opt);
      RecordReader r(in, opt);
      r.select(some);
      fail_input_map_for_testing(stride == 3 ? 2 : 0);  // and by position, from the second window on
      RawRecord raw;
      size_t k = 0;
      for (; io::next_raw(r, raw); ++k) {
        ASSERT_LT(k, which.size());
        ASSERT_TRUE(raw.bytes == std::get<1>(mapped[which[k]])) << stride << " " << static_cast<int>(how) << " " << k;
      }
      fail_input_map_for_testing(0);
      EXPECT_EQ(k, which.size());
      }
  }
  // A mapped line's address names its file (what the SIGBUS handler reports), while the line's
  // window is mapped; a file read as a stream (MemoryMap::Never) is mapped nowhere.
  for (const bool map : {true, false}) {
    ReaderOptions opt;
    opt.memory_map = map ? MemoryMap::Always : MemoryMap::Never;
    const InputSet in({d.file("mixed.jsonl")}, opt);
    auto reader = std::make_unique<RecordReader>(in, opt);
    RawRecord raw;
    ASSERT_TRUE(io::next_raw(*reader, raw));
    auto owner = io::share_line(*reader, raw);
    char name[512];
    EXPECT_EQ(mapped_input_at(raw.bytes.data() + 10, name, sizeof name), map);
    if (map) {
      EXPECT_EQ(std::string(name), in.sources()[0].display);
    }
    const void* at = raw.bytes.data();
    reader.reset();
    EXPECT_EQ(mapped_input_at(at, name, sizeof name), map) << "the shared line's window is still mapped";
    owner.reset();
    EXPECT_FALSE(mapped_input_at(at, name, sizeof name));
  }
}

// MemoryMap::Auto measures once per process, on the first plain file of 4 MiB or more, what
// mapping and read(2) cost, and then maps files unless mapping was much the dearer; a smaller file
// before the measurement is read by read(2) and does not measure. Either way the records are the
// same.
TEST(Reader, AutoMapsUnlessMeasuredMuchDearer) {
  test::TempDir d;
  std::string big;
  for (int i = 0; big.size() < (size_t{5} << 20); ++i)
    big += "{\"id\": \"b" + std::to_string(i) + "\", \"text\": \"alpha beta gamma " + std::to_string(i * 7919) + " delta\"}\n";
  test::write_file(d.file("big.jsonl"), big);
  test::write_file(d.file("small.jsonl"), "{\"id\": \"s\", \"text\": \"a b c\"}\n");
  const int saved = map_choice_for_testing();
  // Whether the first line of `file`, read under `mode`, lies in a mapped window; and its records.
  auto first_line_mapped = [&](const std::string& file, MemoryMap mode) {
    ReaderOptions opt;
    opt.memory_map = mode;
    const InputSet in({d.file(file)}, opt);
    RecordReader r(in, opt);
    RawRecord raw;
    EXPECT_TRUE(io::next_raw(r, raw));
    char name[512];
    return mapped_input_at(raw.bytes.data(), name, sizeof name);
  };
  auto records = [&](const std::string& file, MemoryMap mode) {
    ReaderOptions opt;
    opt.memory_map = mode;
    return read_all_records({d.file(file)}, opt);
  };
  const auto want = records("big.jsonl", MemoryMap::Never);
  ASSERT_GT(want.size(), 50'000u);

  map_choice_for_testing(0);
  EXPECT_FALSE(first_line_mapped("small.jsonl", MemoryMap::Auto));
  EXPECT_EQ(map_choice_for_testing(), 0) << "a file under 4 MiB is not measured on";
  const bool mapped = first_line_mapped("big.jsonl", MemoryMap::Auto);
  const int measured = map_choice_for_testing();
  EXPECT_TRUE(measured == 1 || measured == 2) << measured;
  EXPECT_EQ(mapped, measured == 1);
  EXPECT_TRUE(records("big.jsonl", MemoryMap::Auto) == want);

  for (const int choice : {1, 2}) {
    map_choice_for_testing(choice);
    EXPECT_EQ(first_line_mapped("big.jsonl", MemoryMap::Auto), choice == 1) << choice;
    EXPECT_EQ(first_line_mapped("small.jsonl", MemoryMap::Auto), choice == 1) << choice;
    EXPECT_TRUE(records("big.jsonl", MemoryMap::Auto) == want) << choice;
    EXPECT_TRUE(first_line_mapped("big.jsonl", MemoryMap::Always)) << choice;
    EXPECT_FALSE(first_line_mapped("big.jsonl", MemoryMap::Never)) << choice;
  }
  map_choice_for_testing(saved);
}

// Lines of 16 MiB and more: the line buffer asks for huge pages as it grows past 16 MiB and keeps
// growing in place (mremap), and must hold every byte as read. A pattern that is not periodic in
// pages shows any page lost or misplaced in the growth.
TEST(Reader, LinesPastTheHugePageAdviceKeepEveryByte) {
  test::TempDir d;
  std::string jsonl;
  std::vector<std::string> lines;
  uint64_t x = 88172645463325252ULL;
  for (const size_t n : {size_t{20'000'000}, size_t{100}, size_t{40'000'000}}) {
    std::string t(n, ' ');
    for (char& c : t) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>('a' + x % 26);
    }
    lines.push_back("{\"id\": \"n" + std::to_string(n) + "\", \"text\": \"" + t + "\"}");
    jsonl += lines.back() + "\n";
  }
  test::write_file(d.file("huge.jsonl"), jsonl);
  const auto r = read_all_records({d.file("huge.jsonl")});
  ASSERT_EQ(r.size(), lines.size());
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].line, i + 1);
    EXPECT_TRUE(r[i].raw == lines[i]) << i;
  }
}

// Reading by position (RecordReader::select) returns exactly the records a full read returns at
// those positions, in plain, gzip and zstd files, across sources, with gaps of any size.
TEST(Reader, SelectReadsTheRecordsAtTheirPositions) {
  test::TempDir d;
  std::mt19937_64 rng(4);
  std::string data;
  for (int i = 0; i < 3000; ++i) {
    data += "{\"id\": \"r" + std::to_string(i) + "\", \"text\": \"" + std::string(rng() % 700, 'a' + static_cast<char>(i % 26)) + "\"}";
    data += i % 7 == 0 ? "\r\n" : "\n";
    if (i % 11 == 0) data += "\n  \n";  // blank lines are not records
  }
  test::write_file(d.file("a.jsonl"), data);
  test::write_file(d.file("b.jsonl.gz"), gzip(data));
  test::write_file(d.file("c.jsonl.zst"), zstd(data));
  InputSet in({d.file("a.jsonl"), d.file("b.jsonl.gz"), d.file("c.jsonl.zst")}, InputFormat::Auto);
  std::vector<RecordPos> all;
  std::vector<std::string> raws, ids;
  {
    RecordReader r(in, {});
    Record rec;
    while (r.next(rec)) {
      all.push_back({static_cast<uint32_t>(rec.source), static_cast<uint32_t>(rec.raw.size()), rec.offset});
      raws.emplace_back(rec.raw);
      ids.emplace_back(rec.id);
    }
  }
  ASSERT_EQ(all.size(), 9000u);
  for (const int stride : {1, 2, 37, 1000}) {
    std::vector<RecordPos> at;
    std::vector<size_t> which;
    for (size_t i = static_cast<size_t>(stride) / 2; i < all.size(); i += static_cast<size_t>(stride)) {
      at.push_back(all[i]);
      which.push_back(i);
    }
    RecordReader r(in, {});
    r.select(at);
    Record rec;
    size_t k = 0;
    while (r.next(rec)) {
      ASSERT_LT(k, which.size());
      EXPECT_EQ(rec.raw, raws[which[k]]) << stride << " " << k;
      EXPECT_EQ(rec.id, ids[which[k]]);
      EXPECT_EQ(rec.offset, all[which[k]].offset);
      ++k;
    }
    EXPECT_EQ(k, which.size()) << stride;
  }
  // A position that no longer holds a line of that length: the input changed. The line's end is
  // checked where the length puts it, mapped and read alike, longer and shorter.
  for (const MemoryMap mode : {MemoryMap::Never, MemoryMap::Always}) {
    ReaderOptions opt;
    opt.memory_map = mode;
    for (const int64_t delta : {-1, 1}) {
      RecordReader r(in, opt);
      r.select({{0, static_cast<uint32_t>(all[5].length + delta), all[5].offset}});
      Record rec;
      try {
        r.next(rec);
        ADD_FAILURE() << "accepted a wrong length " << delta;
      } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("a.jsonl: the line at byte"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("the input changed"), std::string::npos) << e.what();
      }
    }
  }
}

// A last line without its newline is read by position too (it ends where the file does), and a
// length past the end of the file is a changed input.
TEST(Reader, SelectReadsALastLineWithoutNewline) {
  test::TempDir d;
  const std::string first = "{\"id\": \"a\", \"text\": \"one two\"}", last = "{\"id\": \"b\", \"text\": \"three four\"}";
  test::write_file(d.file("a.jsonl"), first + "\n" + last);
  InputSet in({d.file("a.jsonl")}, InputFormat::Auto);
  for (const MemoryMap mode : {MemoryMap::Never, MemoryMap::Always}) {
    ReaderOptions opt;
    opt.memory_map = mode;
    {
      RecordReader r(in, opt);
      r.select({{0, static_cast<uint32_t>(last.size()), first.size() + 1}});
      Record rec;
      ASSERT_TRUE(r.next(rec));
      EXPECT_EQ(rec.raw, last);
      EXPECT_EQ(rec.id, "b");
      EXPECT_FALSE(r.next(rec));
    }
    RecordReader r(in, opt);
    r.select({{0, static_cast<uint32_t>(last.size() + 1), first.size() + 1}});
    Record rec;
    EXPECT_THROW(r.next(rec), IoError);
  }
}

// RecordReader::keep_decompressed_copies: each compressed JSONL source read to its end leaves a
// ScratchCopy of its decompressed bytes (none for a plain one); with the copy, InputSet reads
// the source from it, by position too. A copy in a directory without room is none.
TEST(Reader, DecompressedCopiesHoldWhatWasRead) {
  test::TempDir d;
  std::string a, b;
  for (int i = 0; i < 3000; ++i) a += "{\"id\": \"a" + std::to_string(i) + "\", \"text\": \"alpha " + std::to_string(i * 7) + " words\"}\n";
  for (int i = 0; i < 2000; ++i) b += "{\"id\": \"b" + std::to_string(i) + "\", \"text\": \"beta " + std::to_string(i * 3) + " words\"}\n";
  test::write_file(d.file("a.jsonl.gz"), gzip(a));
  test::write_file(d.file("p.jsonl"), a);
  test::write_file(d.file("b.jsonl.zst"), zstd(b));
  if (!ScratchCopy::create(d.path())) GTEST_SKIP() << "no scratch copies in " << d.path() << " (not ext4)";
  ReaderOptions opt;
  InputSet in({d.file("a.jsonl.gz"), d.file("p.jsonl"), d.file("b.jsonl.zst")}, opt);
  std::vector<std::unique_ptr<ScratchCopy>> copies;
  std::vector<RecordPos> pos;
  std::vector<std::string> ids;
  {
    RecordReader r(in, opt);
    r.keep_decompressed_copies(d.path());
    Record rec;
    while (r.next(rec)) {
      pos.push_back({static_cast<uint32_t>(rec.source), static_cast<uint32_t>(rec.raw.size()), rec.offset});
      ids.emplace_back(rec.id);
    }
    std::string why;
    copies = r.take_decompressed_copies(&why);
    EXPECT_EQ(why, "");
  }
  ASSERT_EQ(copies.size(), 3u);
  ASSERT_TRUE(copies[0] && !copies[1] && copies[2]);
  EXPECT_EQ(copies[0]->size(), a.size());
  EXPECT_TRUE(test::read_file(copies[0]->path()) == a);
  EXPECT_TRUE(test::read_file(copies[2]->path()) == b);
  in.read_again_from(0, std::move(copies[0]));
  in.read_again_from(2, std::move(copies[2]));
  EXPECT_TRUE(in.read_from_copy(0) && !in.read_from_copy(1) && in.read_from_copy(2));
  EXPECT_EQ(in.sources()[0].display, d.file("a.jsonl.gz"));  // messages still name the input
  // Every third record by position, from the copies and the plain file.
  std::vector<RecordPos> some;
  for (size_t i = 0; i < pos.size(); i += 3) some.push_back(pos[i]);
  RecordReader r(in, opt);
  r.select(some);
  Record rec;
  size_t n = 0;
  for (; r.next(rec); ++n) EXPECT_EQ(rec.id, ids[n * 3]) << n;
  EXPECT_EQ(n, some.size());
  // A share that stops inside a source (read_sources, as a rank of neardup-mpi reads): no copy
  // of a part.
  {
    InputSet part({d.file("a.jsonl.gz")}, opt);
    RecordReader shared(part, opt);
    shared.read_sources(0, 1, 0, a.size() / 2);
    shared.keep_decompressed_copies(d.path());
    size_t records = 0;
    while (shared.next(rec)) ++records;
    EXPECT_GT(records, 1000u);
    EXPECT_LT(records, 2000u);
    std::string why;
    const auto halves = shared.take_decompressed_copies(&why);
    EXPECT_TRUE(halves.empty() || !halves[0]);
    EXPECT_EQ(why, "the source was not read to its end");
  }
  // No room: none made, and the reason said.
  InputSet again({d.file("a.jsonl.gz")}, opt);
  RecordReader tight(again, opt);
  tight.keep_decompressed_copies(d.path(), uint64_t{1} << 62);
  while (tight.next(rec)) {
  }
  std::string why;
  const auto none = tight.take_decompressed_copies(&why);
  EXPECT_TRUE(none.empty() || !none[0]);
  EXPECT_NE(why.find("no temporary copy can be made in " + d.path()), std::string::npos) << why;
}

// Each kept copy holds a descriptor: no more than a quarter of the open-file limit go to copies,
// the inputs after that have none (and are decompressed again), and the reason names the limit.
TEST(Reader, DecompressedCopiesKeepToAQuarterOfTheOpenFileLimit) {
  test::TempDir d;
  if (!ScratchCopy::create(d.path())) GTEST_SKIP() << "no scratch copies in " << d.path() << " (not ext4)";
  std::vector<std::string> paths;
  for (int f = 0; f < 16; ++f) {
    paths.push_back(d.file("s" + std::to_string(f) + ".jsonl.gz"));
    test::write_file(paths.back(), gzip("{\"id\": \"s" + std::to_string(f) + "\", \"text\": \"shard text\"}\n"));
  }
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  struct rlimit low = old;
  low.rlim_cur = 48;  // 12 copies
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<std::unique_ptr<ScratchCopy>> copies;
  std::string why;
  {
    ReaderOptions opt;
    InputSet in(paths, opt);
    RecordReader r(in, opt);
    r.keep_decompressed_copies(d.path());
    Record rec;
    while (r.next(rec)) {
    }
    copies = r.take_decompressed_copies(&why);
  }
  ::setrlimit(RLIMIT_NOFILE, &old);
  size_t kept = 0;
  for (const auto& c : copies) kept += c != nullptr;
  EXPECT_EQ(kept, 12u);
  EXPECT_NE(why.find("ulimit -n 48"), std::string::npos) << why;
}

// The resident kilobytes of the mapping that starts at `base` (/proc/self/smaps), or -1.
long mapping_rss_kb(const void* base) {
  std::ifstream smaps("/proc/self/smaps");
  const auto want = reinterpret_cast<uintptr_t>(base);
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {
      in = lo == want;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

// release_mapped_line lets go of a mapped line's whole pages (the mapping's resident memory falls
// to nothing), which read the same afterwards (mapped again from the page cache); a line within
// one page, or an unaligned one, is harmless.
TEST(Reader, ReleasedMappedLinesReadTheSame) {
  test::TempDir d;
  std::mt19937_64 rng(43);
  std::string data(5 << 20, '\0');
  for (char& c : data) c = static_cast<char>('a' + rng() % 26);
  test::write_file(d.file("m.txt"), data);
  const int fd = ::open(d.file("m.txt").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void* m = ::mmap(nullptr, data.size(), PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  const char* base = static_cast<const char*>(m);
  ASSERT_TRUE(std::string_view(base, data.size()) == data);
  EXPECT_GE(mapping_rss_kb(base), 4096);  // every page read: mapped
  release_mapped_line(std::string_view(base + 1234, (4 << 20) + 777));
  release_mapped_line(std::string_view(base + 10, 100));
  EXPECT_TRUE(std::string_view(base, data.size()) == data);
  release_mapped_line(std::string_view(base, data.size()));
  EXPECT_LT(mapping_rss_kb(base), 64);
  EXPECT_TRUE(std::string_view(base, data.size()) == data);
  ::munmap(m, data.size());
  ::close(fd);
}

// A file whose size is not its length (sysfs states 4096 bytes for a few) reads whole, without
// being taken for a file cut while it was read.
TEST(Reader, AVirtualFileIsNotTakenForAShrunkOne) {
  const std::string path = "/sys/devices/system/cpu/online";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_blocks != 0 || st.st_size <= 16) GTEST_SKIP() << "no sysfs file to read here";
  ReaderOptions opt;
  opt.format = InputFormat::Text;
  const InputSet in({path}, opt);
  RecordReader r(in, opt);
  Record rec;
  ASSERT_TRUE(r.next(rec));
  EXPECT_LT(rec.text.size(), static_cast<size_t>(st.st_size));
  EXPECT_FALSE(rec.text.empty());
}

// A file read in order is asked for ahead of the window or buffer being read: with only the
// first record read, the file's bytes 12-20 MiB on come into the page cache, mapped or read by
// read(2) (the kernel's own readahead reaches 8 MiB at most on the machines we know). Read by
// position, nothing is asked for.
TEST(Reader, FileReadInOrderIsReadAhead) {
  test::TempDir d;
  std::string data;
  for (int i = 0; data.size() < (24u << 20); ++i) data += "{\"id\": \"" + std::to_string(i) + "\", \"text\": \"" + std::string(900, 'a' + i % 26) + "\"}\n";
  test::write_file(d.file("a.jsonl"), data);
  const int fd = ::open(d.file("a.jsonl").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const uint64_t from = 12 << 20, to = 20 << 20, pages = (to - from) / 4096;
  auto drop = [&] {
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    return test::cached_pages(fd, from, to) == 0;
  };
  // Waits up to 5 s for the reads started to land.
  auto read_ahead = [&] {
    for (int i = 0; i < 500 && test::cached_pages(fd, from, to) < pages; ++i) ::usleep(10000);
    return test::cached_pages(fd, from, to);
  };
  if (!drop()) {
    ::close(fd);
    GTEST_SKIP() << "this file system keeps the file's pages (tmpfs?): read-ahead cannot be seen";
  }
  for (const MemoryMap mode : {MemoryMap::Always, MemoryMap::Never}) {
    SCOPED_TRACE(mode == MemoryMap::Always ? "mapped" : "read(2)");
    ReaderOptions opt;
    opt.memory_map = mode;
    const InputSet in({d.file("a.jsonl")}, opt);
    ASSERT_TRUE(drop());
    {
      RecordReader r(in, opt);
      Record rec;
      ASSERT_TRUE(r.next(rec));
      EXPECT_EQ(rec.id, "0");
      EXPECT_EQ(read_ahead(), pages);
    }
    ASSERT_TRUE(drop());
    {
      RecordReader r(in, opt);
      const size_t at = data.find("{\"id\": \"100\"");
      r.select(std::vector<RecordPos>{{0, static_cast<uint32_t>(data.find('\n', at) - at), at}});
      RawRecord raw;
      const uint64_t asked = pages_asked_for_testing();
      ASSERT_TRUE(io::next_raw(r, raw));
      EXPECT_EQ(pages_asked_for_testing(), asked);  // read by position: nothing asked for ahead
    }
  }
  ::close(fd);
}

// ---- Sampling the inputs to plan a run (sample_inputs) ----

TEST(Reader, SampleCountsExactlyWhenTheInputsAreReadWhole) {
  test::TempDir d;
  test::write_file(d.file("x.jsonl"), kJsonl);
  InputSet in({d.file("x.jsonl")}, InputFormat::Auto);
  size_t calls = 0;
  double text = 0;
  const InputSample s = sample_inputs(in, {}, 1 << 20, [&](std::string_view, std::string_view t) {
    ++calls;
    text += static_cast<double>(t.size());
  });
  EXPECT_TRUE(s.whole);
  EXPECT_EQ(calls, 4u);
  EXPECT_EQ(s.sampled_records, 4u);
  EXPECT_DOUBLE_EQ(s.records, 4);
  EXPECT_DOUBLE_EQ(s.text_bytes, text);
  EXPECT_DOUBLE_EQ(s.data_bytes, static_cast<double>(kJsonl.size()));
}

TEST(Reader, SampleEstimatesLargeInputsFromAFraction) {
  // 6,000 records whose texts grow along the file (a file sorted by length is the hard case
  // for a sample), one line in ten bad; plain, and shuffled in gzip and zstd.
  std::mt19937_64 rng(7);
  std::vector<std::string> lines;
  double good = 0, text = 0;
  for (int i = 0; i < 6000; ++i) {
    if (i % 10 == 3) {
      lines.push_back("not json at all");
      continue;
    }
    const std::string t = test::join(test::random_words(rng, 4 + static_cast<size_t>(i) / 24));
    lines.push_back("{\"id\": \"doc-" + std::to_string(i) + "\", \"text\": \"" + t + "\"}");
    good += 1;
    text += static_cast<double>(t.size());
  }
  std::string sorted;
  for (const auto& l : lines) sorted += l + "\n";
  std::shuffle(lines.begin(), lines.end(), rng);
  std::string shuffled;
  for (const auto& l : lines) shuffled += l + "\n";
  test::TempDir d;
  test::write_file(d.file("plain.jsonl"), sorted);
  test::write_file(d.file("a.jsonl.gz"), gzip(shuffled));
  test::write_file(d.file("b.jsonl.zst"), zstd(shuffled));
  ReaderOptions opt;
  opt.on_error = OnError::Skip;
  for (const std::string name : {"plain.jsonl", "a.jsonl.gz", "b.jsonl.zst"}) {
    SCOPED_TRACE(name);
    InputSet in({d.file(name)}, InputFormat::Auto);
    size_t calls = 0;
    const InputSample s = sample_inputs(in, opt, 256 << 10, [&](std::string_view id, std::string_view) {
      EXPECT_EQ(id.substr(0, 4), "doc-");
      ++calls;
    });
    EXPECT_FALSE(s.whole);
    EXPECT_EQ(calls, s.sampled_records);
    EXPECT_GT(s.sampled_records, 100u);
    EXPECT_LT(s.sampled_bytes, sorted.size() / 2);
    EXPECT_NEAR(s.records / good, 1.0, 0.1);
    EXPECT_NEAR(s.text_bytes / text, 1.0, 0.1);
    EXPECT_NEAR(s.data_bytes / static_cast<double>(sorted.size()), 1.0, 0.1);
  }
}

TEST(Reader, SampleTakesTheDecompressedSizeACompressedFileStates) {
  // The start compresses far better than the rest (one record repeated, then random hex words):
  // by the sample's ratio alone the file would be 1.6x its size. zstd's frame header and gzip's
  // ISIZE state it; a file of two gzip members states its last one's, which is not believed.
  std::mt19937_64 rng(13);
  std::string data;
  while (data.size() < (6u << 20)) data += "{\"id\": \"r\", \"text\": \"the same words again and again\"}\n";
  char word[20];
  while (data.size() < (16u << 20)) {
    std::string t;
    for (int w = 0; w < 100; ++w) {
      std::snprintf(word, sizeof word, "%016llx ", static_cast<unsigned long long>(rng()));
      t += word;
    }
    data += "{\"id\": \"x\", \"text\": \"" + t + "\"}\n";
  }
  test::TempDir d;
  test::write_file(d.file("a.jsonl.zst"), zstd(data));
  test::write_file(d.file("b.jsonl.gz"), gzip(data));
  test::write_file(d.file("c.jsonl.gz"), gzip(data) + gzip("{\"id\": \"last\", \"text\": \"a short last member\"}\n"));
  const auto size_of = [&](const std::string& name) {
    InputSet in({d.file(name)}, InputFormat::Auto);
    return sample_inputs(in, {}, 256 << 10, [](std::string_view, std::string_view) {}).data_bytes;
  };
  const double n = static_cast<double>(data.size());
  EXPECT_DOUBLE_EQ(size_of("a.jsonl.zst"), n);
  EXPECT_DOUBLE_EQ(size_of("b.jsonl.gz"), n);
  const double two_members = size_of("c.jsonl.gz");
  EXPECT_GT(two_members, n);  // by the ratio of the start, which compresses better
  EXPECT_LT(two_members, 4 * n);
  EXPECT_EQ(stated_decompressed_size(d.file("c.jsonl.gz")), std::optional<uint64_t>(46));
  EXPECT_EQ(stated_decompressed_size(d.file("a.jsonl.zst")), std::optional<uint64_t>(data.size()));
  test::write_file(d.file("plain.jsonl"), data.substr(0, 1000));
  EXPECT_EQ(stated_decompressed_size(d.file("plain.jsonl")), std::nullopt);  // no magic: states nothing
}

TEST(Reader, SampleScalesTextFilesPastItsBudgetByTheCompressionTheirNamesSay) {
  // Three zstd text files named .zstd; the sample reads 64 KB of the first, and the other two,
  // past its budget, are not opened: each counts as its decompressed size (as the file states
  // it), not as its compressed one.
  std::mt19937_64 rng(17);
  const std::string text = test::join(test::random_words(rng, 40000));
  test::TempDir d;
  std::filesystem::create_directories(d.file("texts"));
  for (const char* name : {"a", "b", "c"}) test::write_file(d.file(std::string("texts/") + name + ".txt.zstd"), zstd(text));
  InputSet in({d.file("texts")}, InputFormat::Auto);
  const InputSample s = sample_inputs(in, {}, 64 << 10, [](std::string_view, std::string_view) {});
  EXPECT_FALSE(s.whole);
  EXPECT_DOUBLE_EQ(s.data_bytes, 3.0 * static_cast<double>(text.size()));
}

TEST(Reader, SampleOfRecordsLongerThanItCanReadCountsTheirText) {
  // One record of 3 MB, sampled with 256 KB: no whole line is seen. The sample then counts one
  // record per file and all of its bytes as text (the most it can be), not nothing.
  std::mt19937_64 rng(11);
  std::string text;
  while (text.size() < (3u << 20)) text += test::join(test::random_words(rng, 1000)) + " ";
  const std::string line = "{\"id\": \"big\", \"text\": \"" + text + "\"}\n";
  test::TempDir d;
  test::write_file(d.file("big.jsonl"), line);
  InputSet in({d.file("big.jsonl")}, InputFormat::Auto);
  size_t calls = 0;
  const InputSample s = sample_inputs(in, {}, 256 << 10, [&](std::string_view, std::string_view) { ++calls; });
  EXPECT_FALSE(s.whole);
  EXPECT_EQ(calls, 0u);
  EXPECT_DOUBLE_EQ(s.records, 1);
  EXPECT_GE(s.text_bytes, static_cast<double>(text.size()));
  EXPECT_LE(s.text_bytes, static_cast<double>(line.size()));
  EXPECT_GT(s.sampled_bytes, 0u);
}

TEST(Reader, SampleScalesEveryInputAndCountsTextFiles) {
  test::TempDir d;
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "{\"id\": \"" + std::to_string(i) + "\", \"text\": \"some words here\"}\n";
  test::write_file(d.file("one.jsonl"), many);
  test::write_file(d.file("two.jsonl"), many);  // not sampled: scaled by its size
  std::filesystem::create_directories(d.file("texts"));
  for (int i = 0; i < 30; ++i) test::write_file(d.file("texts/" + std::to_string(i) + ".txt"), std::string(100, 'x'));
  InputSet in({d.file("one.jsonl"), d.file("two.jsonl"), d.file("texts")}, InputFormat::Auto);
  const InputSample s = sample_inputs(in, {}, 64 << 10, [](std::string_view, std::string_view) {});
  EXPECT_FALSE(s.whole);
  EXPECT_NEAR(s.records, 40030, 40000 * 0.05);
  EXPECT_NEAR(s.text_bytes, 40000 * 15 + 30 * 100, 40000 * 15 * 0.05);
}

namespace {

// Parses `line` with a parser, padded as the reader pads; "!" + the problem when it is bad.
struct Parsed {
  bool ok = false;
  std::string id, text, problem;
  uint64_t text_length = 0;
  io::KeyValue::Kind key_kind = io::KeyValue::Kind::Missing;
  double key_number = 0;
  std::string key_text;
};

Parsed parse_with(io::JsonlParser& parser, const std::string& line) {
  const std::string padded = line + std::string(io::JsonlParser::kPadding, ' ');
  io::Source src;
  src.display = "t.jsonl";
  io::Record rec;
  Parsed p;
  p.ok = parser.parse(std::string_view(padded.data(), line.size()), src, 7, rec, p.problem);
  if (!p.ok) return p;
  p.problem.clear();
  p.id = rec.id;
  p.text = rec.text;
  p.text_length = parser.text_length();
  p.key_kind = rec.key.kind;
  p.key_number = rec.key.number;
  p.key_text = rec.key.text;
  return p;
}

// The word-text parser against the full one: the same verdict and message, the same id and key,
// the decoded length, and the same words.
void expect_same_record(io::JsonlParser& full, io::JsonlParser& words, const std::string& line) {
  const Parsed a = parse_with(full, line), b = parse_with(words, line);
  ASSERT_EQ(a.ok, b.ok) << line << "\n" << a.problem << "\n" << b.problem;
  EXPECT_EQ(a.problem, b.problem) << line;
  EXPECT_EQ(std::string(full.problem_kind()), std::string(words.problem_kind())) << line;
  if (!a.ok) return;
  EXPECT_EQ(a.id, b.id) << line;
  EXPECT_EQ(a.text_length, a.text.size()) << line;
  EXPECT_EQ(b.text_length, a.text.size()) << line;
  EXPECT_EQ(split_words(b.text), split_words(a.text)) << line;
  EXPECT_EQ(a.key_kind, b.key_kind) << line;
  EXPECT_EQ(a.key_number, b.key_number) << line;
  EXPECT_EQ(a.key_text, b.key_text) << line;
  EXPECT_EQ(full.replaced_invalid_utf8(), words.replaced_invalid_utf8()) << line;
  EXPECT_EQ(full.missing_id(), words.missing_id()) << line;
}

struct WordTextOnShortLines {
  WordTextOnShortLines() : old(io::set_word_text_min_line(0)) {}
  ~WordTextOnShortLines() { io::set_word_text_min_line(old); }
  size_t old;
};

}  // namespace

// A line of kWordTextMaxLine or more is made word text (\u escapes decoded, the others blanked),
// a piece at a time, in place where the parser may overwrite it and into the parser's own buffer
// where not: the same verdict, id, decoded length and words as the full parse, with escapes and
// \u escapes across the pieces' and the kernel's block edges; and a line it hands to the full
// parse (a lone surrogate, an unknown escape, a control character, invalid UTF-8, no closing
// quote, a bad skeleton) keeps its bytes.
TEST(Reader, LongLineWordTextAgreesWithTheFullParser) {
  io::ReaderOptions opt;
  io::JsonlParser full(opt);
  std::mt19937_64 rng(29);
  static const char* const kParts[] = {"\\n", "\\t", "\\\"", "\\\\", "\\/", "\\u00e9", "\\u4e2d\\u6587", "\\ud83d\\ude00",
                                       "caf\xC3\xA9", "\xE4\xB8\xAD", " ", "x\\\\\\\\y", "\\u0041BC", "\\u002f"};
  // Valid contents; one of the escapes below straddles each edge of the first 256 KiB pieces.
  const auto contents = [&](size_t len, bool with_u) {
    static const char* const kEdge[] = {"\\u00e9", "\\n", "\\ud83d\\ude00", "\\\\"};
    const size_t edges[] = {size_t{256} << 10, size_t{512} << 10, size_t{1} << 20};
    size_t next_edge = 0, near = edges[0] - rng() % 11;
    std::string c;
    while (c.size() < len) {
      if (next_edge < 3 && c.size() >= near) {
        c += kEdge[rng() % 4];
        if (++next_edge < 3) near = edges[next_edge] - rng() % 11;
        continue;
      }
      const size_t part = rng() % 24;
      if (part < 14 && (with_u || std::string_view(kParts[part]).find("\\u") == std::string_view::npos)) c += kParts[part];
      else c += static_cast<char>('a' + rng() % 26);
    }
    return c;
  };
  const auto parse_in_place = [&](io::JsonlParser& parser, std::string& padded, size_t n, Parsed& p) {
    io::Source src;
    src.display = "t.jsonl";
    io::Record rec;
    p.ok = parser.parse(std::string_view(padded.data(), n), src, 7, rec, p.problem, padded.data());
    if (!p.ok) return;
    p.id = rec.id;
    p.text = rec.text;
    p.text_length = parser.text_length();
  };
  const size_t big = io::kWordTextMaxLine + 1000;
  int in_place = 0, copied = 0;
  io::JsonlParser copying_parsers[2] = {io::JsonlParser(opt, true, 1), io::JsonlParser(opt, true, 2)};
  for (int round = 0; round < 8; ++round) {
    const int damage = round % 8;
    std::string line = "{\"id\": \"r" + std::to_string(round) + "\", \"text\": \"" + contents(big, round % 3 != 0) + "\", \"n\": [1, 2]}";
    // A defect where a plain letter of the contents was (not inside an escape).
    const auto plain = [&](size_t at) {
      while (!(line[at - 1] >= 'g' && line[at - 1] <= 'z' && line[at - 2] != '\\')) ++at;
      return at;
    };
    const bool damaged = damage >= 1 && damage <= 6;
    if (damage == 1) line.insert(plain(line.size() / 2), "\\ud800 ");  // a lone surrogate: replaced by the full parse
    if (damage == 2) line.insert(plain(line.size() / 3), "\\x");
    if (damage == 3) line.insert(plain(line.size() / 2), "\x01");
    if (damage == 4) line.insert(plain(line.size() - 100000), "\xff");
    if (damage == 5) line.erase(line.size() - 16);  // no closing quote, no closing brace
    if (damage == 6) line.replace(line.size() - 1, 1, ",}");
    const Parsed a = parse_with(full, line);
    // The verdict, message, id, decoded length and words of the full parse; whether it parsed.
    const auto agrees = [&](const Parsed& x, const char* path) {
      EXPECT_EQ(a.ok, x.ok) << "round " << round << ", " << path << ": " << a.problem << " / " << x.problem;
      if (!a.ok || !x.ok) {
        EXPECT_EQ(a.problem, x.problem) << "round " << round << ", " << path;
        return false;
      }
      EXPECT_EQ(a.id, x.id) << "round " << round << ", " << path;
      EXPECT_EQ(x.text_length, a.text.size()) << "round " << round << ", " << path;
      EXPECT_EQ(split_words(x.text), split_words(a.text)) << "round " << round << ", " << path;
      return true;
    };
    std::string padded = line + std::string(io::JsonlParser::kPadding, ' ');
    const std::string before = padded;
    io::JsonlParser words(opt, true, round % 2 ? 2 : 1);  // in parts on 2 threads, or in one
    Parsed b;
    parse_in_place(words, padded, line.size(), b);
    const bool b_ok = agrees(b, "in place");
    if (!b_ok || damaged) {
      EXPECT_TRUE(padded == before) << "round " << round << ": a line handed to the full parse was changed";
    }
    if (b_ok && !damaged) {
      EXPECT_TRUE(padded != before) << "round " << round << ": the in-place path was not taken";
      ++in_place;
    }
    // The same line where it may not be overwritten (a mapped file): word text into the parser's
    // own buffer, in the same parts, or the full parse where the line is damaged. The parsers
    // serve every round, with a short line between: the buffer kept from the last long line is
    // written anew.
    io::JsonlParser& copying = copying_parsers[round % 2];
    ASSERT_TRUE(parse_with(copying, R"({"id": "short", "text": "a short line between long ones"})").ok);
    const Parsed c = parse_with(copying, line);
    // Word text keeps each escape but \u ones as two blanks: longer than the decoded text.
    if (agrees(c, "copied") && !damaged) {
      EXPECT_GT(c.text.size(), a.text.size()) << "round " << round << ": the word text path was not taken";
      ++copied;
    }
  }
  EXPECT_EQ(in_place, 2);  // rounds 0 (one part, no \u escapes) and 7 (parts, with them)
  EXPECT_EQ(copied, 2);
  // A parser that met a \u escape in a short line (and parses the next ones whole) still makes a
  // long line word text in place.
  io::JsonlParser words(opt, true, 2);
  EXPECT_TRUE(parse_with(words, R"({"id": "s", "text": "caf\u00e9 and more words than two hundred and fifty six bytes )" +
                                    std::string(300, 'x') + "\"}").ok);
  std::string line = "{\"id\": \"long\", \"text\": \"" + contents(big, true) + "\"}";
  std::string padded = line + std::string(io::JsonlParser::kPadding, ' ');
  const std::string before = padded;
  Parsed b;
  parse_in_place(words, padded, line.size(), b);
  ASSERT_TRUE(b.ok) << b.problem;
  EXPECT_TRUE(padded != before);
  EXPECT_EQ(split_words(b.text), split_words(parse_with(full, line).text));
}

// Word text (escapes read as spaces) gives what the full parse gives, on lines that take the
// fast path and on every kind of line it must hand back to the full parse.
TEST(Reader, WordTextParserAgreesWithTheFullParser) {
  WordTextOnShortLines short_lines;
  io::ReaderOptions opt;
  opt.key_field = "q";
  opt.max_doc_bytes = 40;
  io::JsonlParser full(opt);
  const std::vector<std::string> lines = {
      R"({"id": "a", "text": "int main() {\n\treturn \"x\\y\";\n}", "q": 3})",
      R"({"text": "no id \/ here\r\n", "q": "2024-01-01"})",
      R"({"id": 17, "text": "caf\u00e9 \ud83d\ude00 and \ud800 alone"})",  // \u: decoded by the full parse
      R"({"id": "b", "text": "tab\x escape"})",                             // an unknown escape
      "{\"id\": \"c\", \"text\": \"raw \x01 control\"}",
      "{\"id\": \"d\", \"text\": \"bad \xff utf-8\"}",
      R"({"id": "e", "text": 42})",
      R"({"id": "f"})",
      R"({"id": "g", "te\u0078t": "escaped key", "text": "plain key"})",
      R"({"id": "h", "text": "first", "text": "second"})",
      R"({"id": "i", "te\u0078t": "", "text": "x"})",  // the first is the text, which the walk does not find
      R"({"id": "j", "text": "ok", "x": [1, 2)",
      R"({"id": "k", "text": "ok", "x": 01})",
      R"({"id": "l", "text": "ok",})",
      R"({"id": "m", "text": "ok"} trailing)",
      R"(["text", "not an object"])",
      R"({"id": [1], "text": "bad id"})",
      R"({"id": "n\tm", "text": "tab in id"})",
      R"({"id": "o", "text": "a text longer than forty bytes, cut by max_doc_bytes\n\n"})",
      R"({"id": "p", "text": "forty bytes once decoded\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"})",
      R"({"id": "q", "text": "bad key", "q": [1]})",
      R"({"id": "r", "text" : "spaces around" , "q" : null })",
      R"({"id": "s", "text": "ends in a backslash\\"})",
      R"({"id": "t", "text": "escaped quote at the end\""})",
      R"({"id": "u", "meta": {"text": "nested"}, "text": "top"})",
      R"(  {"id": "v", "text": "leading spaces"}  )",
      R"({"id": "text", "a": ["text", {"text": "inner"}], "text" : "outer\n"})",  // the walk keeps to the top level
      R"({"meta": {"text": "nested\nfirst"}, "text": ""})",
      R"({"id": "w", "text": "unterminated)",
      R"({"id": "x", "text": "two "quotes" and \" an end"})",
      "{\"long\": \"" + std::string(5000, 'z') + "\", \"text\": \"after a long field\\n\"}",
      "{\"id\": \"y\", \"text\": \"caf\xC3\xA9\\n cr\xC3\xA8me\", \"bad\": \"\xC3\"}",  // invalid UTF-8 after the text
      R"({"id": "z", "text": "caf\u00e9\n\tna\u00efve \"x\""})",  // a few \u escapes: word text, its block decoded
      R"({"id": "z2", "text": "\u4e2d\u6587\u4e2d\u6587\u4e2d\u6587\u4e2d\u6587\n"})",  // dense: for the full parse
      R"({"id": "a", "text": "int main() {\n\treturn \"x\\y\";\n}", "q": 3})",  // word text again, after \u escapes
      // Skeletons read without the DOM parser where flat (printable ASCII strings, integers), by
      // the DOM otherwise: repeated names (the first counts), integers at and past 18 digits,
      // forms the flat reader leaves to the DOM.
      R"({"id": "first", "id": "second", "text": "repeated id\n", "q": 1, "q": 2})",
      R"({"id": -42, "text": "negative id\n", "q": -7})",
      R"({"id": 123456789012345678, "text": "18 digits\n", "q": 123456789012345678})",
      R"({"id": 1234567890123456789, "text": "19 digits\n", "q": 9007199254740993})",
      R"({"id": 1e3, "text": "exponent\n", "q": 0.5})",
      R"({"id": -0, "text": "minus zero\n", "q": 0})",
      R"({"id": 007, "text": "leading zeros\n"})",
      R"({"id": "caf\u00e9", "text": "escaped id\n", "q": true})",
      "{\"id\": \"caf\xC3\xA9\", \"text\": \"UTF-8 id\\n\", \"q\": \"\x7F\"}",
      R"({"id":"tight","text":"no spaces\n","q":"k"})",
      "{\"id\": \"ws\",\t\"text\": \"tabs and CR\\n\"\r\n}",
      R"({"id": "nested", "text": "nested key\n", "q": {"a": 1}})",
      R"({"id": "empty", "text": "x\n", "": 1})",
  };
  // A fresh word-text parser for each line, and one parser for them all: a line's text is the
  // same whatever lines its parser met before (a \u escape does not send the next lines to the
  // full parse).
  io::JsonlParser shared(opt, true);
  for (const std::string& line : lines) {
    io::JsonlParser words(opt, true);
    expect_same_record(full, words, line);
    const Parsed fresh = parse_with(words, line), again = parse_with(shared, line);
    EXPECT_EQ(fresh.ok, again.ok) << line;
    EXPECT_EQ(fresh.text, again.text) << line;
  }
  // A short line with a \u escape takes word text: the 64-byte block that holds the escape is
  // decoded, the escapes of the other blocks are blanked (the full parse would decode them all).
  {
    io::ReaderOptions plain;
    io::JsonlParser words(plain, true), whole(plain);
    const std::string filler(70, 'a');
    const std::string line = R"({"id": "z", "text": "caf\u00e9 )" + filler + R"(\n\tend"})";
    expect_same_record(whole, words, line);
    EXPECT_EQ(parse_with(words, line).text, "caf\xC3\xA9 " + filler + "    end");
  }
  // These take word text (their escapes come as spaces, not decoded), so the agreement above is
  // the fast path's, not the full parse's with itself.
  for (const size_t i : {0, 1, 19, 22, 23, 26, 30}) {
    io::JsonlParser words(opt, true);
    const Parsed a = parse_with(full, lines[i]), b = parse_with(words, lines[i]);
    ASSERT_TRUE(a.ok && b.ok) << lines[i];
    EXPECT_NE(a.text, b.text) << lines[i];
    EXPECT_EQ(b.text.find_first_of("\n\t\r\"\\"), std::string::npos) << lines[i];
  }
  // Random damage to good lines: whatever the full parse says, the word text path says too.
  std::mt19937_64 rng(21);
  const std::string alphabet = "\\\"{}[],: nt u0x\x01\xc3\xa9";
  for (int round = 0; round < 20000; ++round) {
    std::string line = lines[rng() % 2];
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) {
      const size_t at = rng() % (line.size() + 1);
      if (rng() % 2) line.insert(at, 1, alphabet[rng() % alphabet.size()]);
      else if (at < line.size()) line.erase(at, 1);
    }
    io::JsonlParser words(opt, true);
    expect_same_record(full, words, line);
    if (testing::Test::HasFailure()) return;
  }
}
