// Helpers shared by the unit tests.
#pragma once

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "neardup/cpu.h"
#include "neardup/io/reader.h"

namespace neardup::test {

/// Whether the tests run under AddressSanitizer or ThreadSanitizer (3-10x slower): a statistical
/// check of plain arithmetic over a large random sample runs only in the optimized build, where
/// it takes seconds, not half a minute.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

/// The instruction sets this CPU runs, scalar first (for force_isa).
inline std::vector<Isa> available_isas() {
  std::vector<Isa> v{Isa::Scalar};
  if (detected_isa() >= Isa::Avx2) v.push_back(Isa::Avx2);
  if (detected_isa() >= Isa::Avx512) v.push_back(Isa::Avx512);
  if (detected_isa() >= Isa::Avx512Vbmi) v.push_back(Isa::Avx512Vbmi);
  return v;
}

/// A fresh directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "neardup-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Pages of `fd`'s bytes [from, to) in the page cache (mincore on a mapping of them).
inline size_t cached_pages(int fd, uint64_t from, uint64_t to) {
  void* m = ::mmap(nullptr, to - from, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(from));
  if (m == MAP_FAILED) return 0;
  std::vector<unsigned char> in((to - from + 4095) / 4096);
  size_t n = 0;
  if (::mincore(m, to - from, in.data()) == 0)
    for (const unsigned char c : in) n += c & 1;
  ::munmap(m, to - from);
  return n;
}

// The sample corpus's documents (data/sample), as (id, text) in input order.
inline std::vector<io::Document> sample_documents() {
  std::vector<io::Document> docs;
  io::InputSet in({NEARDUP_SAMPLE_DIR "/mmds-articles-2500.jsonl.zst"}, io::InputFormat::Auto);
  io::RecordReader reader(in, io::ReaderOptions{});
  io::Record r;
  while (reader.next(r)) docs.push_back({std::string(r.id), std::string(r.text)});
  return docs;
}

inline void write_file(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f << content;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// A text of `n` words drawn from a vocabulary of `vocab` pseudo-words.
inline std::vector<std::string> random_words(std::mt19937_64& rng, size_t n, size_t vocab = 5000) {
  std::vector<std::string> w(n);
  std::uniform_int_distribution<size_t> d(0, vocab - 1);
  for (auto& s : w) s = "w" + std::to_string(d(rng));
  return w;
}

/// n random 64-bit values: a random set of shingle hashes (repeats are vanishingly unlikely).
inline std::vector<uint64_t> random_set(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = rng();
  return v;
}

inline std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) s += ' ';
    s += words[i];
  }
  return s;
}

/// A near-copy of `base`: fewer than `edits` of its words (a random count) replaced by `mark` and a
/// number below 1000, joined.
inline std::string edited(std::mt19937_64& rng, std::vector<std::string> w, int edits, const std::string& mark = "e") {
  for (int e = 0; e < static_cast<int>(rng() % static_cast<uint64_t>(edits)); ++e) w[rng() % w.size()] = mark + std::to_string(rng() % 1000);
  return join(w);
}

/// gzip and zstd compressions of `data` (test inputs).
inline std::string gzip(const std::string& data) {
  std::string out(compressBound(data.size()) + 64, '\0');
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

inline std::string zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3));
  return out;
}

}  // namespace neardup::test
