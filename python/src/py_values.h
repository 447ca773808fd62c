// A sketch's values as the C++ stores read them: through the buffer protocol of a NumPy array of
// unsigned 64-bit integers (pybind11's array conversion cost a third of an LSH query).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace neardup::python {

/// Copies the first n values of `values` (a one-dimensional buffer of native unsigned 64-bit
/// integers, strided or not) into out, byte-swapped (big-endian) if `swap`. Throws TypeError for
/// another layout and ValueError when it holds fewer than n.
inline void read_u64(const pybind11::handle& values, size_t n, uint64_t* out, bool swap) {
  namespace py = pybind11;
  Py_buffer view;
  if (PyObject_GetBuffer(values.ptr(), &view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
    PyErr_Clear();  // not a buffer (a list, say): the same TypeError as another layout's
    throw py::type_error("the sketch's values must be a one-dimensional array of uint64");
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
  if (!u64) throw py::type_error("the sketch's values must be a one-dimensional array of uint64");
  if (have < n) throw py::value_error("the sketch is shorter than its bands");
}

}  // namespace neardup::python
