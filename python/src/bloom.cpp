// MinHashLSHBloom's insert and query (neardup/datasketch/lsh_bloom.py) in one C++ call each: a
// band's key (the sum of its r values modulo 2^61 - 1), its k bit positions by double hashing of
// two splitmix64 mixes, and the bits of the band's filter set or tested, for every band. In
// Python each band cost a dozen NumPy calls: 200 us an insert, 80 us a query at 25 bands, 4x
// datasketch's with a set for its filter. The bits stay in the BloomTables' NumPy arrays (in
// memory or memory-mapped), so the Python path, sync() and the files see the same bits.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "py_fastcall.h"
#include "py_values.h"

namespace py = pybind11;

namespace neardup::python {
namespace {

// splitmix64's finaliser, as lsh_bloom.py's _mix.
uint64_t mix(uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A MinHashLSHBloom's filters: per band its bit array (a writable buffer of the BloomTable's
// NumPy array, held while this lives), its size in bits and its k; and the list of tables they
// came from with its items, so that a call finds out when `hashtables` changed.
class BloomBands {
 public:
  BloomBands(const py::list& tables, const py::list& arrays, const std::vector<uint64_t>& bits, const std::vector<uint64_t>& k, size_t r,
             Py_ssize_t h)
      : tables_(tables), r_(r), h_(h) {
    for (const py::handle t : tables) table_items_.push_back(py::reinterpret_borrow<py::object>(t));  // held: their addresses stay theirs
    if (arrays.size() != tables.size() || arrays.size() != bits.size() || arrays.size() != k.size())
      throw py::value_error("a table, a bit count and a k per band");
    if (r == 0 || arrays.size() * r > static_cast<size_t>(h)) throw py::value_error("the bands do not fit the sketch");
    for (size_t i = 0; i < arrays.size(); ++i) {
      Band b;
      b.owner = py::reinterpret_borrow<py::object>(arrays[i]);
      if (PyObject_GetBuffer(b.owner.ptr(), &b.view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
      b.held = true;
      b.bits = bits[i];
      b.k = k[i];
      if (b.bits == 0 || b.bits >= (uint64_t{1} << 63) || b.k == 0 || static_cast<uint64_t>(b.view.len) * 8 < b.bits) {
        PyBuffer_Release(&b.view);
        throw py::value_error("a band's bits must be 1 to 2^63 - 1, within its array");
      }
      bands_.push_back(std::move(b));
    }
  }
  BloomBands(const BloomBands&) = delete;
  BloomBands& operator=(const BloomBands&) = delete;
  ~BloomBands() {
    for (Band& b : bands_)
      if (b.held) PyBuffer_Release(&b.view);
  }

  // Whether `tables` is the list this was made from, holding the same tables.
  bool made_from(PyObject* tables) const noexcept {
    if (tables != tables_.ptr() || !PyList_Check(tables) || PyList_GET_SIZE(tables) != static_cast<Py_ssize_t>(table_items_.size())) return false;
    for (size_t i = 0; i < table_items_.size(); ++i)
      if (PyList_GET_ITEM(tables, static_cast<Py_ssize_t>(i)) != table_items_[i].ptr()) return false;
    return true;
  }

  // Inserts the sketch, or returns false (nothing done) when its values are not 64-bit
  // integers: the caller takes the Python path.
  bool insert(PyObject* sketch) {
    if (!read(sketch)) return false;
    for (size_t i = 0; i < bands_.size(); ++i) {
      Band& b = bands_[i];
      auto* bytes = static_cast<uint8_t*>(b.view.buf);
      each_position(i, [&](uint64_t p) {
        bytes[p >> 3] = static_cast<uint8_t>(bytes[p >> 3] | (1u << (p & 7)));
        return true;
      });
    }
    return true;
  }

  // Whether a band of the sketch has all its bits set; NotImplemented for values not 64-bit
  // integers.
  py::object query(PyObject* sketch) {
    if (!read(sketch)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    for (size_t i = 0; i < bands_.size(); ++i) {
      const auto* bytes = static_cast<const uint8_t*>(bands_[i].view.buf);
      if (each_position(i, [&](uint64_t p) { return ((bytes[p >> 3] >> (p & 7)) & 1) != 0; })) return py::bool_(true);
    }
    return py::bool_(false);
  }

 private:
  struct Band {
    py::object owner;
    Py_buffer view{};
    bool held = false;
    uint64_t bits = 0, k = 0;
    Band() = default;
    Band(Band&& o) noexcept : owner(std::move(o.owner)), view(o.view), held(o.held), bits(o.bits), k(o.k) { o.held = false; }
  };

  // The sketch's values into values_ after MinHashLSHBloom's length check (ValueError); false
  // for values that are not 64-bit integers.
  bool read(PyObject* sketch) {
    py::object values;
    const Py_ssize_t len = sketch_length(sketch, values);
    if (len != h_) throw py::value_error("Expecting minhash with length " + std::to_string(h_) + ", got " + std::to_string(len));
    values_.resize(bands_.size() * r_);
    return try_read_u64(sketch_values(sketch, values), values_.size(), values_.data(), false);
  }

  // Calls fn(p) for each of band i's k positions while it returns true; whether it always did.
  // The key is NumPy's sum of the band's uint64 values (wrapping) modulo 2^61 - 1; position j is
  // (h1 + j h2) mod bits in Python's unbounded integers, which is (h1 mod bits + j (h2 mod
  // bits)) mod bits: each from the one before by an addition, below 2^64 while bits is below
  // 2^63 (a filter of a billion gigabytes).
  template <class Fn>
  bool each_position(size_t i, Fn&& fn) const {
    uint64_t sum = 0;
    for (size_t x = i * r_; x < (i + 1) * r_; ++x) sum += values_[x];
    const uint64_t key = sum % kMersenne61;
    const uint64_t h1 = mix(key), h2 = mix(key ^ 0x9E3779B97F4A7C15ULL) | 1;
    const Band& b = bands_[i];
    const uint64_t step = h2 % b.bits;
    uint64_t p = h1 % b.bits;
    for (uint64_t j = 0; j < b.k; ++j) {
      if (!fn(p)) return false;
      p += step;
      if (p >= b.bits) p -= b.bits;
    }
    return true;
  }

  py::object tables_;
  std::vector<py::object> table_items_;
  std::vector<Band> bands_;
  size_t r_;
  Py_ssize_t h_;
  std::vector<uint64_t> values_;
};

PyTypeObject* bands_type = nullptr;  // BloomBands' Python class, once registered

// bloom_insert(bands, tables, sketch) and bloom_query(bands, tables, sketch) without pybind11's
// dispatcher (py_fastcall.h): True once inserted, or the answer; NotImplemented for a sketch the
// Python path takes; None, with nothing done, when `tables` (the index's hashtables) is not what
// `bands` was made from.
py::object bloom_insert(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("bloom_insert", nargs, 3);
  BloomBands& bands = bound_self<BloomBands>(args[0], bands_type);
  if (!bands.made_from(args[1])) return py::none();
  return bands.insert(args[2]) ? py::object(py::bool_(true)) : py::reinterpret_borrow<py::object>(Py_NotImplemented);
}
py::object bloom_query(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("bloom_query", nargs, 3);
  BloomBands& bands = bound_self<BloomBands>(args[0], bands_type);
  if (!bands.made_from(args[1])) return py::none();
  return bands.query(args[2]);
}

}  // namespace

void register_bloom(py::module_& m) {
  py::class_<BloomBands>(m, "BloomBands")
      .def(py::init<const py::list&, const py::list&, const std::vector<uint64_t>&, const std::vector<uint64_t>&, size_t, Py_ssize_t>(),
           py::arg("tables"), py::arg("arrays"), py::arg("bits"), py::arg("k"), py::arg("r"), py::arg("h"));
  bands_type = reinterpret_cast<PyTypeObject*>(py::type::of<BloomBands>().ptr());
  add_fastcall<bloom_insert>(m, "bloom_insert",
                            "bloom_insert(bands, tables, sketch): True once inserted; NotImplemented for values the Python path "
                            "takes; None when tables are not those of bands");
  add_fastcall<bloom_query>(m, "bloom_query",
                           "bloom_query(bands, tables, sketch): whether a band's bits are all set; NotImplemented for values the "
                           "Python path takes; None when tables are not those of bands");
}

}  // namespace neardup::python
