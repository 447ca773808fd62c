// Several outputs of one run moved into place as one commit (io::commit_together).
//
// A run that writes several outputs (the kept records, the removed table, the clusters, the
// rejects, a report, an index) must not leave some of them new and others old: a script that
// checks for the kept file would take a failed run for a finished one. Every output is finished
// (synced) before any is moved, so a full disk or an I/O error while writing leaves all of them
// as they were. Moving them is a rename each, which can itself fail (a full directory, an I/O
// error, a read-only remount); an existing file is therefore exchanged with the new one
// (renameat2 RENAME_EXCHANGE, Linux 3.15 on ext4, XFS, Btrfs, tmpfs), which keeps the previous
// file under the temporary name until every output is in place, so that a failure part way puts
// back those already moved.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "io/paths.h"
#include "io/retry.h"
#include "neardup/error.h"
#include "neardup/io/writer.h"

namespace neardup::io {

int register_temporary_file(const std::string& path) noexcept;
void unregister_temporary_file(int slot) noexcept;

namespace {

// Exchanges two paths atomically; false (errno set) where the file system cannot.
bool exchange_paths(const std::string& a, const std::string& b) {
#if defined(RENAME_EXCHANGE)
  return retry_eintr([&] { return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE); }) == 0;
#else
  errno = ENOSYS;
  return false;
#endif
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : ", ") + names[i];
  return s;
}

}  // namespace

void AtomicFile::place() {
  struct stat st {};
  const bool exists = ::lstat(target_.c_str(), &st) == 0;
  if (exists) {
    if (exchange_paths(temp_, target_)) {
      previous_ = Previous::Exchanged;  // temp_ now names the previous file
      committed_ = true;
      return;
    }
    // Only a file system that cannot exchange (EINVAL) gets a plain rename instead.
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) fail("cannot move output into place");
  }
  if (retry_eintr([&] { return ::rename(temp_.c_str(), target_.c_str()); }) != 0) fail("cannot move output into place");
  previous_ = exists ? Previous::Replaced : Previous::None;
  committed_ = true;
  unregister_temporary_file(temp_slot_);
  temp_slot_ = -1;
  temp_.clear();
}

bool AtomicFile::unplace() noexcept {
  if (!committed_ || direct_) return true;
  switch (previous_) {
    case Previous::Exchanged:
      if (!exchange_paths(temp_, target_)) return false;
      break;  // temp_ names the new file again: the destructor removes it
    case Previous::None:
      if (retry_eintr([&] { return ::unlink(target_.c_str()); }) != 0) return false;
      break;
    case Previous::Replaced:
      return false;
  }
  committed_ = false;
  return true;
}

void AtomicFile::drop_previous() noexcept {
  if (previous_ != Previous::Exchanged || temp_.empty()) return;
  ::unlink(temp_.c_str());
  unregister_temporary_file(temp_slot_);
  temp_slot_ = -1;
  temp_.clear();
}

OutputCommit::OutputCommit(std::span<AtomicFile* const> files) {
  for (AtomicFile* f : files)
    if (f) files_.push_back(f);
}

void OutputCommit::finish() {
  for (AtomicFile* f : files_) f->finish();
}

void OutputCommit::place() {
  for (size_t i = 0; i < files_.size(); ++i) {
    AtomicFile* f = files_[i];
    if (f->committed_) continue;
    if (f->direct_) {  // written in place as it went: nothing to move
      f->committed_ = true;
      continue;
    }
    try {
      f->place();
      moved_.push_back(f);
    } catch (const IoError& e) {
      const std::vector<std::string> replaced = undo();
      std::vector<std::string> not_replaced;
      for (size_t j = 0; j < files_.size(); ++j)
        if (std::find(replaced.begin(), replaced.end(), files_[j]->path_) == replaced.end() && !files_[j]->direct_)
          not_replaced.push_back(files_[j]->path_);
      if (replaced.empty() && not_replaced.size() == 1) throw;  // the only output: its own message
      std::string what = e.what();
      if (const size_t cut = what.find(" (the previous file"); cut != std::string::npos) what.resize(cut);
      if (replaced.empty()) throw IoError(what + "; no output was replaced (the previous files are untouched)");
      throw IoError(what + "; replaced: " + joined(replaced) + "; not replaced (their previous files are untouched): " +
                    joined(not_replaced));
    }
  }
}

std::vector<std::string> OutputCommit::undo() noexcept {
  std::vector<std::string> replaced;
  for (auto m = moved_.rbegin(); m != moved_.rend(); ++m)  // last first
    if (!(*m)->unplace()) replaced.push_back((*m)->path_);
  moved_.clear();
  std::reverse(replaced.begin(), replaced.end());
  return replaced;
}

void OutputCommit::done() noexcept {
  std::vector<std::string> dirs;
  for (AtomicFile* f : moved_) {
    f->drop_previous();
    dirs.push_back(dir_of(f->target_));
  }
  // The renames are durable only once their directories are synced.
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const std::string& d : dirs) {
    const int dir = retry_eintr([&] { return ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (dir >= 0) {
      retry_eintr([&] { return ::fsync(dir); });
      ::close(dir);
    }
  }
}

void commit_together(std::span<AtomicFile* const> files) {
  OutputCommit c(files);
  c.finish();
  c.place();
  c.done();
}

}  // namespace neardup::io
