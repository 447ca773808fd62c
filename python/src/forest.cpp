// MinHashLSHForest's data in C++ (neardup.datasketch.MinHashLSHForest): the sketches added, one
// row of values each in an arena, and the trees index() sorts for the queries. datasketch keeps a
// dict per tree from a tree key's big-endian bytes to its keys, a bytes object per tree key and
// key, and sorts the dicts' keys at index(): about 9 us per sketch added, where an arena row
// costs a copy. The dicts are made from the rows when asked for (python/neardup/datasketch/
// lshforest.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

#include "internal/big_array.h"
#include "native_threads.h"
#include "py_fastcall.h"
#include "neardup/thread_pool.h"
#include "py_values.h"

namespace py = pybind11;

namespace neardup::python {
namespace {

// One tree of a forest: its distinct keys sorted, as rows of words of type W (rows compare as
// their words in order, as the big-endian bytes datasketch compares do), and for each row the
// numbers of the sketches with that key, in the order they were added.
template <class W>
struct Tree {
  static constexpr size_t kStride = 16;
  // count() rows of `words` words, sorted, distinct: room for every key, on huge pages from
  // 2 MiB on (big_array.h; the pages of rows never written are never mapped in), where a
  // vector's 4 KiB page faults took a third of index().
  internal::BigArray<W> rows;
  std::vector<int64_t> offsets, ids;  // row j's sketches: ids[offsets[j], offsets[j + 1])
  std::vector<W> firsts;              // every kStride-th row's first word
  size_t count() const { return offsets.empty() ? 0 : offsets.size() - 1; }

  // The rows of `within` (rows whose first `from` words are q's) whose words [from, to) are
  // q's too: [first, end).
  std::pair<size_t, size_t> matching(const W* q, size_t from, size_t to, size_t words, std::pair<size_t, size_t> within) const {
    const W* r = rows.data();
    const auto less = [&](size_t row) { return std::lexicographical_compare(r + row * words + from, r + row * words + to, q + from, q + to); };
    const auto equal = [&](size_t row) { return std::equal(r + row * words + from, r + row * words + to, q + from); };
    size_t lo = within.first, hi = within.second;
    if (from == 0 && !firsts.empty()) {
      // The rows whose first word is q's lie between the samples below it and above it (a
      // value is one word at least).
      const auto below = std::lower_bound(firsts.begin(), firsts.end(), q[0]);
      const auto above = std::upper_bound(below, firsts.end(), q[0]);
      lo = below == firsts.begin() ? 0 : static_cast<size_t>(below - firsts.begin() - 1) * kStride;
      hi = std::min(hi, static_cast<size_t>(above - firsts.begin()) * kStride);
    }
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (less(mid)) lo = mid + 1; else hi = mid;
    }
    size_t end = lo, last = within.second;  // the matching rows are a run from lo
    while (end < last) {
      const size_t mid = end + (last - end) / 2;
      if (equal(mid)) end = mid + 1; else last = mid;
    }
    return {lo, end};
  }
};

// The numbers 0..n-1 of `words` in the order of their values, equal ones in the order of their
// numbers: a least-significant-digit radix sort, a byte at a time, skipping the bytes where
// every word is alike.
template <class W>
std::vector<uint32_t> by_first_word(const std::vector<W>& words) {
  const size_t n = words.size();
  std::vector<uint32_t> order(n), next(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  W any = 0, all = static_cast<W>(~W{0});
  for (const W x : words) any |= x, all &= x;
  for (unsigned shift = 0; shift < 8 * sizeof(W); shift += 8) {
    if ((((any ^ all) >> shift) & 0xFF) == 0) continue;  // this byte is the same in every word
    size_t count[257] = {};
    for (const W x : words) ++count[((x >> shift) & 0xFF) + 1];
    for (size_t d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (const uint32_t i : order) next[count[(words[i] >> shift) & 0xFF]++] = i;
    order.swap(next);
  }
  return order;
}

// The tree of n sketches whose keys are the w words at all + i * stride (sketch i), in the order
// of their keys, sketches with equal keys in the order added: ordered by first word by a radix
// sort of those words alone (comparing whole keys a row apart missed the cache at every step),
// which keeps the order added among equals, then each run of one first word sorted by the whole
// keys.
template <class W>
Tree<W> sorted_tree(const W* all, size_t n, size_t stride, size_t w) {
  const auto key = [&](uint32_t i) { return all + size_t{i} * stride; };
  std::vector<W> firsts(n);
  for (size_t i = 0; i < n; ++i) firsts[i] = all[i * stride];
  const std::vector<uint32_t> order = by_first_word(firsts);
  Tree<W> tree;
  tree.rows = internal::BigArray<W>(n * w);
  tree.offsets.reserve(n + 1);
  tree.ids.reserve(n);
  tree.offsets.push_back(0);
  W* out = tree.rows.data();
  const auto emit = [&](const W* row, uint32_t id) {
    if (out == tree.rows.data() || !std::equal(row, row + w, out - w)) {
      if (out != tree.rows.data()) tree.offsets.push_back(static_cast<int64_t>(tree.ids.size()));
      out = std::copy(row, row + w, out);
    }
    tree.ids.push_back(id);
  };
  // The keys are read from their rows in sorted order, far apart: each is asked for a few runs
  // ahead, and a run's keys are read once, side by side, to be sorted and written.
  constexpr size_t kAhead = 16;
  size_t asked = 0;
  std::vector<W> run;
  std::vector<uint32_t> at;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && firsts[order[j]] == firsts[order[i]]) ++j;
    for (; asked < std::min(n, j + kAhead); ++asked) {
      __builtin_prefetch(key(order[asked]));
      __builtin_prefetch(key(order[asked]) + w - 1);
    }
    if (j - i == 1 || w == 1) {
      for (size_t x = i; x < j; ++x) emit(key(order[x]), order[x]);
      i = j;
      continue;
    }
    run.resize((j - i) * w);
    at.resize(j - i);
    for (size_t x = i; x < j; ++x) {
      std::copy(key(order[x]), key(order[x]) + w, run.begin() + static_cast<ptrdiff_t>((x - i) * w));
      at[x - i] = static_cast<uint32_t>(x - i);
    }
    const auto in_run = [&](uint32_t x) { return run.data() + size_t{x} * w; };
    std::stable_sort(at.begin(), at.end(), [&](uint32_t a, uint32_t b) {
      return std::lexicographical_compare(in_run(a) + 1, in_run(a) + w, in_run(b) + 1, in_run(b) + w);
    });
    for (const uint32_t x : at) emit(in_run(x), order[i + x]);
    i = j;
  }
  if (n > 0) tree.offsets.push_back(static_cast<int64_t>(n));
  for (size_t row = 0; row < tree.count(); row += Tree<W>::kStride) tree.firsts.push_back(tree.rows[row * w]);
  return tree;
}

// A MinHashLSHForest's indexed trees for its queries. Sketches whose values all fit in 32 bits
// (datasketch's MinHash keeps 32-bit hashes in its uint64 values) are kept and compared as
// 32-bit words: half the rows to sort, write and search.
class ForestTrees {
 public:
  using U64 = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>;

  // From each tree's keys of the indexed sketches (keys[t]: a row of words per sketch, in the
  // order the sketches were added): the distinct rows sorted, each with its sketches' numbers in
  // that order.
  ForestTrees(const py::list& keys, int per_tree, int width)
      : per_tree_(static_cast<size_t>(per_tree)), width_(static_cast<size_t>(width)), words_(per_tree_ * width_) {
    if (per_tree < 1 || width < 1) throw py::value_error("a forest needs trees of a value or more");
    for (const py::handle h : keys) {
      const U64 all = py::cast<U64>(h);
      const size_t n = all.size() > 0 ? static_cast<size_t>(all.shape(0)) : 0;
      if (n > 0 && (all.ndim() != 2 || static_cast<size_t>(all.shape(1)) != words_)) throw py::value_error("every tree key must have per_tree * width words");
      wide_.push_back(sorted_tree(all.data(), n, words_, words_));
    }
  }

  // From n sketches of `trees` x per_tree values each (a ForestArena's rows, 32- or 64-bit):
  // tree t's key of sketch i is values [t * per_tree, (t + 1) * per_tree) of row i. The trees
  // are sorted in parallel once there are enough keys to pay for it. The GIL stays held: another
  // Python thread adding to the forest meanwhile could move the rows.
  template <class W>
  ForestTrees(const W* rows, size_t n, size_t trees, size_t per_tree) : per_tree_(per_tree), width_(1), words_(per_tree) {
    std::vector<Tree<W>>& out = mine<W>();
    out.resize(trees);
    const int threads = n * trees >= (size_t{1} << 14) ? default_threads() : 1;
    ThreadPool::current().parallel_for(trees, threads, [&](size_t t, size_t) { out[t] = sorted_tree(rows + t * per_tree, n, trees * per_tree, per_tree); });
  }

  ForestTrees(const ForestTrees&) = delete;
  ForestTrees(ForestTrees&&) = default;

  // MinHashLSHForest.query: for r = per_tree, ..., 1 and each tree in order, the rows whose first
  // r values equal those of the query's row for the tree, and their keys, until `k` distinct
  // keys: their numbers in the order first met.
  std::vector<int64_t> query(const U64& query, size_t k) const {
    const size_t trees = narrow_.empty() ? wide_.size() : narrow_.size();
    if (query.ndim() != 2 || static_cast<size_t>(query.shape(0)) != trees || static_cast<size_t>(query.shape(1)) != words_)
      throw py::value_error("the query must have a row of per_tree * width words for each tree");
    std::vector<size_t> fits(trees, words_);  // each tree's leading query words that its rows can hold
    if (narrow_.empty()) return walk(wide_, query.data(), fits, k);
    // 32-bit rows: no row matches a prefix with a wider value in it.
    std::vector<uint32_t> q(trees * words_);
    for (size_t t = 0; t < trees; ++t)
      for (size_t i = 0; i < words_; ++i) {
        const uint64_t v = query.data()[t * words_ + i];
        if (v > UINT32_MAX && fits[t] == words_) fits[t] = i;
        q[t * words_ + i] = static_cast<uint32_t>(v);
      }
    return walk(narrow_, q.data(), fits, k);
  }

 private:
  template <class W>
  std::vector<Tree<W>>& mine() {
    if constexpr (sizeof(W) == 4) return narrow_; else return wide_;
  }

  template <class W>
  std::vector<int64_t> walk(const std::vector<Tree<W>>& trees, const W* query, const std::vector<size_t>& fits, size_t k) const {
    // Each tree's rows matching the first r values, for r = 1, ..., per_tree: a prefix one value
    // longer matches a part of the rows of the shorter one, so each range is searched within the
    // one before it.
    std::vector<std::pair<size_t, size_t>> range(trees.size() * (per_tree_ + 1));
    for (size_t t = 0; t < trees.size(); ++t) {
      const W* q = query + t * words_;
      std::pair<size_t, size_t> within{0, trees[t].count()};
      for (size_t r = 1; r <= per_tree_; ++r) {
        if (r * width_ > fits[t]) within = {0, 0};
        if (within.first < within.second) within = trees[t].matching(q, (r - 1) * width_, r * width_, words_, within);
        range[t * (per_tree_ + 1) + r] = within;
      }
    }
    std::vector<int64_t> out;
    std::unordered_set<int64_t> seen;
    for (size_t r = per_tree_; r > 0; --r)
      for (size_t t = 0; t < trees.size(); ++t) {
        const Tree<W>& tree = trees[t];
        const auto [first, end] = range[t * (per_tree_ + 1) + r];
        for (size_t j = first; j < end; ++j)
          for (int64_t x = tree.offsets[j]; x < tree.offsets[j + 1]; ++x) {
            const int64_t id = tree.ids[static_cast<size_t>(x)];
            if (!seen.insert(id).second) continue;
            out.push_back(id);
            if (out.size() >= k) return out;
          }
      }
    return out;
  }

  size_t per_tree_, width_, words_;
  std::vector<Tree<uint32_t>> narrow_;  // the trees of 32-bit rows, or
  std::vector<Tree<uint64_t>> wide_;    // those of 64-bit rows
};

// The values of the sketches added to a forest, `width` (trees x per tree) each, in the order
// added: row i is sketch i. As 32-bit words while every value fits (datasketch's MinHash keeps
// 32-bit hashes), all made 64-bit at the first value that does not. On memory mapped in huge
// steps (big_array.h): a vector that doubles copied and zeroed its 50 MB for 50,000 sketches of
// 128 values, a third of an add.
class ForestArena {
 public:
  explicit ForestArena(size_t width) : width_(width), scratch_(width), narrowed_(width) {
    if (width == 0) throw py::value_error("a forest needs a value or more per sketch");
  }
  size_t size() const noexcept { return (wide_ ? v64_.size() : v32_.size()) / width_; }

  // Appends the first `width` values of a sketch (py_values.h); returns its row.
  size_t add(const py::handle& values) {
    read_u64(values, width_, scratch_.data(), false);
    append_scratch();
    return size() - 1;
  }

  // MinHashLSHForest.add(key, sketch) whole: a sketch of `width` values or more (else
  // ValueError), a key not yet in `rows` (else ValueError), and rows[key] = its row. False, with
  // nothing done, when its values are not an array of 64-bit integers: the caller takes the
  // general path.
  bool add_sketch(const py::dict& rows, const py::handle& key, const py::handle& sketch) {
    py::object values;
    if (sketch_length(sketch.ptr(), values) < static_cast<Py_ssize_t>(width_)) throw py::value_error("The num_perm of MinHash out of range");
    const int known = PyDict_Contains(rows.ptr(), key.ptr());
    if (known < 0) throw py::error_already_set();
    if (known) throw py::value_error("The given key has already been added");
    if (!try_read_u64(sketch_values(sketch.ptr(), values), width_, scratch_.data(), false)) return false;
    const py::int_ number(size());
    if (PyDict_SetItem(rows.ptr(), key.ptr(), number.ptr()) != 0) throw py::error_already_set();
    append_scratch();
    return true;
  }

  // The trees of the first n rows.
  ForestTrees trees(size_t n, size_t trees, size_t per_tree) const {
    if (n > size() || trees * per_tree != width_) throw py::value_error("the trees must cover the rows' values");
    return wide_ ? ForestTrees(v64_.data(), n, trees, per_tree) : ForestTrees(v32_.data(), n, trees, per_tree);
  }

  // Row i's values (a copy).
  py::array_t<uint64_t> row(size_t i) const {
    if (i >= size()) throw py::index_error("no such row");
    py::array_t<uint64_t> out(static_cast<py::ssize_t>(width_));
    copy_rows(i, 1, out.mutable_data());
    return out;
  }

  // Rows [0, size()) as a NumPy array (a copy).
  py::array_t<uint64_t> rows() const {
    py::array_t<uint64_t> out({size(), width_});
    copy_rows(0, size(), out.mutable_data());
    return out;
  }

 private:
  // scratch_ (a sketch's values) as the next row.
  void append_scratch() {
    if (!wide_) {
      bool fits = true;
      for (size_t i = 0; i < width_; ++i) {
        fits &= scratch_[i] <= UINT32_MAX;
        narrowed_[i] = static_cast<uint32_t>(scratch_[i]);
      }
      if (fits) return v32_.append(narrowed_.data(), width_);
      widen();
    }
    v64_.append(scratch_.data(), width_);
  }

  // The rows so far as 64-bit words, from here on.
  void widen() {
    for (size_t i = 0; i < v32_.size(); ++i) v64_.push_back(v32_[i]);
    v32_ = internal::GrowArray<uint32_t>();
    wide_ = true;
  }

  void copy_rows(size_t first, size_t count, uint64_t* out) const {
    const size_t from = first * width_, n = count * width_;
    if (wide_)
      std::copy(v64_.data() + from, v64_.data() + from + n, out);
    else
      std::copy(v32_.data() + from, v32_.data() + from + n, out);
  }

  size_t width_;
  bool wide_ = false;
  internal::GrowArray<uint32_t> v32_;  // the rows while every value fits in 32 bits
  internal::GrowArray<uint64_t> v64_;  // the rows once one did not
  std::vector<uint64_t> scratch_;      // a sketch's values before they join the rows
  std::vector<uint32_t> narrowed_;     // the same as 32-bit words
};

PyTypeObject* arena_type = nullptr;  // ForestArena's Python class, once registered

// forest_arena_add(arena, rows, key, sketch): arena.add_sketch(rows, key, sketch), a call of
// MinHashLSHForest.add without pybind11's dispatcher (py_fastcall.h).
py::object forest_arena_add(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("forest_arena_add", nargs, 4);
  if (!PyDict_Check(args[1])) throw py::type_error("rows must be a dict");
  return py::bool_(bound_self<ForestArena>(args[0], arena_type).add_sketch(py::reinterpret_borrow<py::dict>(args[1]), args[2], args[3]));
}

}  // namespace

void register_forest(py::module_& m) {
  py::class_<ForestTrees>(m, "ForestTrees")
      .def(py::init<const py::list&, int, int>(), py::arg("keys"), py::arg("per_tree"), py::arg("width"))
      .def("query", &ForestTrees::query, py::arg("query"), py::arg("k"));
  py::class_<ForestArena>(m, "ForestArena")
      .def(py::init<size_t>(), py::arg("width"))
      .def("__len__", &ForestArena::size)
      .def("add", &ForestArena::add, py::arg("values"))
      .def("trees", &ForestArena::trees, py::arg("n"), py::arg("trees"), py::arg("per_tree"))
      .def("row", &ForestArena::row, py::arg("i"))
      .def("rows", &ForestArena::rows);
  arena_type = reinterpret_cast<PyTypeObject*>(py::type::of<ForestArena>().ptr());
  add_fastcall<forest_arena_add>(m, "forest_arena_add",
                          "forest_arena_add(arena, rows, key, sketch): MinHashLSHForest.add of a sketch of 64-bit values; False if not");
}

}  // namespace neardup::python
