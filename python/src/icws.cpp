// WeightedMinHashGenerator's hot loops: improved consistent weighted sampling (ICWS, Ioffe
// 2010) as datasketch computes it, for one vector (minhash), a dense one through the generator's
// dimensions in the order of a bound (icws_order), and the rows of a matrix (minhash_many).
// Compiled with -ffp-contract=off (python/CMakeLists.txt): every operation is rounded to float32
// on its own, as NumPy's one-operation-per-pass arithmetic does, so that the values are
// datasketch's bit for bit; a fused multiply-add would round once where NumPy rounds twice.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "native_threads.h"
#include "neardup/thread_pool.h"

namespace py = pybind11;

namespace neardup::python {
namespace {

using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// The generator's three tables, transposed: dimension j's samples are [j * samples, (j + 1) *
// samples), so that a weight reads its samples in one run and the loop over them vectorises.
struct IcwsTables {
  const float *r, *ln_c, *beta;
  size_t samples, dim;
};

IcwsTables tables_of(const F32& rs, const F32& ln_cs, const F32& betas) {
  if (rs.ndim() != 2 || ln_cs.ndim() != 2 || betas.ndim() != 2 || rs.shape(0) != ln_cs.shape(0) || rs.shape(0) != betas.shape(0) ||
      rs.shape(1) != ln_cs.shape(1) || rs.shape(1) != betas.shape(1))
    throw py::value_error("rs, ln_cs and betas must be arrays of one (dim, sample_size) shape");
  return {rs.data(), ln_cs.data(), betas.data(), static_cast<size_t>(rs.shape(1)), static_cast<size_t>(rs.shape(0))};
}

// Samples [lo, hi) over the weights (dimensions idx, ascending; logs: their float32 logarithms),
// each sample's smallest ln_a so far in `least`, its dimension in `k` (-1: none yet) and t there
// in `t`. minhash: ln_a = (ln_c - (t - beta) r) - r, the first smallest, NaNs skipped
// (nanargmin). minhash_many: ln_a = ln_c - ((t - beta) + 1) r, the first smallest or else the
// first NaN (argmin, which NaN wins): a NaN kept in `least` ends the sample's search. On x86-64
// compiled for AVX-512, AVX2 and the baseline, the best the CPU has chosen when the module
// loads; the loop over the samples has no branch, so that it vectorises.
#if defined(__x86_64__)
#define NEARDUP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NEARDUP_CLONES
#endif

template <bool kMany>
inline __attribute__((always_inline)) void icws_scan(const IcwsTables& tb, size_t lo, size_t hi, const int64_t* idx,
                                                                                const float* logs, size_t n, float* __restrict least,
                                                                                int32_t* __restrict k, float* __restrict t) {
  const size_t samples = tb.samples, m = hi - lo;
  float* __restrict lst = least + lo;
  int32_t* __restrict kk = k + lo;
  float* __restrict tt = t + lo;
  for (size_t x = 0; x < n; ++x) {
    const auto j = static_cast<size_t>(idx[x]);
    const float lv = logs[x];
    const float* __restrict r = tb.r + j * samples + lo;
    const float* __restrict ln_c = tb.ln_c + j * samples + lo;
    const float* __restrict beta = tb.beta + j * samples + lo;
    const auto dim = static_cast<int32_t>(j);
    for (size_t i = 0; i < m; ++i) {
      const float ti = std::floor(lv / r[i] + beta[i]);
      const float old = lst[i];
      float ln_a;
      bool better;
      if constexpr (kMany) {
        ln_a = ln_c[i] - ((ti - beta[i]) + 1.0f) * r[i];
        better = old == old && (ln_a != ln_a || ln_a < old);
      } else {
        ln_a = (ln_c[i] - (ti - beta[i]) * r[i]) - r[i];
        better = ln_a < old;  // false for NaN
      }
      lst[i] = better ? ln_a : old;
      kk[i] = better ? dim : kk[i];
      tt[i] = better ? ti : tt[i];
    }
  }
}

// The two scans as functions of their own, each compiled once per instruction set.
NEARDUP_CLONES void icws_scan_min(const IcwsTables& tb, size_t lo, size_t hi, const int64_t* idx, const float* logs, size_t n, float* least,
                                  int32_t* k, float* t) {
  icws_scan<false>(tb, lo, hi, idx, logs, n, least, k, t);
}
NEARDUP_CLONES void icws_scan_many(const IcwsTables& tb, size_t lo, size_t hi, const int64_t* idx, const float* logs, size_t n, float* least,
                                   int32_t* k, float* t) {
  icws_scan<true>(tb, lo, hi, idx, logs, n, least, k, t);
}

// One vector's samples: (k, t) per sample, k = -1 where every value was NaN (minhash).
struct Scan {
  std::vector<float> least, t;
  std::vector<int32_t> k;
  void run(const IcwsTables& tb, bool many, const int64_t* idx, const float* logs, size_t n, size_t lo, size_t hi) {
    if (many)
      icws_scan_many(tb, lo, hi, idx, logs, n, least.data(), k.data(), t.data());
    else
      icws_scan_min(tb, lo, hi, idx, logs, n, least.data(), k.data(), t.data());
  }
  void reset(size_t samples) {
    least.assign(samples, std::numeric_limits<float>::infinity());
    t.assign(samples, 0.0f);
    k.assign(samples, -1);
  }
};

void check_dims(const IcwsTables& tb, const int64_t* idx, size_t n) {
  for (size_t x = 0; x < n; ++x)
    if (idx[x] < 0 || static_cast<size_t>(idx[x]) >= tb.dim || (x > 0 && idx[x] <= idx[x - 1]))
      throw py::value_error("dimensions must be ascending and below the generator's dim");
}

// NumPy's conversion of a float32 to int64 on assignment: the value truncated; NaN and values
// out of range become the smallest int64 (x86-64's conversion).
int64_t as_int64(float t) {
  if (!std::isfinite(t) || std::fabs(t) >= 9.2233720368547758e18f) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(t);
}

// WeightedMinHashGenerator.minhash: (samples x 2) int64 of one vector's nonzero weights, the
// tables transposed (dim x samples).
py::array_t<int64_t> icws_sample(const F32& rs_t, const F32& ln_cs_t, const F32& betas_t, const I64& dims, const F32& logs, bool many) {
  const IcwsTables tb = tables_of(rs_t, ln_cs_t, betas_t);
  const size_t n = static_cast<size_t>(dims.size());
  if (static_cast<size_t>(logs.size()) != n) throw py::value_error("dims and logs must have one length");
  check_dims(tb, dims.data(), n);
  Scan scan;
  scan.reset(tb.samples);
  {
    py::gil_scoped_release nogil;
    // In parallel over runs of samples once a vector is long enough to pay for the threads.
    constexpr size_t kRun = 64;
    const size_t runs = (tb.samples + kRun - 1) / kRun;
    const int threads = tb.samples * n >= (size_t{1} << 18) ? default_threads() : 1;
    ThreadPool::current().parallel_for(runs, threads, [&](size_t c, size_t) {
      scan.run(tb, many, dims.data(), logs.data(), n, c * kRun, std::min(tb.samples, (c + 1) * kRun));
    });
  }
  py::array_t<int64_t> out({static_cast<py::ssize_t>(tb.samples), py::ssize_t{2}});
  int64_t* o = out.mutable_data();
  for (size_t i = 0; i < tb.samples; ++i) {
    if (scan.k[i] < 0) throw py::value_error("All-NaN slice encountered");
    const float t = scan.t[i];
    o[2 * i] = scan.k[i];
    if (many) {
      o[2 * i + 1] = as_int64(t);
    } else if (std::isnan(t)) {  // Python's int() of the float, as datasketch converts it
      throw py::value_error("cannot convert float NaN to integer");
    } else if (!std::isfinite(t)) {
      PyErr_SetString(PyExc_OverflowError, "cannot convert float infinity to integer");
      throw py::error_already_set();
    } else {
      o[2 * i + 1] = static_cast<int64_t>(t);
    }
  }
  return out;
}

// WeightedMinHashGenerator.minhash_many: (rows x samples x 2) int64 of the rows of a CSR matrix
// (indptr, indices ascending within a row, logs of the values), in parallel over the rows; the
// rows without weights are left zero.
py::array_t<int64_t> icws_sample_rows(const F32& rs_t, const F32& ln_cs_t, const F32& betas_t, const I64& indptr, const I64& indices,
                                      const F32& logs) {
  const IcwsTables tb = tables_of(rs_t, ln_cs_t, betas_t);
  const size_t rows = indptr.size() > 0 ? static_cast<size_t>(indptr.size()) - 1 : 0;
  const int64_t* ptr = indptr.data();
  if (static_cast<size_t>(indices.size()) != static_cast<size_t>(logs.size()) || (rows > 0 && (ptr[0] != 0 || ptr[rows] != indices.size())))
    throw py::value_error("indptr, indices and logs do not make a CSR matrix");
  for (size_t d = 0; d < rows; ++d) {
    if (ptr[d + 1] < ptr[d]) throw py::value_error("indptr must not decrease");
    check_dims(tb, indices.data() + ptr[d], static_cast<size_t>(ptr[d + 1] - ptr[d]));
  }
  py::array_t<int64_t> out({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(tb.samples), py::ssize_t{2}});
  int64_t* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    ThreadPool::current().parallel_for(rows, default_threads(), [&](size_t d, size_t) {
      const auto begin = static_cast<size_t>(ptr[d]), n = static_cast<size_t>(ptr[d + 1] - ptr[d]);
      int64_t* row = o + d * tb.samples * 2;
      if (n == 0) {
        std::fill(row, row + tb.samples * 2, 0);
        return;
      }
      thread_local Scan scan;
      scan.reset(tb.samples);
      scan.run(tb, true, indices.data() + begin, logs.data() + begin, n, 0, tb.samples);
      for (size_t i = 0; i < tb.samples; ++i) {
        row[2 * i] = scan.k[i];
        row[2 * i + 1] = as_int64(scan.t[i]);
      }
    });
  }
  return out;
}

// A dense vector's samples through the generator's dimensions in the order of a bound, not all
// of them. With t = floor(lv / r + beta) <= lv / r + beta, a dimension's
// ln_a = (ln_c - (t - beta) r) - r is at least ln_c - r - lv (Ioffe 2010, improved consistent
// weighted sampling: ln a = ln c - ln y - r with y <= the weight). So per sample, taking the
// dimensions in ascending ln_c - r, once that bound less the vector's largest lv exceeds the
// smallest ln_a found, no later dimension can be smaller, nor equal (the first smallest wins,
// as nanargmin's). Three dense vectors of 10,000 exponential weights needed 59-79 of the 10,000
// per sample on average (339 at the most in 384 samples), where reading every dimension's three
// table values took 15 MB per vector and bound the scan to the memory's speed. The bound is taken with a margin for float32 rounding: the computed
// ln_a is within 8 u (|lv| + r + |ln_c|) of its exact value (u = 2^-24, about 6e-8: seven
// roundings, each of a value at most |lv| + r (|beta| + 1) + |ln_c|), and the margin is 1e-6
// (8 r + 4 |ln_c|) per dimension plus 8e-6 max |lv| per vector, at least 16 times that.
constexpr size_t kOrderPrefix = 512;  // dimensions kept in order per sample; past them, a full scan

double order_bound(float r, float ln_c) {
  return (static_cast<double>(ln_c) - static_cast<double>(r)) - 1e-6 * (8.0 * std::fabs(static_cast<double>(r)) + 4.0 * std::fabs(static_cast<double>(ln_c)));
}

// The order: per sample, the `prefix` dimensions of smallest order_bound (ascending, ties by
// dimension) with their r, ln_c and beta, and the smallest bound of the others (+inf if none),
// from the generator's tables as it holds them (sample_size x dim: a sample's row is one run).
// None where a table holds a value the bound does not hold for (r not positive, or anything not
// finite).
py::object icws_order(const F32& rs, const F32& ln_cs, const F32& betas, size_t prefix) {
  if (rs.ndim() != 2 || ln_cs.ndim() != 2 || betas.ndim() != 2 || rs.shape(0) != ln_cs.shape(0) || rs.shape(0) != betas.shape(0) ||
      rs.shape(1) != ln_cs.shape(1) || rs.shape(1) != betas.shape(1))
    throw py::value_error("rs, ln_cs and betas must be arrays of one (sample_size, dim) shape");
  if (prefix == 0) throw py::value_error("the order needs a dimension per sample or more");
  const size_t samples = static_cast<size_t>(rs.shape(0)), dim = static_cast<size_t>(rs.shape(1));
  prefix = std::min(prefix, dim);
  const float *r = rs.data(), *ln_c = ln_cs.data(), *beta = betas.data();
  for (size_t x = 0; x < samples * dim; ++x)
    if (!(r[x] > 0 && std::isfinite(r[x]) && std::isfinite(ln_c[x]) && std::isfinite(beta[x]))) return py::none();
  py::array_t<int32_t> dims({static_cast<py::ssize_t>(samples), static_cast<py::ssize_t>(prefix)});
  py::array_t<float> values({static_cast<py::ssize_t>(samples), static_cast<py::ssize_t>(prefix), py::ssize_t{3}});
  py::array_t<double> bounds({static_cast<py::ssize_t>(samples), static_cast<py::ssize_t>(prefix)});
  py::array_t<double> rest(static_cast<py::ssize_t>(samples));
  int32_t* d_out = dims.mutable_data();
  float* v_out = values.mutable_data();
  double* b_out = bounds.mutable_data();
  double* rest_out = rest.mutable_data();
  {
    py::gil_scoped_release nogil;
    ThreadPool::current().parallel_for(samples, default_threads(), [&](size_t i, size_t) {
      thread_local std::vector<std::pair<double, int32_t>> e;
      e.resize(dim);
      const size_t row = i * dim;
      for (size_t j = 0; j < dim; ++j) e[j] = {order_bound(r[row + j], ln_c[row + j]), static_cast<int32_t>(j)};
      std::nth_element(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(prefix - 1), e.end());
      std::sort(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(prefix));
      double others = std::numeric_limits<double>::infinity();
      for (size_t j = prefix; j < dim; ++j) others = std::min(others, e[j].first);
      rest_out[i] = others;
      for (size_t x = 0; x < prefix; ++x) {
        const size_t at = row + static_cast<size_t>(e[x].second);
        d_out[i * prefix + x] = e[x].second;
        b_out[i * prefix + x] = e[x].first;
        float* v = v_out + (i * prefix + x) * 3;
        v[0] = r[at];
        v[1] = ln_c[at];
        v[2] = beta[at];
      }
    });
  }
  return py::make_tuple(dims, values, bounds, rest);
}

// WeightedMinHashGenerator.minhash of a dense vector through the order (icws_order), with
// icws_sample's values: `weights` and `logs` (NumPy's float32 log of each weight) hold every
// dimension, a zero weight being none. A sample whose order ends before its bound is reached is
// scanned whole, and a vector with a weight whose log is not finite (a negative, infinite or NaN
// weight) goes all the way by icws_sample.
py::array_t<int64_t> icws_sample_dense(const F32& rs_t, const F32& ln_cs_t, const F32& betas_t, const py::tuple& order, const F32& weights,
                                       const F32& logs) {
  const IcwsTables tb = tables_of(rs_t, ln_cs_t, betas_t);
  const auto o_dims = order[0].cast<py::array_t<int32_t, py::array::c_style>>();
  const auto o_values = order[1].cast<py::array_t<float, py::array::c_style>>();
  const auto o_bounds = order[2].cast<py::array_t<double, py::array::c_style>>();
  const auto o_rest = order[3].cast<py::array_t<double, py::array::c_style>>();
  const size_t samples = tb.samples, dim = tb.dim;
  const size_t prefix = o_dims.ndim() == 2 ? static_cast<size_t>(o_dims.shape(1)) : 0;
  if (o_dims.ndim() != 2 || static_cast<size_t>(o_dims.shape(0)) != samples || static_cast<size_t>(o_values.size()) != samples * prefix * 3 ||
      static_cast<size_t>(o_bounds.size()) != samples * prefix || static_cast<size_t>(o_rest.size()) != samples)
    throw py::value_error("the order is not the generator's");
  if (static_cast<size_t>(weights.size()) != dim || static_cast<size_t>(logs.size()) != dim)
    throw py::value_error("weights and logs must have the generator's dim");
  // Each dimension's log, NaN where the weight is zero (none there).
  std::vector<float> lv_of(dim);
  double top = -std::numeric_limits<double>::infinity(), magnitude = 0;
  bool finite = true, any = false;
  const float* w = weights.data();
  const float* lg = logs.data();
  for (size_t j = 0; j < dim; ++j) {
    const bool here = w[j] != 0;
    lv_of[j] = here ? lg[j] : std::numeric_limits<float>::quiet_NaN();
    if (!here) continue;
    any = true;
    finite = finite && std::isfinite(lg[j]);
    top = std::max(top, static_cast<double>(lg[j]));
    magnitude = std::max(magnitude, std::fabs(static_cast<double>(lg[j])));
  }
  if (!any) throw py::value_error("Input is all zeros");
  // The weights' dimensions and logs as icws_sample takes them, for a full scan.
  std::vector<int64_t> idx;
  std::vector<float> present;
  const auto compact = [&] {
    if (!idx.empty()) return;
    for (size_t j = 0; j < dim; ++j)
      if (w[j] != 0) idx.push_back(static_cast<int64_t>(j)), present.push_back(lg[j]);
  };
  if (!finite) {
    compact();
    return icws_sample(rs_t, ln_cs_t, betas_t, I64(static_cast<py::ssize_t>(idx.size()), idx.data()),
                       F32(static_cast<py::ssize_t>(present.size()), present.data()), false);
  }
  const double slack = top + 8e-6 * magnitude + 1e-12;
  py::array_t<int64_t> out({static_cast<py::ssize_t>(samples), py::ssize_t{2}});
  int64_t* o = out.mutable_data();
  const int32_t* od = o_dims.data();
  const float* ov = o_values.data();
  const double* ob = o_bounds.data();
  const double* rest = o_rest.data();
  {
    py::gil_scoped_release nogil;
    Scan scan;
    for (size_t i = 0; i < samples; ++i) {
      float best = std::numeric_limits<float>::infinity(), best_t = 0;
      int32_t best_k = -1;
      size_t x = 0;
      for (; x < prefix && !(ob[i * prefix + x] - slack > static_cast<double>(best)); ++x) {
        const int32_t j = od[i * prefix + x];
        const float lv = lv_of[static_cast<size_t>(j)];
        if (lv != lv) continue;
        const float* v = ov + (i * prefix + x) * 3;
        const float r = v[0], ln_c = v[1], beta = v[2];
        const float ti = std::floor(lv / r + beta);
        const float ln_a = (ln_c - (ti - beta) * r) - r;
        if (ln_a < best || (ln_a == best && j < best_k)) best = ln_a, best_k = j, best_t = ti;
      }
      if (x == prefix && !(rest[i] - slack > static_cast<double>(best))) {  // past the order: every weight
        if (scan.least.empty()) {
          scan.reset(samples);
          compact();
        }
        scan.run(tb, false, idx.data(), present.data(), idx.size(), i, i + 1);
        best_k = scan.k[i], best_t = scan.t[i];
      }
      o[2 * i] = best_k;
      o[2 * i + 1] = static_cast<int64_t>(best_t);  // finite: every log is
    }
  }
  return out;
}
}  // namespace

void register_icws(py::module_& m) {
  m.def("icws_sample", &icws_sample, py::arg("rs"), py::arg("ln_cs"), py::arg("betas"), py::arg("dims"), py::arg("logs"), py::arg("many"));
  m.def("icws_sample_rows", &icws_sample_rows, py::arg("rs"), py::arg("ln_cs"), py::arg("betas"), py::arg("indptr"), py::arg("indices"),
        py::arg("logs"));
  m.def("icws_order", &icws_order, py::arg("rs"), py::arg("ln_cs"), py::arg("betas"), py::arg("prefix") = kOrderPrefix);
  m.def("icws_sample_dense", &icws_sample_dense, py::arg("rs"), py::arg("ln_cs"), py::arg("betas"), py::arg("order"), py::arg("weights"),
        py::arg("logs"));
}

}  // namespace neardup::python
