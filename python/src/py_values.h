// A sketch's values as the C++ stores read them: through the buffer protocol of a NumPy array of
// unsigned 64-bit integers (pybind11's array conversion cost a third of an LSH query).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace neardup::python {

/// The Mersenne prime 2^61 - 1 of datasketch's universal hashing (the MinHash permutations,
/// the Bloom filter's keys).
inline constexpr uint64_t kMersenne61 = (uint64_t{1} << 61) - 1;

/// The sketch classes whose len() is the length of their `hashvalues` (neardup.datasketch's
/// MinHash and LeanMinHash, named when that module is imported: sketch_length_types): the
/// length of one of exactly these is read from its array, without calling its __len__.
inline std::vector<PyObject*>& sketch_length_types() {
  static std::vector<PyObject*> types;  // strong references, kept for the process's life
  return types;
}

/// Whether `obj` is a one-dimensional NumPy array of native unsigned 64-bit integers, and its
/// data, length and stride if so: read from the array's fields, where the buffer protocol's
/// export builds a format string on every call (a tenth of an LSH query). The fields read have
/// the same places in NumPy 1 and 2.
inline bool u64_array(PyObject* obj, const char** data, Py_ssize_t* size, Py_ssize_t* stride) {
  namespace d = pybind11::detail;
  if (!d::npy_api::get().PyArray_Check_(obj)) return false;
  const d::PyArray_Proxy* a = d::array_proxy(obj);
  const d::PyArrayDescr_Proxy* t = d::array_descriptor_proxy(a->descr);
  const bool native = t->byteorder == '=' || t->byteorder == '|' || (t->byteorder == '<') == (std::endian::native == std::endian::little);
  constexpr bool long64 = sizeof(unsigned long) == 8;  // NPY_ULONG is C's unsigned long
  if (a->nd != 1 || t->kind != 'u' || !native || (t->type_num != d::npy_api::NPY_ULONGLONG_ && !(long64 && t->type_num == d::npy_api::NPY_ULONG_)))
    return false;
  *data = a->data;
  *size = a->dimensions[0];
  *stride = a->strides[0];
  return true;
}

/// The attribute name "hashvalues", interned as Python interns attribute names, so that looking
/// it up in an instance's dict compares pointers, not strings. Made once (the module is never
/// unloaded).
inline PyObject* hashvalues_name() {
  static PyObject* const name = PyUnicode_InternFromString("hashvalues");
  if (name == nullptr) throw pybind11::error_already_set();
  return name;
}

/// len(sketch), and in `values` its `hashvalues` when they had to be read for it (for one of
/// sketch_length_types: the length of that array), else an empty object: the caller reads them
/// after its checks of the length, as datasketch does.
inline Py_ssize_t sketch_length(PyObject* sketch, pybind11::object& values) {
  namespace py = pybind11;
  const auto& types = sketch_length_types();
  if (std::find(types.begin(), types.end(), reinterpret_cast<PyObject*>(Py_TYPE(sketch))) == types.end()) {
    const Py_ssize_t len = PyObject_Length(sketch);
    if (len < 0) throw py::error_already_set();
    return len;
  }
  PyObject* v = PyObject_GetAttr(sketch, hashvalues_name());
  if (v == nullptr) throw py::error_already_set();
  values = py::reinterpret_steal<py::object>(v);
  const char* data = nullptr;
  Py_ssize_t size = 0, stride = 0;
  const Py_ssize_t len = u64_array(v, &data, &size, &stride) ? size : PyObject_Length(v);
  if (len < 0) throw py::error_already_set();
  return len;
}

/// The sketch's `hashvalues`, read if `values` is still empty (sketch_length).
inline PyObject* sketch_values(PyObject* sketch, pybind11::object& values) {
  if (!values) {
    PyObject* v = PyObject_GetAttr(sketch, hashvalues_name());
    if (v == nullptr) throw pybind11::error_already_set();
    values = pybind11::reinterpret_steal<pybind11::object>(v);
  }
  return values.ptr();
}

/// Copies the first n values of `values` (a one-dimensional buffer of native unsigned 64-bit
/// integers, strided or not) into out, byte-swapped (big-endian) if `swap`. False, with nothing
/// copied, for another layout or an object that is not a buffer; ValueError when it holds fewer
/// than n.
inline bool try_read_u64(PyObject* values, size_t n, uint64_t* out, bool swap) {
  const char* data = nullptr;
  Py_ssize_t size = 0, stride = 0;
  if (u64_array(values, &data, &size, &stride)) {
    if (static_cast<size_t>(size) < n) throw pybind11::value_error("the sketch is shorter than its bands");
    for (size_t i = 0; i < n; ++i, data += stride) {
      uint64_t v;
      std::memcpy(&v, data, sizeof v);
      out[i] = swap ? __builtin_bswap64(v) : v;
    }
    return true;
  }
  Py_buffer view;
  if (PyObject_GetBuffer(values, &view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
    PyErr_Clear();  // not a buffer (a list, say): as another layout
    return false;
  }
  const std::string_view format = view.format ? view.format : "B";
  const bool u64 = view.itemsize == 8 && view.ndim == 1 &&
                   (format == "L" || format == "Q" || format == "<L" || format == "<Q" || format == "=L" || format == "=Q");
  const size_t have = u64 ? static_cast<size_t>(view.shape[0]) : 0;
  if (u64 && have >= n) {
    const auto* at = static_cast<const char*>(view.buf);
    for (size_t i = 0; i < n; ++i, at += view.strides[0]) {
      uint64_t v;
      std::memcpy(&v, at, sizeof v);
      out[i] = swap ? __builtin_bswap64(v) : v;
    }
  }
  PyBuffer_Release(&view);
  if (u64 && have < n) throw pybind11::value_error("the sketch is shorter than its bands");
  return u64;
}

/// try_read_u64, with a TypeError for another layout.
inline void read_u64(const pybind11::handle& values, size_t n, uint64_t* out, bool swap) {
  if (!try_read_u64(values.ptr(), n, out, swap)) throw pybind11::type_error("the sketch's values must be a one-dimensional array of uint64");
}

}  // namespace neardup::python
