// The document table: what the pipeline keeps of each document after the first pass, in input
// order (its number is its place): its id, its text length, where its record lies (JSONL inputs,
// so that later passes read only the records they need and copy kept lines without parsing
// them), and its --keep-by value. Texts and shingles are not kept here.
//
// A run whose memory is limited keeps the table on disk (RunTuning::spill_documents): the ids,
// their ends, the lengths and the positions are written to files without a name as they come
// (internal::SpilledColumns), then mapped read-only, so that every accessor returns a view as
// it does in memory. The run lets the mapped pages go behind each pass over them (Behind) and
// after (drop_pages()): what a pass reads is the page cache's, which the kernel takes back under
// pressure. The --keep-by values stay in memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "internal/big_array.h"
#include "internal/spilled_columns.h"
#include "neardup/io/reader.h"
#include "neardup/types.h"

namespace neardup {

class DocumentTable {
 public:
  /// Keeps the table in files in `dir` (made there now: IoError if they cannot be), before the
  /// first document; finish() after the last.
  void spill_to(const std::string& dir) { spilled_ = std::make_unique<internal::SpilledColumns>(dir, kColumns, "the document table"); }
  bool spilled() const noexcept { return spilled_ != nullptr; }

  /// About `documents` documents with `id_bytes` of ids in all are to come (the input's sample):
  /// the arrays that will pass 2 MiB ask for huge pages from their start (GrowArray::expect).
  void expect(size_t documents, size_t id_bytes) noexcept {
    id_blob_.expect(id_bytes);
    id_end_.expect(documents);
    lengths_.expect(documents);
    pos_.expect(documents);
  }

  /// Appends a document: its number is the count before. `pos` is stored when positions are
  /// kept (every document has one or none does), `key` when keep-by values are.
  void add(std::string_view id, uint32_t length, const io::RecordPos* pos, const io::KeyValue* key) {
    ++count_;
    has_pos_ = pos != nullptr;
    if (spilled_) {
      id_bytes_ += id.size();
      spilled_->append(kIds, id.data(), id.size());
      spilled_->push(kIdEnds, id_bytes_);
      spilled_->append(kLengths, &length, sizeof length);
      if (pos) spilled_->append(kPositions, pos, sizeof *pos);
    } else {
      id_blob_.append(id.data(), id.size());
      id_end_.push_back(id_blob_.size());
      lengths_.push_back(length);
      if (pos) pos_.push_back(*pos);
    }
    if (key) {
      key_kind_.push_back(static_cast<uint8_t>(key->kind));
      key_num_.push_back(key->number);
      key_blob_.append(key->text);
      key_end_.push_back(key_blob_.size());
    }
  }

  /// After the last document: a spilled table's files written and mapped (IoError naming the
  /// directory if the disk refuses). Nothing to do in memory.
  void finish() {
    if (!spilled_) return;
    spilled_->finish();
    const auto view = [&]<class T>(int column, std::span<const T>& out) {
      const std::span<const std::byte> b = spilled_->map(static_cast<size_t>(column));
      out = {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};  // page-aligned
    };
    std::span<const char> ids;
    view(kIds, ids);
    id_view_ = std::string_view(ids.data(), ids.size());
    view(kIdEnds, id_end_view_);
    view(kLengths, lengths_view_);
    view(kPositions, pos_view_);
  }
  /// A spilled table lets the pages read so far go (SpilledColumns::drop_pages).
  void drop_pages() const noexcept {
    if (spilled_) spilled_->drop_pages();
  }
  /// A pass over the documents in ascending order lets a spilled table's pages go behind it,
  /// each time it has passed kDropRows documents (and the rest when it ends): documents
  /// scattered over the input (a verification group's) touch a page of each column for nearly
  /// every one, and the pages a pass maps would otherwise add up to whole columns until the
  /// next drop_pages(). Tell it each document as the pass reads it; one it has passed is read
  /// (again from the file if its page went) and not followed.
  class Behind {
   public:
    explicit Behind(const DocumentTable& t) noexcept : t_(t) {}
    ~Behind() {
      if (started_) t_.drop_rows(from_, last_ + 1);
    }
    Behind(const Behind&) = delete;
    Behind& operator=(const Behind&) = delete;
    void at(DocId d) noexcept {
      if (!t_.spilled_) return;
      if (!started_) from_ = last_ = d, started_ = true;
      if (d < from_) return;  // behind the pass (read, not followed): its page may be gone
      if (d - from_ >= kDropRows) {
        t_.drop_rows(from_, d);
        from_ = d;
      }
      last_ = std::max(last_, d);
    }

   private:
    const DocumentTable& t_;
    DocId from_ = 0, last_ = 0;
    bool started_ = false;
  };

  /// The positions and text lengths of `docs` (ascending), copied into `pos` and `lengths`.
  void gather(std::span<const DocId> docs, std::vector<io::RecordPos>& pos, std::vector<uint32_t>& lengths) const {
    pos.clear();
    lengths.clear();
    pos.reserve(docs.size());
    lengths.reserve(docs.size());
    Behind behind(*this);
    for (const DocId d : docs) {
      behind.at(d);
      pos.push_back(this->pos(d));
      lengths.push_back(length(d));
    }
  }
  /// Bytes of the table on disk.
  uint64_t spilled_bytes() const noexcept { return spilled_ ? spilled_->bytes() : 0; }

  size_t size() const noexcept { return count_; }
  std::string_view id(DocId d) const noexcept {
    return spilled_ ? slice(id_view_, id_end_view_, d) : slice(std::string_view(id_blob_.data(), id_blob_.size()), std::span<const uint64_t>(id_end_), d);
  }
  /// Text bytes (at most --max-doc-bytes, under 4 GiB).
  uint32_t length(DocId d) const noexcept { return lengths()[d]; }
  std::span<const uint32_t> lengths() const noexcept { return spilled_ ? lengths_view_ : std::span<const uint32_t>(lengths_); }

  /// Whether each document's record position is kept (JSONL inputs found again by position).
  bool has_positions() const noexcept { return has_pos_ && count_ > 0; }
  const io::RecordPos& pos(DocId d) const noexcept { return positions()[d]; }
  std::span<const io::RecordPos> positions() const noexcept { return spilled_ ? pos_view_ : std::span<const io::RecordPos>(pos_); }

  /// The keep-by value of d (Missing when none is kept).
  io::KeyValue key(DocId d) const noexcept {
    if (d >= key_kind_.size()) return {};
    return {static_cast<io::KeyValue::Kind>(key_kind_[d]), key_num_[d], slice(key_blob_, key_end_, d)};
  }

  /// The bytes the table holds in memory (the memory estimate's state); a spilled table's
  /// mapped pages are the page cache's.
  uint64_t bytes() const noexcept {
    return id_blob_.size() + id_end_.size() * sizeof(uint64_t) + lengths_.size() * sizeof(uint32_t) + pos_.size() * sizeof(io::RecordPos) +
           key_kind_.size() + key_num_.size() * sizeof(double) + key_blob_.size() + key_end_.size() * sizeof(uint64_t) +
           (spilled_ ? kColumns * internal::SpilledColumns::kBufferBytes : 0);
  }

 private:
  enum Column { kIds, kIdEnds, kLengths, kPositions, kColumns };
  static constexpr DocId kDropRows = DocId{1} << 18;  // 4 MiB of positions, 2 MiB of id ends
  // Lets go the pages of every column's rows of documents [from, to) (spilled, after finish()).
  void drop_rows(DocId from, DocId to) const noexcept {
    to = std::min<DocId>(to, static_cast<DocId>(count_));
    if (from >= to) return;
    if (has_pos_) spilled_->drop_pages(kPositions, uint64_t{from} * sizeof(io::RecordPos), uint64_t{to} * sizeof(io::RecordPos));
    spilled_->drop_pages(kLengths, uint64_t{from} * sizeof(uint32_t), uint64_t{to} * sizeof(uint32_t));
    spilled_->drop_pages(kIds, from == 0 ? 0 : id_end_view_[from - 1], id_end_view_[to - 1]);
    spilled_->drop_pages(kIdEnds, uint64_t{from} * sizeof(uint64_t), uint64_t{to} * sizeof(uint64_t));
  }
  static std::string_view slice(std::string_view blob, std::span<const uint64_t> ends, DocId d) noexcept {
    const uint64_t b = d == 0 ? 0 : ends[d - 1];
    return blob.substr(b, ends[d] - b);
  }

  size_t count_ = 0;
  bool has_pos_ = false;
  // Spilled: the files, and views of their mappings (after finish()).
  std::unique_ptr<internal::SpilledColumns> spilled_;
  uint64_t id_bytes_ = 0;
  std::string_view id_view_;
  std::span<const uint64_t> id_end_view_;
  std::span<const uint32_t> lengths_view_;
  std::span<const io::RecordPos> pos_view_;
  // In memory: arrays written once in order as the first pass reads, and read in ascending order
  // (internal::GrowArray: grown in place, never copied, where vectors that double would copy
  // everything and fault in twice the pages).
  internal::GrowArray<char> id_blob_{internal::Access::Sequential};
  internal::GrowArray<uint64_t> id_end_{internal::Access::Sequential};
  internal::GrowArray<uint32_t> lengths_{internal::Access::Sequential};
  internal::GrowArray<io::RecordPos> pos_{internal::Access::Sequential};
  // The keep-by field per document: KeyValue::Kind, the number, the string (blob and ends).
  std::vector<uint8_t> key_kind_;
  std::vector<double> key_num_;
  std::string key_blob_;
  std::vector<uint64_t> key_end_;
};

}  // namespace neardup
