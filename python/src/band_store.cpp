// MinHashLSH's band tables kept in C++ (neardup.datasketch.MinHashLSH without a custom hashfunc):
// datasketch's index is a dict per band from a band's big-endian bytes to a list of keys, and
// a dict from each key to its band keys, which cost a bytes object and a list entry per band and
// key (about 5 KB of Python objects per sketch at 25 bands); here a sketch is one row of bytes in
// an arena, and a band's buckets a flat multimap from the band bytes' hash to the rows' numbers,
// each match confirmed on the bytes themselves, so the answers are the dicts' exactly. The dicts
// are made from the rows when asked for (materialize), in the order the keys were added.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "internal/flat_multimap.h"
#include "internal/hash.h"
#include "py_buckets.h"
#include "py_values.h"

namespace py = pybind11;

namespace neardup::python {
namespace {

class BandStore {
 public:
  BandStore(size_t bands, size_t band_bytes) : bands_(bands), band_bytes_(band_bytes), maps_(bands) {
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
    return query_bytes(big_endian(values, bands), bands);
  }

  // MinHashLSH.insert(key, sketch) for keys[i], sketches[i] from `from` on, in C++: the checks
  // of insert (a sketch of h values, a key not yet in `rows`, which gets the key's row). Stops
  // at the first sketch whose values are not a one-dimensional uint64 array, and returns its
  // place (len(keys) when all went in): the caller takes that one by the general path.
  size_t insert_many(const py::dict& rows, const py::list& keys, const py::list& sketches, Py_ssize_t h, size_t from) {
    if (keys.size() != sketches.size()) throw py::value_error("a key per sketch");
    for (size_t i = from; i < keys.size(); ++i) {
      const py::handle key = keys[i], sketch = sketches[i];
      const Py_ssize_t len = PyObject_Length(sketch.ptr());
      if (len < 0) throw py::error_already_set();
      if (len != h) throw py::value_error("Expecting minhash with length " + std::to_string(h) + ", got " + std::to_string(len));
      const int known = PyDict_Contains(rows.ptr(), key.ptr());
      if (known < 0) throw py::error_already_set();
      if (known) throw py::value_error("The given key already exists");
      const py::object values = sketch.attr("hashvalues");
      const char* data = nullptr;
      try {
        data = big_endian(values, bands_);
      } catch (const py::type_error&) {
        return i;
      }
      const uint32_t row = insert_row(py::reinterpret_borrow<py::object>(key), data);
      if (PyDict_SetItem(rows.ptr(), key.ptr(), py::int_(row).ptr()) != 0) throw py::error_already_set();
    }
    return keys.size();
  }

  uint32_t insert_row(const py::object& key, const char* data) {
    if (keys_.size() >= UINT32_MAX - 1) throw py::value_error("too many keys for one index");
    const auto row = static_cast<uint32_t>(keys_.size());
    arena_.insert(arena_.end(), data, data + bands_ * band_bytes_);
    // Every band's home slot asked for before any is written: the bands' tables are apart in
    // memory, and their cache misses then overlap instead of following one another.
    hashes_.resize(bands_);
    for (size_t i = 0; i < bands_; ++i) {
      hashes_[i] = band_hash(data, i);
      maps_[i].prefetch(hashes_[i]);
    }
    for (size_t i = 0; i < bands_; ++i) maps_[i].insert(hashes_[i], row);
    keys_.push_back(key);
    stamp_.push_back(0);
    ++live_;
    return row;
  }

  // The keys in the buckets of the sketch's first `bands` bands, as a set.
  py::set query(const py::bytes& whole, size_t bands) {
    if (bands > bands_) throw py::value_error("more bands than hash tables");
    return query_bytes(bytes_of(whole, bands), bands);
  }

  py::set query_bytes(const char* data, size_t bands) {
    py::set found;
    if (++epoch_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0), epoch_ = 1;
    hashes_.resize(bands);
    for (size_t i = 0; i < bands; ++i) {
      hashes_[i] = band_hash(data, i);
      maps_[i].prefetch(hashes_[i]);
    }
    for (size_t i = 0; i < bands; ++i) {
      const char* band = data + i * band_bytes_;
      maps_[i].for_each(hashes_[i], [&](uint32_t row) {
        if (stamp_[row] == epoch_ || keys_[row].is_none()) return;
        if (std::memcmp(row_band(row, i), band, band_bytes_) != 0) return;  // another band, the same hash
        stamp_[row] = epoch_;
        if (PySet_Add(found.ptr(), keys_[row].ptr()) != 0) throw py::error_already_set();
      });
    }
    return found;
  }

  // Takes a row out of every bucket (it stays in the arena).
  void remove(uint32_t row) {
    if (row >= keys_.size() || keys_[row].is_none()) throw py::value_error("no such row");
    keys_[row] = py::none();
    --live_;
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
        const py::bytes h(row_band(static_cast<uint32_t>(row), i), band_bytes_);
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
        for (size_t i = 0; i < bands_; ++i) hs.append(py::bytes(row_band(row, i), band_bytes_));
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
  uint64_t band_hash(const char* whole, size_t i) const noexcept {
    return internal::hash_bytes(whole + i * band_bytes_, band_bytes_, i);
  }
  const char* row_band(uint32_t row, size_t i) const noexcept { return arena_.data() + (row * bands_ + i) * band_bytes_; }

  size_t bands_, band_bytes_;
  std::vector<internal::FlatMultimap> maps_;  // per band: band bytes' hash -> rows
  std::vector<char> arena_;                   // row r's bands: [r * bands_ * band_bytes_, ...)
  std::vector<py::object> keys_;              // per row: its key, None once removed
  std::vector<uint32_t> stamp_;               // per row: the last query that found it
  std::vector<uint64_t> hashes_;              // scratch: a sketch's band hashes
  std::vector<uint64_t> swapped_;             // scratch: a sketch's values, big-endian
  uint32_t epoch_ = 0;
  size_t live_ = 0;
};

}  // namespace

void register_band_store(py::module_& m) {
  py::class_<BandStore>(m, "BandStore")
      .def(py::init<size_t, size_t>(), py::arg("bands"), py::arg("band_bytes"))
      .def_property_readonly("band_bytes", &BandStore::band_bytes)
      .def("__len__", &BandStore::size)
      .def("insert", &BandStore::insert, py::arg("key"), py::arg("whole"))
      .def("query", &BandStore::query, py::arg("whole"), py::arg("bands"))
      .def("insert_values", &BandStore::insert_values, py::arg("key"), py::arg("values"))
      .def("insert_many", &BandStore::insert_many, py::arg("rows"), py::arg("keys"), py::arg("sketches"), py::arg("h"), py::arg("start"))
      .def("query_values", &BandStore::query_values, py::arg("values"), py::arg("bands"))
      .def("remove", &BandStore::remove, py::arg("row"))
      .def("materialize", &BandStore::materialize, py::arg("rows"));
}

}  // namespace neardup::python
