// Module functions called through CPython's vectorcall protocol (METH_FASTCALL) instead of
// pybind11's dispatcher, for the calls made once per sketch from a Python loop
// (MinHashLSH.insert and query, MinHashLSHForest.add): the dispatcher's argument conversion,
// overload bookkeeping and type lookups cost about 150 ns a call, as much as the work of an add.
// The first argument is an object of a class bound by pybind11, checked to be exactly that class
// and read through pybind11's instance layout (a class without a Python subclass or multiple
// inheritance has its C++ object as the instance's first value).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

namespace neardup::python {

/// The C++ object of `obj` if it is an instance of exactly the class `type` bound for T (the
/// type object of py::type::of<T>()), else a TypeError.
template <class T>
T& bound_self(PyObject* obj, PyTypeObject* type) {
  if (Py_TYPE(obj) != type) throw pybind11::type_error(std::string("expected a ") + type->tp_name);
  return *reinterpret_cast<pybind11::detail::instance*>(obj)->get_value_and_holder().template value_ptr<T>();
}

/// A METH_FASTCALL function calling Fn(args, nargs) (a pybind11::object result), with C++
/// exceptions turned into Python's as pybind11 turns them.
template <pybind11::object (*Fn)(PyObject* const*, Py_ssize_t)>
PyObject* fastcall(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept {
  try {
    return Fn(args, nargs).release().ptr();
  } catch (pybind11::error_already_set& e) {
    e.restore();
  } catch (const pybind11::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

/// Adds fastcall<Fn> to module m as `name`, with its docstring.
template <pybind11::object (*Fn)(PyObject* const*, Py_ssize_t)>
void add_fastcall(pybind11::module_& m, const char* name, const char* doc) {
  static PyMethodDef def{name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fastcall<Fn>)), METH_FASTCALL, doc};  // CPython keeps a pointer to it
  PyObject* f = PyCFunction_NewEx(&def, nullptr, m.ptr());
  if (f == nullptr || PyModule_AddObject(m.ptr(), name, f) != 0) {
    Py_XDECREF(f);
    throw pybind11::error_already_set();
  }
}

/// A TypeError unless nargs is n.
inline void expect_args(const char* name, Py_ssize_t nargs, Py_ssize_t n) {
  if (nargs != n) throw pybind11::type_error(std::string(name) + " takes " + std::to_string(n) + " arguments");
}

}  // namespace neardup::python
