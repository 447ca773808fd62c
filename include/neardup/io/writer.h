// Output files that never leave a half-written file in place: data goes to a temporary file in
// the destination's directory, which commit() flushes, syncs and renames over the destination.
// A writer destroyed without commit() (an error, an exception) removes its temporary file, so an
// existing file at the destination is never damaged. "-" writes to standard output directly.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace neardup::io {

class AtomicFile {
 public:
  /// Creates the temporary file next to `path`. Throws IoError if it cannot.
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view data);
  void put(char c);
  /// Flushes, fsyncs and renames into place. Throws IoError (for example on a full disk).
  void commit();
  const std::string& path() const noexcept { return path_; }

 private:
  [[noreturn]] void fail(const char* what);
  std::string path_;
  std::string temp_;
  std::FILE* f_ = nullptr;
  bool stdout_ = false;
};

}  // namespace neardup::io
