// The hot loops of neardup.datasketch's sketches other than MinHash (module.cpp has MinHash's,
// icws.cpp WeightedMinHashGenerator's): the packing of bBitMinHash's values, HyperLogLog's
// register updates, MinHashLSHEnsemble's partitions, and the fill and lookup of the LSH tables.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "py_buckets.h"
#include "py_fastcall.h"

namespace py = pybind11;

namespace neardup::python {
namespace {

// bBitMinHash's pickled values: `values` (each below 2^bits) in little-endian 64-bit blocks of
// 64 / bits slots, the first value in a block's highest slot.
void pack_blocks(const uint32_t* v, size_t n, int bits, char* out) {
  const size_t per = static_cast<size_t>(64 / bits), blocks = (n + per - 1) / per;
  for (size_t b = 0; b < blocks; ++b) {
    uint64_t x = 0;
    for (size_t j = 0; j < per && b * per + j < n; ++j) x |= uint64_t{v[b * per + j]} << ((per - 1 - j) * static_cast<size_t>(bits));
    for (int byte = 0; byte < 8; ++byte) out[b * 8 + static_cast<size_t>(byte)] = static_cast<char>(x >> (8 * byte));
  }
}

void check_slot_bits(int bits) {
  if (bits < 1 || bits > 32 || 64 % bits != 0) throw py::value_error("bits must be 1, 2, 4, 8, 16 or 32");
}

size_t block_bytes(size_t n, int bits) {
  const size_t per = static_cast<size_t>(64 / bits);
  return (n + per - 1) / per * 8;
}

py::bytes bbit_pack(const py::array_t<uint32_t, py::array::c_style | py::array::forcecast>& values, int bits) {
  check_slot_bits(bits);
  const auto n = static_cast<size_t>(values.size());
  std::string out(block_bytes(n, bits), '\0');
  pack_blocks(values.data(), n, bits, out.data());
  return py::bytes(out);
}

// The inverse: `count` values of `bits` each from the blocks at p (block_bytes(count, bits)).
py::array_t<uint32_t> unpack_blocks(const unsigned char* p, size_t count, int bits) {
  const size_t per = static_cast<size_t>(64 / bits);
  py::array_t<uint32_t> out(static_cast<py::ssize_t>(count));
  uint32_t* o = out.mutable_data();
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  for (size_t i = 0; i < count; ++i) {
    const size_t b = i / per, j = i % per;
    uint64_t x = 0;
    for (int byte = 0; byte < 8; ++byte) x |= uint64_t{p[b * 8 + static_cast<size_t>(byte)]} << (8 * byte);
    o[i] = static_cast<uint32_t>((x >> ((per - 1 - j) * static_cast<size_t>(bits))) & mask);
  }
  return out;
}

// The bytes-like `data` through the simple buffer protocol, released when this goes.
struct SimpleBuffer {
  Py_buffer view;
  explicit SimpleBuffer(PyObject* data) {
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  }
  SimpleBuffer(const SimpleBuffer&) = delete;
  SimpleBuffer& operator=(const SimpleBuffer&) = delete;
  ~SimpleBuffer() { PyBuffer_Release(&view); }
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(view.buf); }
  size_t size() const { return static_cast<size_t>(view.len); }
};

// A bBitMinHash's pickled state, "<qBdi" (seed, b, r, the number of values) then the blocks,
// in one call (py_fastcall.h) where Python made three: bbit_state(seed, b, r, values) with
// values a one-dimensional uint32 array, or None for other values (the caller packs them).
// bbit_restore(state) is the inverse: (seed, b, r, values).
constexpr size_t kBbitHead = 8 + 1 + 8 + 4;

int bbit_slot_bits(long b) {
  if (b < 0 || b > 32) throw py::value_error("Incorrect value of b");
  for (const int bits : {1, 2, 4, 8, 16, 32})
    if (b <= bits && !(b == 0 && bits < 4)) return bits;
  throw py::value_error("Incorrect value of b");
}

py::object bbit_state(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("bbit_state", nargs, 4);
  const long long seed = PyLong_AsLongLong(args[0]);
  const long b = PyLong_AsLong(args[1]);
  const double r = PyFloat_AsDouble(args[2]);
  if (PyErr_Occurred()) throw py::error_already_set();
  Py_buffer view;
  if (PyObject_GetBuffer(args[3], &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return py::none();
  }
  const std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> release(&view, PyBuffer_Release);
  const std::string_view format = view.format ? view.format : "B";
  if (view.itemsize != 4 || view.ndim != 1 || (format != "I" && format != "<I" && format != "=I")) return py::none();
  const int bits = bbit_slot_bits(b);
  const auto n = static_cast<size_t>(view.shape[0]);
  if (n > INT32_MAX) throw py::value_error("too many values");
  PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(kBbitHead + block_bytes(n, bits)));
  if (out == nullptr) throw py::error_already_set();
  py::object hold = py::reinterpret_steal<py::object>(out);
  char* p = PyBytes_AS_STRING(out);
  const auto count = static_cast<int32_t>(n);
  const auto byte_b = static_cast<uint8_t>(b);
  std::memcpy(p, &seed, 8);  // little-endian, as "<qBdi" (x86-64 and aarch64 are)
  std::memcpy(p + 8, &byte_b, 1);
  std::memcpy(p + 9, &r, 8);
  std::memcpy(p + 17, &count, 4);
  pack_blocks(static_cast<const uint32_t*>(view.buf), n, bits, p + kBbitHead);
  return hold;
}

py::object bbit_restore(PyObject* const* args, Py_ssize_t nargs) {
  expect_args("bbit_restore", nargs, 1);
  const SimpleBuffer buf(args[0]);
  if (buf.size() < kBbitHead) throw py::value_error("a bBitMinHash state is 21 bytes or more");
  int64_t seed;
  uint8_t b;
  double r;
  int32_t count;
  std::memcpy(&seed, buf.bytes(), 8);
  std::memcpy(&b, buf.bytes() + 8, 1);
  std::memcpy(&r, buf.bytes() + 9, 8);
  std::memcpy(&count, buf.bytes() + 17, 4);
  const int bits = bbit_slot_bits(b);
  if (count < 0 || buf.size() < kBbitHead + block_bytes(static_cast<size_t>(count), bits)) throw py::value_error("the buffer is shorter than its values");
  return py::make_tuple(seed, int{b}, r, unpack_blocks(buf.bytes() + kBbitHead, static_cast<size_t>(count), bits));
}

// HyperLogLog.update over many hashes: each hash's lowest p bits pick a register, which keeps
// the largest rank max_rank - bit_length(h >> p) + 1. A rank of 0 or less (a hash wider than
// p + max_rank bits) raises, the registers updated up to the hash before it, as a loop of
// update() leaves them.
void hll_update(py::array_t<int8_t, py::array::c_style> reg, const py::array_t<uint64_t, py::array::c_style | py::array::forcecast>& hashes, int p,
                int max_rank) {
  const size_t m = static_cast<size_t>(reg.size());
  if (p < 0 || p > 30 || m != (size_t{1} << p)) throw py::value_error("the registers are not 2^p");
  int8_t* r = reg.mutable_data();
  const uint64_t* h = hashes.data();
  const size_t n = static_cast<size_t>(hashes.size());
  for (size_t i = 0; i < n; ++i) {
    const uint64_t bits = h[i] >> p;
    const int rank = max_rank - static_cast<int>(std::bit_width(bits)) + 1;
    if (rank <= 0) throw py::value_error("Hash value overflow, maximum size is " + std::to_string(max_rank) + " bits");
    int8_t& x = r[h[i] & (m - 1)];
    if (rank > x) x = static_cast<int8_t>(rank);
  }
}

// NumPy's sum of n doubles (pairwise: runs of up to 128 summed in 8 interleaved parts), so that
// the sums below round as np.sum's do.
double numpy_sum(const double* a, size_t n) {
  if (n < 8) {
    double res = 0.0;
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t half = n / 2;
  half -= half % 8;
  return numpy_sum(a, half) + numpy_sum(a + half, n - half);
}

// MinHashLSHEnsemble's partitions of the set sizes (Zhu et al., VLDB 2016), as datasketch finds
// them: nfp(l, u), the expected false positives of sizes[l..u] all taken as sizes[u], is
// sum((s_u - s_i) / s_u * c_i) summed as np.sum does; the partitions minimise the total by
// dynamic programming over (upper end, number of partitions), ties to the smaller split.
// Returns (lower, upper) sizes of each partition.
py::list ensemble_partitions(const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& sizes_in,
                             const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& counts_in, int num_part) {
  const size_t n = static_cast<size_t>(sizes_in.size());
  if (n == 0 || static_cast<size_t>(counts_in.size()) != n) throw py::value_error("sizes and counts must be of one nonzero length");
  const int64_t* sizes = sizes_in.data();
  py::list out;
  if (num_part < 2) {
    out.append(py::make_tuple(sizes[0], sizes[n - 1]));
    return out;
  }
  if (static_cast<size_t>(num_part) >= n) {
    for (size_t i = 0; i < n; ++i) out.append(py::make_tuple(sizes[i], sizes[i]));
    return out;
  }
  if (n > 20000) throw py::value_error("more than 20,000 distinct set sizes: round the sizes to fewer values");
  std::vector<double> nfps(n * n, 0.0), terms(n);
  {
    py::gil_scoped_release nogil;
    const int64_t* counts = counts_in.data();
    for (size_t u = 0; u < n; ++u) {
      const double su = static_cast<double>(sizes[u]);
      for (size_t i = 0; i <= u; ++i) terms[i] = (su - static_cast<double>(sizes[i])) / su * static_cast<double>(counts[i]);
      for (size_t l = 0; l <= u; ++l) nfps[l * n + u] = numpy_sum(terms.data() + l, u - l + 1);
    }
  }
  const auto nfp = [&](size_t l, size_t u) { return nfps[l * n + u]; };
  const auto p_total = static_cast<size_t>(num_part);
  if (p_total == 2) {
    double best = 0;
    size_t at = 0;
    for (size_t u1 = 0; u1 + 1 < n; ++u1) {
      const double v = nfp(0, u1) + nfp(u1 + 1, n - 1);
      if (u1 == 0 || v < best) best = v, at = u1;
    }
    out.append(py::make_tuple(sizes[0], sizes[at]));
    out.append(py::make_tuple(sizes[at + 1], sizes[n - 1]));
    return out;
  }
  // cost[u][p - 2]: the least total of p partitions of sizes[0..u].
  std::vector<double> cost(n * (p_total - 2), 0.0);
  const auto c = [&](size_t u, size_t p) -> double& { return cost[u * (p_total - 2) + (p - 2)]; };
  for (size_t p = 2; p < p_total; ++p)
    for (size_t u = p - 1; u < n; ++u) {
      double best = 0;
      bool any = false;
      for (size_t u1 = p == 2 ? 0 : p - 2; u1 < u; ++u1) {
        const double v = (p == 2 ? nfp(0, u1) : c(u1, p - 1)) + nfp(u1 + 1, u);
        if (!any || v < best) best = v, any = true;
      }
      c(u, p) = best;  // 0 when no split exists, as the zeros datasketch starts from
    }
  // The last partition's lower end, then back to the first, each the smaller split on ties.
  // (datasketch reads the cost of p partitions here, where p - 1 would be the count left: kept,
  // so that the partitions are its.)
  const auto split = [&](size_t p, size_t u) {
    double best = 0;
    size_t at = 0;
    bool any = false;
    for (size_t u1 = p - 2; u1 < u; ++u1) {
      const double v = c(u1, p) + nfp(u1 + 1, u);
      if (!any || v < best) best = v, at = u1, any = true;
    }
    if (!any) throw py::value_error("min() arg is an empty sequence");
    return at;
  };
  std::vector<std::pair<int64_t, int64_t>> parts;
  size_t u = [&] {
    double best = 0;
    size_t at = 0;
    bool any = false;
    for (size_t u1 = p_total - 2; u1 + 1 < n; ++u1) {
      const double v = c(u1, p_total - 1) + nfp(u1 + 1, n - 1);
      if (!any || v < best) best = v, at = u1, any = true;
    }
    return at;
  }();
  parts.push_back({sizes[u + 1], sizes[n - 1]});
  for (size_t p = p_total - 1; p > 1; --p) {
    const size_t u1 = split(p, u);
    parts.insert(parts.begin(), {sizes[u1 + 1], sizes[u]});
    u = u1;
  }
  parts.insert(parts.begin(), {sizes[0], sizes[u]});
  for (const auto& [lo, hi] : parts) out.append(py::make_tuple(lo, hi));
  return out;
}

// bBitMinHash's values: the lowest b bits of each hash value, as uint32.
py::array_t<uint32_t> bbit_values(const py::array_t<uint64_t, py::array::c_style | py::array::forcecast>& hashvalues, int b) {
  if (b < 0 || b > 32) throw py::value_error("b must be an integer in [0, 32]");
  const auto n = static_cast<size_t>(hashvalues.size());
  py::array_t<uint32_t> out(static_cast<py::ssize_t>(n));
  const uint64_t mask = (uint64_t{1} << b) - 1;
  const uint64_t* h = hashvalues.data();
  uint32_t* o = out.mutable_data();
  for (size_t i = 0; i < n; ++i) o[i] = static_cast<uint32_t>(h[i] & mask);
  return out;
}

// MinHashLSH's and MinHashLSHForest's tables are Python dicts (datasketch's public attributes):
// these loops fill and read them through the C API, which costs a fraction of a Python loop's
// dict operations. `whole` is a sketch's big-endian bytes; band i's key is its bytes
// [i * band_bytes, (i + 1) * band_bytes).

// Band i's key, a new bytes object.
py::object band_key(const char* whole, size_t i, size_t band_bytes) {
  return py::reinterpret_steal<py::object>(PyBytes_FromStringAndSize(whole + i * band_bytes, static_cast<Py_ssize_t>(band_bytes)));
}

const char* band_bytes_of(const py::bytes& whole, size_t bands, size_t band_bytes) {
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(whole.ptr(), &data, &size) != 0) throw py::error_already_set();
  if (static_cast<size_t>(size) < bands * band_bytes) throw py::value_error("the sketch is shorter than its bands");
  return data;
}

// Appends `key` to its bucket in each table (tables[i]: a dict, band key -> list of keys;
// append_to_bucket). Returns the band keys, in order, in a list also out of the collector.
py::list lsh_insert(const py::list& tables, const py::bytes& whole, size_t band_bytes, const py::handle& key) {
  const size_t bands = tables.size();
  const char* data = band_bytes_of(whole, bands, band_bytes);
  py::list keys(bands);
  PyObject_GC_UnTrack(keys.ptr());
  for (size_t i = 0; i < bands; ++i) {
    py::object h = band_key(data, i, band_bytes);
    append_to_bucket(PyList_GET_ITEM(tables.ptr(), static_cast<Py_ssize_t>(i)), h.ptr(), key.ptr());
    keys[i] = std::move(h);
  }
  return keys;
}

// The keys in the buckets of the sketch's first `bands` band keys, as a set.
py::set lsh_query(const py::list& tables, const py::bytes& whole, size_t band_bytes, size_t bands) {
  if (bands > tables.size()) throw py::value_error("more bands than hash tables");
  const char* data = band_bytes_of(whole, bands, band_bytes);
  py::set found;
  // A key is in the buckets of most bands of a near-copy's sketch: each object goes to the set
  // once, told apart by its address in a small table first (the set still merges equal keys).
  thread_local std::vector<PyObject*> seen;
  size_t mask = 0;
  const auto add = [&](PyObject* k) {
    size_t i = (reinterpret_cast<uintptr_t>(k) >> 4) * 0x9E3779B97F4A7C15ull >> 7 & mask;
    for (; seen[i] != nullptr; i = (i + 1) & mask)
      if (seen[i] == k) return;
    seen[i] = k;
    if (PySet_Add(found.ptr(), k) != 0) throw py::error_already_set();
  };
  std::vector<PyObject*> buckets;
  size_t total = 0;
  for (size_t i = 0; i < bands; ++i) {
    const py::object h = band_key(data, i, band_bytes);
    PyObject* table = PyList_GET_ITEM(tables.ptr(), static_cast<Py_ssize_t>(i));
    if (!PyDict_Check(table)) throw py::type_error("a hash table must be a dict");
    PyObject* bucket = PyDict_GetItemWithError(table, h.ptr());
    if (bucket == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      continue;
    }
    buckets.push_back(bucket);
    total += PyList_Check(bucket) ? static_cast<size_t>(PyList_GET_SIZE(bucket)) : 0;
  }
  size_t size = 16;
  while (size < 2 * total) size *= 2;
  seen.assign(size, nullptr);
  mask = size - 1;
  for (PyObject* bucket : buckets) {
    if (PyList_Check(bucket)) {
      for (Py_ssize_t j = 0; j < PyList_GET_SIZE(bucket); ++j) add(PyList_GET_ITEM(bucket, j));
    } else {
      for (const py::handle k : py::reinterpret_borrow<py::iterable>(bucket))
        if (PySet_Add(found.ptr(), k.ptr()) != 0) throw py::error_already_set();
    }
  }
  return found;
}

}  // namespace

void register_datasketch(py::module_& m) {
  m.def("lsh_insert", &lsh_insert, py::arg("tables"), py::arg("whole"), py::arg("band_bytes"), py::arg("key"));
  m.def("lsh_query", &lsh_query, py::arg("tables"), py::arg("whole"), py::arg("band_bytes"), py::arg("bands"));
  m.def("ensemble_partitions", &ensemble_partitions, py::arg("sizes"), py::arg("counts"), py::arg("num_part"));
  m.def("hll_update", &hll_update, py::arg("reg"), py::arg("hashes"), py::arg("p"), py::arg("max_rank"));
  m.def("bbit_pack", &bbit_pack, py::arg("values"), py::arg("bits"));
  m.def("bbit_values", &bbit_values, py::arg("hashvalues"), py::arg("b"));
  add_fastcall<bbit_state>(m, "bbit_state",
                          "bbit_state(seed, b, r, values): a bBitMinHash's pickled state, or None for values not a uint32 array");
  add_fastcall<bbit_restore>(m, "bbit_restore",
                          "bbit_restore(state): (seed, b, r, values) of a bBitMinHash's pickled state");
}

}  // namespace neardup::python
