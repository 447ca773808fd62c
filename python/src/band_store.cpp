// MinHashLSH's band tables kept in C++ (neardup.datasketch.MinHashLSH without a custom hashfunc):
// datasketch's index is a dict per band from a band's big-endian bytes to a list of keys, and
// a dict from each key to its band keys, which cost a bytes object and a list entry per band and
// key (about 5 KB of Python objects per sketch at 25 bands); here a sketch is one row of bytes in
// an arena (4 a value while every value fits in 32 bits: append_row), and a band's buckets a
// table of distinct band bytes (band_buckets.h), so the answers are the dicts' exactly. The
// dicts are made from the rows when asked for (materialize), in the order the keys were added.
//
// insert_sketch and query_sketch take a MinHashLSH's insert and query whole (the checks, the
// values read from the sketch, the key's row recorded), one call from Python each
// (band_store_insert, band_store_query: py_fastcall.h): at 50,000 sketches a query's
// Python-level steps cost three times its lookups.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "band_buckets.h"
#include "internal/hash.h"
#include "py_buckets.h"
#include "py_fastcall.h"
#include "py_values.h"

namespace py = pybind11;

namespace neardup::python {
namespace {

// The first `count` values of a sketch as big-endian 64-bit words in `out`, after checking
// len(sketch) == h as MinHashLSH does (else ValueError); false when its values are not 64-bit
// integers (try_read_u64).
bool read_sketch(PyObject* sketch, Py_ssize_t h, size_t count, std::vector<uint64_t>& out) {
  py::object values;
  const Py_ssize_t len = sketch_length(sketch, values);
  if (len != h) throw py::value_error("Expecting minhash with length " + std::to_string(h) + ", got " + std::to_string(len));
  out.resize(count);
  return try_read_u64(sketch_values(sketch, values), count, out.data(), true);
}

class BandStore {
 public:
  // hash_bits < 64 keeps that many top bits of each band's hash: for tests, where bands whose
  // hashes collide must still be told apart by their bytes.
  BandStore(size_t bands, size_t band_bytes, unsigned hash_bits)
      : bands_(bands), band_bytes_(band_bytes), narrow_(band_bytes % sizeof(uint64_t) == 0), stored_band_(narrow_ ? band_bytes / 2 : band_bytes),
        hash_mask_(hash_bits >= 64 ? ~uint64_t{0} : hash_bits == 0 ? 0 : ~uint64_t{0} << (64 - hash_bits)), maps_(bands) {
    if (bands == 0 || band_bytes == 0) throw py::value_error("a band store needs bands of a byte or more");
  }

  size_t band_bytes() const noexcept { return band_bytes_; }
  size_t size() const noexcept { return live_; }

  // Adds `key` with its sketch's big-endian bytes (bands x band_bytes); returns its row.
  uint32_t insert(const py::object& key, const py::bytes& whole) { return insert_row(key, bytes_of(whole, bands_)); }

  // The same with the sketch's values as a NumPy array of unsigned 64-bit integers, each band
  // band_bytes / 8 of them: their big-endian bytes are made here, which saves making a bytes
  // object of them per call.
  uint32_t insert_values(const py::object& key, const py::handle& values) { return insert_row(key, big_endian(values, bands_)); }
  py::set query_values(const py::handle& values, size_t bands) {
    if (bands > bands_) throw py::value_error("more bands than hash tables");
    py::set found;
    collect(big_endian(values, bands), bands, [&](PyObject* key) { return PySet_Add(found.ptr(), key); });
    return found;
  }

  // MinHashLSH.insert(key, sketch) whole: a sketch of h values (else ValueError), a key not yet
  // in `rows` when `check` (else ValueError), and rows[key] = its row (a list of rows for a key
  // added again). False, with nothing done, when the sketch's values are not 64-bit integers:
  // the caller takes the general path.
  bool insert_sketch(const py::dict& rows, const py::handle& key, const py::handle& sketch, Py_ssize_t h, bool check) {
    const char* data = sketch_bytes(sketch, h);
    if (data == nullptr) return false;
    PyObject* known = PyDict_GetItemWithError(rows.ptr(), key.ptr());  // borrowed
    if (known == nullptr && PyErr_Occurred()) throw py::error_already_set();
    if (known != nullptr && check) throw py::value_error("The given key already exists");
    const uint32_t row = insert_row(py::reinterpret_borrow<py::object>(key), data);
    if (known != nullptr) repeated_ = true;
    const py::int_ number(row);
    if (known == nullptr) {
      if (PyDict_SetItem(rows.ptr(), key.ptr(), number.ptr()) != 0) throw py::error_already_set();
    } else if (PyList_Check(known)) {
      if (PyList_Append(known, number.ptr()) != 0) throw py::error_already_set();
    } else {
      const py::list both(2);
      both[0] = py::reinterpret_borrow<py::object>(known);
      both[1] = number;
      if (PyDict_SetItem(rows.ptr(), key.ptr(), both.ptr()) != 0) throw py::error_already_set();
    }
    return true;
  }

  // MinHashLSH.query(sketch) whole: the keys in the buckets of its bands, as a list; None when
  // its values are not 64-bit integers (the caller takes the general path).
  py::object query_sketch(const py::handle& sketch, Py_ssize_t h) {
    const char* data = sketch_bytes(sketch, h);
    if (data == nullptr) return py::none();
    py::list found;
    append_keys(data, bands_, found);
    return found;
  }

  // The keys in the buckets of the first `bands` bands of `data` (a sketch's values, big-endian,
  // at least bands x band_bytes bytes), each once (a key with several rows too, as datasketch's
  // list(set)), appended to `out`.
  void append_keys(const char* data, size_t bands, const py::list& out) {
    if (bands > bands_) throw py::value_error("more bands than hash tables");
    if (!repeated_) {
      collect(data, bands, [&](PyObject* key) { return PyList_Append(out.ptr(), key); });
      return;
    }
    py::set keys;  // a key may have several rows
    collect(data, bands, [&](PyObject* key) { return PySet_Add(keys.ptr(), key); });
    for (const py::handle key : keys)
      if (PyList_Append(out.ptr(), key.ptr()) != 0) throw py::error_already_set();
  }

  // Says that a key was added again (the caller's rows hold several for it).
  void key_repeated() noexcept { repeated_ = true; }

  // MinHashLSH.insert(key, sketch) for keys[i], sketches[i] from `from` on, in C++: the checks
  // of insert (a sketch of h values, a key not yet in `rows`, which gets the key's row). Stops
  // at the first sketch whose values are not 64-bit integers, and returns its place (len(keys)
  // when all went in): the caller takes that one by the general path.
  size_t insert_many(const py::dict& rows, const py::list& keys, const py::list& sketches, Py_ssize_t h, size_t from) {
    if (keys.size() != sketches.size()) throw py::value_error("a key per sketch");
    if (from < keys.size())
      for (BandBuckets& band : maps_) band.reserve(keys.size() - from);
    for (size_t i = from; i < keys.size(); ++i)
      if (!insert_sketch(rows, keys[i], sketches[i], h, true)) return i;
    return keys.size();
  }

  // Takes a row out of every bucket (it stays in the arena).
  void remove(uint32_t row) {
    if (row >= keys_.size() || keys_[row].is_none()) throw py::value_error("no such row");
    keys_[row] = py::none();
    --live_;
  }

  // The keys in the buckets of the sketch's first `bands` bands, as a set.
  py::set query(const py::bytes& whole, size_t bands) {
    if (bands > bands_) throw py::value_error("more bands than hash tables");
    py::set found;
    collect(bytes_of(whole, bands), bands, [&](PyObject* key) { return PySet_Add(found.ptr(), key); });
    return found;
  }

  // (tables, keys) as datasketch has them: per band a dict from band bytes to the list of keys
  // in the order added (every live row), and a dict from each key of `rows` (key -> its row, or
  // the list of its rows) to the band keys of those rows, in order.
  py::tuple materialize(const py::dict& rows) const {
    py::list tables(bands_);
    for (size_t i = 0; i < bands_; ++i) tables[i] = py::dict();
    for (size_t row = 0; row < keys_.size(); ++row) {
      if (keys_[row].is_none()) continue;
      for (size_t i = 0; i < bands_; ++i) {
        const py::bytes h(band_bytes_of(static_cast<uint32_t>(row), i), band_bytes_);
        append_to_bucket(PyList_GET_ITEM(tables.ptr(), static_cast<Py_ssize_t>(i)), h.ptr(), keys_[row].ptr());
      }
    }
    py::dict keys;
    for (const auto& [key, key_rows] : rows) {
      py::list hs;
      PyObject_GC_UnTrack(hs.ptr());  // as lsh_insert's lists of band keys
      const auto add = [&](const py::handle r) {
        const auto row = r.cast<uint32_t>();
        if (row >= keys_.size()) throw py::value_error("no such row");
        for (size_t i = 0; i < bands_; ++i) hs.append(py::bytes(band_bytes_of(row, i), band_bytes_));
      };
      if (PyLong_Check(key_rows.ptr())) {
        add(key_rows);
      } else {
        for (const py::handle r : key_rows) add(r);
      }
      keys[key] = hs;
    }
    return py::make_tuple(tables, keys);
  }

 private:
  uint32_t insert_row(const py::object& key, const char* data) {
    if (keys_.size() >= BandBuckets::kNone - 1) throw py::value_error("too many keys for one index");
    const auto row = static_cast<uint32_t>(keys_.size());
    append_row(data);
    // Every band's home slot asked for before any is read: the bands' tables are apart in
    // memory, and their cache misses then overlap instead of following one another.
    hash_bands(data, bands_);
    for (size_t i = 0; i < bands_; ++i)
      maps_[i].insert(hashes_[i], row, [&](uint32_t first) { return std::memcmp(row_band(first, i), row_band(row, i), stored_band_) == 0; });
    keys_.push_back(key);
    stamp_.push_back(0);
    ++live_;
    return row;
  }

  // Calls add(key) (a CPython call: 0, or -1 with an exception set) for the live keys in the
  // buckets of the first `bands` bands of `data`, each once. In three passes over the bands, so
  // that each pass's cache misses overlap: the home slots, then the first rows' bytes, then the
  // rows.
  template <class Add>
  void collect(const char* data, size_t bands, Add&& add) {
    if (++epoch_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0), epoch_ = 1;
    hash_bands(data, bands);
    found_.resize(bands);
    for (size_t i = 0; i < bands; ++i) {
      found_[i] = maps_[i].find(hashes_[i]);
      if (found_[i] != BandBuckets::kNone) __builtin_prefetch(row_band(maps_[i].first(found_[i]), i));
    }
    for (size_t i = 0; i < bands; ++i) {
      const char* band = data + i * band_bytes_;
      uint32_t slot = found_[i];
      while (slot != BandBuckets::kNone && !same_band(row_band(maps_[i].first(slot), i), band))
        slot = maps_[i].find(hashes_[i], slot);  // another band, the same hash
      if (slot == BandBuckets::kNone) continue;
      maps_[i].for_each(slot, [&](uint32_t row) {
        if (stamp_[row] == epoch_) return;
        stamp_[row] = epoch_;
        if (!keys_[row].is_none() && add(keys_[row].ptr()) != 0) throw py::error_already_set();
      });
    }
  }

  // hashes_[i] for the first `bands` bands of `data`, each home slot prefetched.
  void hash_bands(const char* data, size_t bands) {
    hashes_.resize(bands);
    for (size_t i = 0; i < bands; ++i) {
      hashes_[i] = band_hash(data + i * band_bytes_, i);
      maps_[i].prefetch(hashes_[i]);
    }
  }

  // A band's hash: its 64-bit words folded by 128-bit products (a band of 64-bit values, the
  // usual case, costs a multiply per value), else XXH3 of its bytes. Seeded by the band's number.
  uint64_t band_hash(const char* band, size_t i) const noexcept {
    if (band_bytes_ % sizeof(uint64_t) != 0) return internal::hash_bytes(band, band_bytes_, i) & hash_mask_;
    uint64_t h = internal::kGolden * (i + 1);
    for (size_t at = 0; at < band_bytes_; at += sizeof(uint64_t)) {
      uint64_t word;
      std::memcpy(&word, band + at, sizeof word);
      h = internal::mum(h ^ word, 0xA0761D6478BD642FULL);
    }
    return h & hash_mask_;
  }

  // The big-endian bytes of a sketch's values (try_read_u64) if they are 64-bit integers, after
  // checking len(sketch) == h as MinHashLSH does; nullptr otherwise, or for a store of bands of
  // other values.
  const char* sketch_bytes(const py::handle& sketch, Py_ssize_t h) {
    const size_t words = band_bytes_ % sizeof(uint64_t) == 0 ? bands_ * band_bytes_ / sizeof(uint64_t) : 0;
    if (!read_sketch(sketch.ptr(), h, words, swapped_) || words == 0) return nullptr;
    return reinterpret_cast<const char*>(swapped_.data());
  }

  // The first `bands` bands of `values` (py_values.h) as big-endian bytes, in scratch.
  const char* big_endian(const py::handle& values, size_t bands) {
    if (band_bytes_ % sizeof(uint64_t) != 0) throw py::value_error("this store's bands are not of 64-bit values");
    swapped_.resize(bands * band_bytes_ / sizeof(uint64_t));
    read_u64(values, swapped_.size(), swapped_.data(), true);
    return reinterpret_cast<const char*>(swapped_.data());
  }
  const char* bytes_of(const py::bytes& whole, size_t bands) const {
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(whole.ptr(), &data, &size) != 0) throw py::error_already_set();
    if (static_cast<size_t>(size) < bands * band_bytes_) throw py::value_error("the sketch is shorter than its bands");
    return data;
  }
  // Band i of a row as stored: band_bytes_ bytes, or half as many while the rows are narrow.
  const char* row_band(uint32_t row, size_t i) const noexcept { return arena_.data() + (size_t{row} * bands_ + i) * stored_band_; }

  // The rows keep the low halves of big-endian 64-bit values, 4 bytes each, while every value
  // fits in 32 bits (datasketch's MinHash keeps 32-bit hashes): half the arena, and half the
  // bytes a lookup compares. The first wider value makes every row 8 bytes a value for good.
  // A band's hash is always that of its 8-byte values, so the buckets stay where they are.
  void append_row(const char* data) {
    const size_t values = bands_ * band_bytes_ / sizeof(uint64_t);
    if (narrow_) {
      bool fits = true;
      for (size_t v = 0; v < values && fits; ++v) fits = std::memcmp(data + v * 8, "\0\0\0\0", 4) == 0;
      if (fits) {
        narrowed_.resize(values * 4);
        for (size_t v = 0; v < values; ++v) std::memcpy(narrowed_.data() + v * 4, data + v * 8 + 4, 4);
        arena_.append(narrowed_.data(), narrowed_.size());
        return;
      }
      widen();
    }
    arena_.append(data, bands_ * band_bytes_);
  }

  void widen() {
    internal::GrowArray<char> wide;
    const char zeros[4] = {0, 0, 0, 0};
    for (size_t at = 0; at < arena_.size(); at += 4) {
      wide.append(zeros, 4);
      wide.append(arena_.data() + at, 4);
    }
    arena_ = std::move(wide);
    narrow_ = false;
    stored_band_ = band_bytes_;
  }

  // Whether a stored band (row_band) holds the band of big-endian 8-byte values at `band`.
  bool same_band(const char* stored, const char* band) const noexcept {
    if (!narrow_) return std::memcmp(stored, band, band_bytes_) == 0;
    for (size_t v = 0; v < band_bytes_ / 8; ++v)
      if (std::memcmp(band + v * 8, "\0\0\0\0", 4) != 0 || std::memcmp(band + v * 8 + 4, stored + v * 4, 4) != 0) return false;
    return true;
  }

  // Band i of a row as band_bytes_ bytes (widened into scratch if the rows are narrow).
  const char* band_bytes_of(uint32_t row, size_t i) const {
    if (!narrow_) return row_band(row, i);
    wide_band_.assign(band_bytes_, '\0');
    for (size_t v = 0; v < band_bytes_ / 8; ++v) std::memcpy(wide_band_.data() + v * 8 + 4, row_band(row, i) + v * 4, 4);
    return wide_band_.data();
  }

  size_t bands_, band_bytes_;
  bool narrow_;         // the rows keep 4 bytes a value (append_row)
  size_t stored_band_;  // the bytes of a band as stored
  uint64_t hash_mask_;
  std::vector<BandBuckets> maps_;  // per band: its buckets
  internal::GrowArray<char> arena_;  // row r's bands: [r * bands_ * stored_band_, ...), on huge pages
  std::vector<py::object> keys_;   // per row: its key, None once removed
  std::vector<uint32_t> stamp_;    // per row: the last query that found it
  std::vector<uint64_t> hashes_;   // scratch: a sketch's band hashes
  std::vector<uint32_t> found_;    // scratch: each band's slot of that hash
  std::vector<uint64_t> swapped_;  // scratch: a sketch's values, big-endian
  std::vector<char> narrowed_;     // scratch: a row's values as 4 bytes each
  mutable std::string wide_band_;  // scratch: a narrow band as 8 bytes a value
  uint32_t epoch_ = 0;
  size_t live_ = 0;
  bool repeated_ = false;  // some key has more than one row
};

PyTypeObject* store_type = nullptr;  // BandStore's Python class, once registered

Py_ssize_t ssize_arg(PyObject* x) {
  const Py_ssize_t v = PyLong_AsSsize_t(x);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

// band_store_insert(store, rows, key, sketch, h, check) and band_store_query(store, sketch, h):
// store.insert_sketch and query_sketch, MinHashLSH's insert and query without pybind11's
// dispatcher (py_fastcall.h).
py::object band_store_insert(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("band_store_insert", nargs, 6);
  if (!PyDict_Check(args[1])) throw py::type_error("rows must be a dict");
  const int check = PyObject_IsTrue(args[5]);
  if (check < 0) throw py::error_already_set();
  return py::bool_(bound_self<BandStore>(args[0], store_type).insert_sketch(py::reinterpret_borrow<py::dict>(args[1]), args[2], args[3], ssize_arg(args[4]), check != 0));
}
py::object band_store_query(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("band_store_query", nargs, 3);
  return bound_self<BandStore>(args[0], store_type).query_sketch(args[1], ssize_arg(args[2]));
}

// band_stores_query(stores, bands, sketch, h): MinHashLSHEnsemble.query's keys, partition by
// partition: for each store in the list, the keys of the first bands[i] bands of the sketch (of
// h 64-bit values: else None, for the general path), each key once per store. The sketch is
// read once for all the partitions' indexes, where a call per partition read it 16 times.
py::object band_stores_query(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("band_stores_query", nargs, 4);
  if (!PyList_Check(args[0]) || !PyList_Check(args[1]) || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1]))
    throw py::type_error("band_stores_query takes a list of stores and a list of band counts as long");
  const Py_ssize_t h = ssize_arg(args[3]);
  static thread_local std::vector<uint64_t> swapped;
  if (h < 0 || !read_sketch(args[2], h, static_cast<size_t>(h), swapped)) return py::none();
  py::list out;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[0]); ++i) {
    BandStore& store = bound_self<BandStore>(PyList_GET_ITEM(args[0], i), store_type);
    const auto bands = static_cast<size_t>(ssize_arg(PyList_GET_ITEM(args[1], i)));
    if (bands * store.band_bytes() > swapped.size() * sizeof(uint64_t)) throw py::value_error("the sketch is shorter than its bands");
    store.append_keys(reinterpret_cast<const char*>(swapped.data()), bands, out);
  }
  return out;
}

}  // namespace

void register_band_store(py::module_& m) {
  m.def(
      "sketch_length_types",
      [](const py::tuple& types) {
        for (const py::handle t : types) {
          if (!PyType_Check(t.ptr())) throw py::type_error("sketch_length_types takes classes");
          sketch_length_types().push_back(t.inc_ref().ptr());
        }
      },
      py::arg("types"));
  py::class_<BandStore>(m, "BandStore")
      .def(py::init<size_t, size_t, unsigned>(), py::arg("bands"), py::arg("band_bytes"), py::arg("hash_bits") = 64)
      .def_property_readonly("band_bytes", &BandStore::band_bytes)
      .def("__len__", &BandStore::size)
      .def("insert", &BandStore::insert, py::arg("key"), py::arg("whole"))
      .def("query", &BandStore::query, py::arg("whole"), py::arg("bands"))
      .def("insert_values", &BandStore::insert_values, py::arg("key"), py::arg("values"))
      .def("insert_many", &BandStore::insert_many, py::arg("rows"), py::arg("keys"), py::arg("sketches"), py::arg("h"), py::arg("start"))
      .def("query_values", &BandStore::query_values, py::arg("values"), py::arg("bands"))
      .def("remove", &BandStore::remove, py::arg("row"))
      .def("key_repeated", &BandStore::key_repeated)
      .def("materialize", &BandStore::materialize, py::arg("rows"));
  store_type = reinterpret_cast<PyTypeObject*>(py::type::of<BandStore>().ptr());
  add_fastcall<band_store_insert>(m, "band_store_insert",
                          "band_store_insert(store, rows, key, sketch, h, check): MinHashLSH.insert of a sketch of 64-bit values; False if not");
  add_fastcall<band_store_query>(m, "band_store_query",
                          "band_store_query(store, sketch, h): MinHashLSH.query's keys of a sketch of 64-bit values, or None");
  add_fastcall<band_stores_query>(m, "band_stores_query",
                          "band_stores_query(stores, bands, sketch, h): MinHashLSHEnsemble.query's keys from its partitions' stores, or None");
}

}  // namespace neardup::python
