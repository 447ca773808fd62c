// The LSH tables neardup.datasketch exposes as datasketch has them: per band a dict from a band
// key (bytes) to the list of keys in that bucket. Filled through the C API by the LSH's and the
// forest's inserts (datasketch_native.cpp) and by a BandStore made into dicts (band_store.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace neardup::python {

/// Appends `key` to bucket `h` of `table` (a dict; a new bucket is a new list).
///
/// A new list is left out of the cyclic garbage collector: it holds the index's keys (hashable),
/// which make no cycle, and an index holds a list per bucket of every band, which each collection
/// would walk (a MinHashLSH of 50,000 keys and 25 bands: 1.05 s to insert with them tracked,
/// 0.39 s with the collector off). A key that itself refers back to its index would keep the
/// index alive.
inline void append_to_bucket(PyObject* table, PyObject* h, PyObject* key) {
  namespace py = pybind11;
  if (!PyDict_Check(table)) throw py::type_error("a hash table must be a dict");
  PyObject* bucket = PyDict_GetItemWithError(table, h);  // borrowed
  if (bucket == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    py::list fresh(1);
    fresh[0] = py::reinterpret_borrow<py::object>(key);
    PyObject_GC_UnTrack(fresh.ptr());
    if (PyDict_SetItem(table, h, fresh.ptr()) != 0) throw py::error_already_set();
  } else if (PyList_Check(bucket)) {
    if (PyList_Append(bucket, key) != 0) throw py::error_already_set();
  } else {
    py::reinterpret_borrow<py::object>(bucket).attr("append")(py::reinterpret_borrow<py::object>(key));
  }
}

}  // namespace neardup::python
