// neardup._native: the Python binding, a thin layer over the library. Documents are copied out
// of Python objects while the GIL is held; the engine then runs without it. Errors become the
// neardup.errors classes with the library's category, place and option, worded for Python
// (keyword arguments: on_error="skip").
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <utility>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "neardup/neardup.h"
#include "native_threads.h"
#include "py_values.h"
#include "sha1.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace py = pybind11;

namespace neardup::python {
namespace {

// ---- Errors ----

std::string python_wording(std::string_view option, std::string_view value) {
  std::string s(option);
  if (value.empty()) return s;
  const bool number = value.find_first_not_of("0123456789.") == std::string_view::npos;
  return s + "=" + (number ? std::string(value) : "\"" + std::string(value) + "\"");
}

const char* class_of(ErrorCategory c) {
  switch (c) {
    case ErrorCategory::Usage: return "UsageError";
    case ErrorCategory::Format: return "FormatError";
    case ErrorCategory::Io: return "IoError";
    case ErrorCategory::Internal: break;
  }
  return "InternalError";
}

void raise_error(const Error& e) {
  py::object cls = py::module_::import("neardup.errors").attr(class_of(e.category()));
  py::object err = cls(e.message(python_wording), e.source(), e.line(), e.option());
  PyErr_SetObject(cls.ptr(), err.ptr());
}

// ---- Documents ----

// A str's UTF-8 bytes; FormatError naming the record (1-based) when it cannot be encoded (a lone
// surrogate, as surrogateescape decoding leaves in text read from bad bytes).
std::string utf8_of(PyObject* text, size_t record, const char* what) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(text, &n);
  if (!p) {
    PyErr_Clear();
    throw FormatError(std::string("the ") + what + " is not valid Unicode (it holds a lone surrogate, which has no UTF-8 form); clean it, "
                          "e.g. text.encode('utf-8', 'replace').decode()",
                      ErrorPlace{"<memory>", record});
  }
  return std::string(p, static_cast<size_t>(n));
}

// (id, text) pairs from the Python side (which turns strings, tuples and dicts into them and
// checks their types).
std::vector<io::Document> documents_of(const py::list& ids, const py::list& texts) {
  if (ids.size() != texts.size()) throw UsageError("one id per text is needed");
  std::vector<io::Document> docs;
  docs.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    PyObject* id = PyList_GET_ITEM(ids.ptr(), static_cast<Py_ssize_t>(i));
    PyObject* text = PyList_GET_ITEM(texts.ptr(), static_cast<Py_ssize_t>(i));
    if (!PyUnicode_Check(id) || !PyUnicode_Check(text)) throw UsageError("ids and texts must be str (neardup checks them first)");
    docs.push_back({utf8_of(id, i + 1, "id"), utf8_of(text, i + 1, "text")});
  }
  return docs;
}

// Runs `fn` on a thread of its own while this (Python) thread waits for it, checking for
// signals every 50 ms. On Ctrl-C the run is asked to stop (Cancel: at its next batch of work),
// and KeyboardInterrupt is raised once it has stopped: no output is written, its temporary files
// are removed. Python runs signal handlers in the main thread only, so the run cannot be the one
// to check them.
void run_interruptibly(const std::function<void()>& fn) {
  std::atomic<bool> cancel{false};
  std::exception_ptr error;
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread worker([&] {
    const Cancel scope(&cancel);
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    done.set_value();
  });
  bool interrupted = false;
  for (;;) {
    bool ready = false;
    {
      py::gil_scoped_release nogil;
      ready = finished.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
    }
    if (ready) break;
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted = true;  // the exception stays set until the run has stopped
      cancel = true;
    }
  }
  worker.join();
  if (interrupted) throw py::error_already_set();
  if (error) std::rethrow_exception(error);
}

template <class T>
py::array_t<T> to_array(std::vector<T>&& v) {
  auto* owner = new std::vector<T>(std::move(v));
  py::capsule free_it(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({owner->size()}, {sizeof(T)}, owner->data(), free_it);
}

template <class T>
py::array_t<T> to_matrix(std::vector<T>&& v, size_t rows, size_t cols) {
  auto* owner = new std::vector<T>(std::move(v));
  py::capsule free_it(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({rows, cols}, {cols * sizeof(T), sizeof(T)}, owner->data(), free_it);
}

struct RunArgs {
  std::string spec = "words:5 oph:128 verify:0.8";
  int threads = 0;
  std::string keep = "first";
  std::string cluster = "components";
  std::string text_field = "text", id_field = "id";
  bool skip_bad = false;
  bool keep_duplicate_ids = false;
  size_t top = 0;
  std::string measure = "jaccard";
  bool memory_map = true;
  std::string temp_dir;  // compressed inputs' decompressed copies, spilled band keys (empty: $TMPDIR, or /tmp)
  int64_t memory_limit = -1;  // bytes; -1: default_memory_limit(), 0: none
};

RunOptions options_of(const RunArgs& a, const py::object& progress) {
  RunOptions o;
  o.spec = PipelineSpec::parse(a.spec);
  o.tuning.threads = a.threads;
  set_keep(o, a.keep);  // the spellings every driver takes
  o.cluster = cluster_mode(a.cluster);
  o.reader.text_field = a.text_field;
  o.reader.id_field = a.id_field;
  o.reader.on_error = a.skip_bad ? io::OnError::Skip : io::OnError::Fail;
  o.duplicate_ids = a.keep_duplicate_ids ? DuplicateIds::Keep : DuplicateIds::Error;
  o.top = a.top;
  o.measure = measure_of(a.measure);
  o.reader.memory_map = a.memory_map ? io::MemoryMap::Auto : io::MemoryMap::Never;
  o.tuning.temp_dir = a.temp_dir;
  o.tuning.memory_limit = a.memory_limit < 0 ? default_memory_limit() : static_cast<uint64_t>(a.memory_limit);
  if (!progress.is_none()) {
    o.tuning.progress = [progress](const Progress& p) {
      py::gil_scoped_acquire gil;
      progress(std::string(p.stage), p.bytes_done, p.bytes_total, p.documents);
    };
  }
  return o;
}

// A whole run: its ids, pairs (pairs mode) and clustering, as arrays.
py::dict run(std::unique_ptr<Pipeline> p, bool pairs_mode) {
  std::vector<uint32_t> a, b;
  std::vector<double> sim;
  run_interruptibly([&] {
    p->run(pairs_mode ? Pipeline::Mode::Pairs : Pipeline::Mode::Dedup);
    if (pairs_mode)
      p->each_pair([&](std::span<const ScoredPair> chunk) {
        Cancel::check();
        for (const ScoredPair& x : chunk) {
          a.push_back(x.a);
          b.push_back(x.b);
          sim.push_back(x.similarity);
        }
      });
  });
  const size_t n = p->size();
  py::list ids;
  for (DocId d = 0; d < n; ++d) ids.append(py::str(std::string(p->id(d))));
  std::vector<uint32_t> keeper(p->clustering().keeper.begin(), p->clustering().keeper.end());
  std::vector<double> removed_sim(p->removed_similarity().begin(), p->removed_similarity().end());
  py::list clusters;  // as write_clusters numbers them
  for (std::vector<DocId>& members : cluster_members(p->clustering())) clusters.append(to_array(std::move(members)));
  const RunStats& s = p->stats();
  py::dict stats;
  stats["documents"] = s.documents;
  stats["empty"] = s.empty;
  stats["skipped"] = s.reader.skipped;
  stats["text_bytes"] = s.text_bytes;
  stats["shingles"] = s.shingles;
  stats["candidates"] = s.candidates;
  stats["verified"] = s.verified;
  stats["pairs"] = s.pairs;
  stats["clusters"] = s.clusters;
  stats["removed"] = s.removed;
  stats["seconds"] = s.seconds;
  stats["copied_bytes"] = s.copied_bytes;  // compressed inputs kept decompressed (RunTuning::decompressed_copies)
  stats["spilled_bytes"] = s.spilled_bytes;  // the document table, band keys and buckets kept on disk (RunTuning::memory_limit)
  stats["spec"] = p->spec().to_string();
  py::dict out;
  out["ids"] = ids;
  out["a"] = to_array(std::move(a));
  out["b"] = to_array(std::move(b));
  out["similarity"] = to_array(std::move(sim));
  out["keeper"] = to_array(std::move(keeper));
  out["removed_similarity"] = to_array(std::move(removed_sim));
  out["clusters"] = clusters;
  out["stats"] = stats;
  return out;
}

py::dict run_documents(const py::list& ids, const py::list& texts, bool pairs_mode, const RunArgs& args, const py::object& progress) {
  auto p = std::make_unique<Pipeline>(documents_of(ids, texts), options_of(args, progress));
  return run(std::move(p), pairs_mode);
}

py::dict run_paths(const std::vector<std::string>& paths, bool pairs_mode, const RunArgs& args, const py::object& progress) {
  auto p = std::make_unique<Pipeline>(paths, options_of(args, progress));
  return run(std::move(p), pairs_mode);
}

// ---- Sketches ----

py::object sketch(const py::list& texts, const std::string& spec_text, int threads) {
  std::vector<std::string> owned;
  owned.reserve(texts.size());
  for (const auto& t : texts) owned.push_back(t.cast<std::string>());
  std::vector<std::string_view> views(owned.begin(), owned.end());
  Sketches s;
  {
    py::gil_scoped_release nogil;
    s = sketch_documents(views, PipelineSpec::parse(spec_text), threads);
  }
  const size_t n = s.size();
  switch (s.spec.method) {
    case SketchMethod::SimHash: return to_array(std::move(s.simhashes));
    case SketchMethod::BottomK: {
      py::list out;
      for (size_t i = 0; i < n; ++i) {
        const auto fp = s.fingerprints[i];
        out.append(to_array(std::vector<SigValue>(fp.begin(), fp.end())));
      }
      return out;
    }
    case SketchMethod::Exact: throw UsageError("the exact method has no sketch; choose oph, minhash, bottomk or simhash");
    default: break;
  }
  return to_matrix(std::move(s.signatures), n, static_cast<size_t>(s.spec.num_perm));
}

// ---- Reading values out of Python objects ----
//
// The values (bytes objects, usually hundreds of thousands of them) are read where they are, not
// copied: a pass that copies or takes a reference to each one costs as much as hashing it, the
// objects being spread over tens of megabytes. So the hashing, the only step that reads them,
// runs while this thread holds the GIL (no Python code can change the sequences or free a value
// meanwhile); the pool's threads take part, touching no Python state, only reading bytes. The
// permutations that follow, most of the work, run without the GIL.

// A sequence's items: PySequence_Fast returns a list or tuple as it is and makes a list of any
// other iterable; `owner` keeps it alive.
struct Items {
  py::object owner;
  PyObject** items = nullptr;
  size_t size = 0;
};

Items items_of(py::handle seq) {
  PyObject* fast = PySequence_Fast(seq.ptr(), "an iterable of bytes values is expected");
  if (!fast) throw py::error_already_set();
  Items it;
  it.owner = py::reinterpret_steal<py::object>(fast);
  it.items = PySequence_Fast_ITEMS(fast);
  it.size = static_cast<size_t>(PySequence_Fast_GET_SIZE(fast));
  return it;
}

// sha1_hash32 of items[0..n) into out; false if one is not a bytes object (those go the Python
// way: hashlib takes any buffer, and a str raises there as in datasketch).
bool hash_bytes_items(PyObject* const* items, size_t n, uint32_t* out, std::vector<std::string_view>& views) {
  views.resize(n);
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = items[i];
    if (!PyBytes_Check(v)) return false;
    views[i] = std::string_view(PyBytes_AS_STRING(v), static_cast<size_t>(PyBytes_GET_SIZE(v)));
  }
  sha1_hash32_many(views.data(), n, out, active_isa());
  return true;
}

// ---- datasketch's MinHash, computed here ----
//
// datasketch hashes each value to 32 bits (sha1_hash32 by default), maps it by
// h_i(x) = ((a_i x + b_i) mod (2^61 - 1)) & (2^32 - 1), the product and sum wrapping at 64 bits
// as NumPy's uint64 arithmetic does, and keeps the minimum per permutation.

constexpr uint64_t kMax32 = 0xFFFFFFFFull;

py::array_t<uint32_t> sha1_hash32_all(py::handle values, int threads) {
  const Items it = items_of(values);
  std::vector<uint32_t> out(it.size);
  constexpr size_t kChunk = 1 << 14;
  const size_t chunks = (it.size + kChunk - 1) / kChunk;
  std::atomic<bool> all_bytes{true};
  ThreadPool::current().parallel_for(chunks, chunks > 1 ? default_threads(threads) : 1, [&](size_t c, size_t) {
    thread_local std::vector<std::string_view> views;
    const size_t begin = c * kChunk, n = std::min(kChunk, it.size - begin);
    if (!hash_bytes_items(it.items + begin, n, out.data() + begin, views)) all_bytes = false;
  });
  if (!all_bytes) throw py::type_error("not bytes");
  return to_array(std::move(out));
}

// sha1_hash64 of every value, in parallel over chunks; TypeError if one is not bytes.
py::array_t<uint64_t> sha1_hash64_all(py::handle values, int threads) {
  const Items it = items_of(values);
  for (size_t i = 0; i < it.size; ++i)
    if (!PyBytes_Check(it.items[i])) throw py::type_error("not bytes");
  std::vector<uint64_t> out(it.size);
  constexpr size_t kChunk = 1 << 14;
  const size_t chunks = (it.size + kChunk - 1) / kChunk;
  ThreadPool::current().parallel_for(chunks, chunks > 1 ? default_threads(threads) : 1, [&](size_t c, size_t) {
    for (size_t i = c * kChunk; i < std::min(it.size, (c + 1) * kChunk); ++i)
      out[i] = sha1_hash64(PyBytes_AS_STRING(it.items[i]), static_cast<size_t>(PyBytes_GET_SIZE(it.items[i])));
  });
  return to_array(std::move(out));
}

// values[i] = min(values[i], min over j of h_i(hv[j])), permutation by permutation over all the
// values: a_i * x, with x below 2^32, is a_lo * x + (a_hi * x << 32) modulo 2^64, two 32 x 32-bit
// products, so that the loop over the values vectorises without 64-bit multiplies.
#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void apply_permutations_generic(const uint64_t* a, const uint64_t* b, size_t k, const uint32_t* hv, size_t n, uint64_t* values) {
  for (size_t i = 0; i < k; ++i) {
    const uint64_t a_lo = a[i] & 0xFFFFFFFFull, a_hi = a[i] >> 32, bi = b[i];
    uint64_t m = values[i];
    for (size_t j = 0; j < n; ++j) {
      const uint64_t x = hv[j];
      const uint64_t y = a_lo * x + ((a_hi * x) << 32) + bi;  // wraps at 2^64, as NumPy's uint64
      const uint64_t s = (y & kMersenne61) + (y >> 61);
      const uint64_t h = (s >= kMersenne61 ? s - kMersenne61 : s) & kMax32;
      m = h < m ? h : m;
    }
    values[i] = m;
  }
}

#if defined(__x86_64__)
// The same with AVX-512, the other way round: eight permutations per register, up to 128 of them
// held in V registers while every value goes by once, broadcast. Per value and eight permutations:
// a 64-bit multiply (vpmullq), the Mersenne reduction (s = (y & p) + (y >> 61) is below p + 8, and
// min(s, s - p) is s reduced, s - p wrapping when s < p), and a 32-bit minimum, which on each half
// of a 64-bit lane keeps the minimum of the low halves (the result masked to 32 bits) at the cost
// of one instruction; the high halves are cleared at the end. Twice the speed of the loop above
// with its values in the lanes, which reloads and widens every value for every permutation.
template <int V>
__attribute__((target("avx512f,avx512dq,avx512vl"))) void apply_permutations_lanes(const uint64_t* a, const uint64_t* b, size_t k,
                                                                                  const uint32_t* hv, size_t n, uint64_t* values) {
  const __m512i p = _mm512_set1_epi64(static_cast<long long>(kMersenne61));
  const __m512i low32 = _mm512_set1_epi64(static_cast<long long>(kMax32));
  __m512i m[V], av[V], bv[V];
  __mmask8 live[V];
  for (int v = 0; v < V; ++v) {
    const size_t at = 8 * static_cast<size_t>(v);
    live[v] = k - at >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << (k - at)) - 1);
    av[v] = _mm512_maskz_loadu_epi64(live[v], a + at);
    bv[v] = _mm512_maskz_loadu_epi64(live[v], b + at);
    // Values above 2^32 - 1 (possible only in hash values a caller made up) lose to any h_i(x).
    m[v] = _mm512_min_epu64(_mm512_maskz_loadu_epi64(live[v], values + at), low32);
  }
  for (size_t j = 0; j < n; ++j) {
    const __m512i x = _mm512_set1_epi64(static_cast<long long>(hv[j]));
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) {
      const __m512i y = _mm512_add_epi64(_mm512_mullo_epi64(av[v], x), bv[v]);
      const __m512i s = _mm512_add_epi64(_mm512_and_si512(y, p), _mm512_srli_epi64(y, 61));
      m[v] = _mm512_min_epu32(m[v], _mm512_min_epu64(s, _mm512_sub_epi64(s, p)));
    }
  }
  for (int v = 0; v < V; ++v) _mm512_mask_storeu_epi64(values + 8 * static_cast<size_t>(v), live[v], _mm512_and_si512(m[v], low32));
}

template <int... V>
void apply_permutations_avx512(const uint64_t* a, const uint64_t* b, size_t k, const uint32_t* hv, size_t n, uint64_t* values,
                               std::integer_sequence<int, V...>) {
  // Up to 128 permutations at a time, in as many registers as they need.
  for (size_t at = 0; at < k; at += 128) {
    const size_t here = std::min<size_t>(128, k - at);
    const int regs = static_cast<int>((here + 7) / 8);
    ((regs == V + 1 ? apply_permutations_lanes<V + 1>(a + at, b + at, here, hv, n, values + at) : void()), ...);
  }
}

#endif  // __x86_64__

void apply_permutations(const uint64_t* a, const uint64_t* b, size_t k, const uint32_t* hv, size_t n, uint64_t* values) {
  if (n == 0) return;
#if defined(__x86_64__)
  if (active_isa() >= Isa::Avx512) return apply_permutations_avx512(a, b, k, hv, n, values, std::make_integer_sequence<int, 16>{});
#endif
  apply_permutations_generic(a, b, k, hv, n, values);
}

using U64 = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>;
using U32 = py::array_t<uint32_t, py::array::c_style | py::array::forcecast>;

// hashvalues = min(hashvalues, h_i(hv_j)) over the 32-bit hashes hv, in place.
void update_hashvalues(py::array_t<uint64_t, py::array::c_style> hashvalues, const U64& a, const U64& b, const U32& hv) {
  const size_t k = static_cast<size_t>(hashvalues.size());
  if (static_cast<size_t>(a.size()) != k || static_cast<size_t>(b.size()) != k)
    throw UsageError("hashvalues and permutations have different lengths");
  uint64_t* values = hashvalues.mutable_data();
  const uint64_t *pa = a.data(), *pb = b.data();
  const uint32_t* ph = hv.data();
  const size_t n = static_cast<size_t>(hv.size());
  py::gil_scoped_release nogil;
  apply_permutations(pa, pb, k, ph, n, values);
}

// MinHash.bulk with SHA-1: one row of hashvalues per document (any iterable of bytes values), in
// parallel over documents.
py::array_t<uint64_t> bulk_sha1(py::handle docs, const U64& a, const U64& b, int threads) {
  const size_t k = static_cast<size_t>(a.size());
  if (static_cast<size_t>(b.size()) != k) throw UsageError("the two permutation arrays have different lengths");
  const Items outer = items_of(docs);
  const size_t n = outer.size;
  std::vector<Items> values(n);
  std::vector<size_t> start(n + 1, 0);
  for (size_t d = 0; d < n; ++d) {
    values[d] = items_of(outer.items[d]);
    start[d + 1] = start[d] + values[d].size;
  }
  std::vector<uint32_t> hv(start[n]);
  const int t = default_threads(threads);
  std::atomic<bool> all_bytes{true};
  ThreadPool::current().parallel_for(n, t, [&](size_t d, size_t) {  // with the GIL: see above
    thread_local std::vector<std::string_view> views;
    if (!hash_bytes_items(values[d].items, values[d].size, hv.data() + start[d], views)) all_bytes = false;
  });
  if (!all_bytes) throw py::type_error("not bytes");
  std::vector<uint64_t> out(n * k, kMax32);
  const uint64_t *pa = a.data(), *pb = b.data();
  {
    py::gil_scoped_release nogil;
    ThreadPool::current().parallel_for(n, t, [&](size_t d, size_t) {
      apply_permutations(pa, pb, k, hv.data() + start[d], start[d + 1] - start[d], out.data() + d * k);
    });
  }
  return to_matrix(std::move(out), n, k);
}

// ---- The persistent index ----

// The update lock as Python takes it: at once (IoError naming the holder), or with wait=True
// until it is free, Ctrl-C stopping the wait. Called without the GIL.
LockWait python_lock_wait(bool wait) {
  LockWait w;
  w.wait = wait;
  w.waiting = [](const std::string&) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
  return w;
}

// An index id as the CLI's index takes one: one line of text, not empty.
void check_index_id(const std::string& id) {
  if (id.empty()) throw UsageError("the id is empty; give every document an id of one line of text");
  if (io::bad_id_char(id))
    throw UsageError("the id \"" + id.substr(0, 80) + "\" holds a TAB, CR or LF, which would corrupt the TSV outputs of "
                     "'neardup index query'; remove them");
}

class PyIndex {
 public:
  static std::unique_ptr<PyIndex> create(const std::string& path, const std::string& spec, bool wait) {
    auto p = std::make_unique<PyIndex>();
    const PipelineSpec s = PipelineSpec::parse(spec);
    py::gil_scoped_release nogil;
    p->idx_ = NearDupIndex::create(path, s, python_lock_wait(wait));
    return p;
  }
  static std::unique_ptr<PyIndex> open(const std::string& path, bool update, bool wait) {
    auto p = std::make_unique<PyIndex>();
    py::gil_scoped_release nogil;
    p->idx_ = update ? NearDupIndex::open_for_update(path, python_lock_wait(wait)) : NearDupIndex::open(path);
    return p;
  }
  void add(const std::string& id, const std::string& text) {
    check_updatable("add documents");
    check_index_id(id);
    if (idx_->contains(id)) throw FormatError("id '" + id + "' is already in the index; remove it first, or give another id");
    IndexSketch s;
    sketcher().sketch(text, s);
    idx_->insert(id, std::move(s));
  }
  // kind: "similar" (at `threshold`, the index's if None), "containing" (at `threshold`) or "top".
  py::list query(const std::string& text, const std::string& kind, std::optional<double> threshold, size_t top) {
    check_open();
    IndexSketch s;
    std::vector<IndexMatch> matches;
    IndexQuery how{IndexQuery::Kind::Similar, threshold.value_or(idx_->spec().threshold), top};
    if (kind == "containing") how.kind = IndexQuery::Kind::Containing;
    if (kind == "top") how.kind = IndexQuery::Kind::Top;
    {
      py::gil_scoped_release nogil;
      IndexSketcher sk(idx_->spec());
      sk.sketch(text, s);
      idx_->search(s, how, matches);
    }
    py::list out;
    for (const IndexMatch& m : matches) out.append(py::make_tuple(std::string(idx_->id(m.doc)), m.similarity));
    return out;
  }
  size_t remove(const std::vector<std::string>& ids) {
    check_updatable("remove documents");
    return idx_->remove(ids);
  }
  bool contains(const std::string& id) {
    check_open();
    return idx_->contains(id);
  }
  void save() {
    check_open();
    py::gil_scoped_release nogil;
    idx_->save();
  }
  py::dict stats() {
    check_open();
    const IndexStats s = idx_->stats();
    py::dict d;
    d["documents"] = s.documents;
    d["file_bytes"] = s.file_bytes;
    d["shingles"] = s.shingles;
    d["largest_bucket"] = s.largest_bucket;
    d["spec"] = idx_->spec().to_string();
    return d;
  }
  size_t size() {
    check_open();
    return idx_->size();
  }
  bool closed() const noexcept { return !idx_; }
  void close() {
    idx_.reset();
    sketcher_.reset();
  }

 private:
  void check_open() const {
    if (!idx_) throw UsageError("the index is closed");
  }
  void check_updatable(const char* what) const {
    check_open();
    if (!idx_->updatable()) throw UsageError(std::string("this index is open read-only; open it with update=True to ") + what);
  }
  IndexSketcher& sketcher() {
    if (!sketcher_) sketcher_ = std::make_unique<IndexSketcher>(idx_->spec());
    return *sketcher_;
  }
  std::unique_ptr<NearDupIndex> idx_;
  std::unique_ptr<IndexSketcher> sketcher_;
};

}  // namespace
}  // namespace neardup::python

namespace neardup::python {
void register_datasketch(py::module_& m);  // datasketch_native.cpp
void register_icws(py::module_& m);        // icws.cpp
void register_bloom(py::module_& m);       // bloom.cpp
void register_band_store(py::module_& m);  // band_store.cpp
void register_forest(py::module_& m);      // forest.cpp
}  // namespace neardup::python

PYBIND11_MODULE(_native, m) {
  using namespace neardup;
  using namespace neardup::python;
  m.doc() = "neardup's engine (use the neardup package, not this module)";
  // As in the CLI: NEARDUP_FORCE_ISA lowers the instruction set (tests use it to cover each path).
  if (const char* forced = std::getenv("NEARDUP_FORCE_ISA"); forced && *forced) {
    const std::optional<Isa> isa = parse_isa(forced);
    if (!isa) throw py::import_error(std::string("NEARDUP_FORCE_ISA=") + forced + " is not one of scalar, avx2, avx512, avx512vbmi");
    try {
      force_isa(*isa);
    } catch (const Error& e) {
      throw py::import_error(std::string("NEARDUP_FORCE_ISA: ") + e.what());
    }
  }
  m.def("active_isa", [] { return std::string(isa_name(active_isa())); });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise_error(e);
    }
  });
  py::class_<RunArgs>(m, "RunArgs")
      .def(py::init<>())
      .def_readwrite("spec", &RunArgs::spec)
      .def_readwrite("threads", &RunArgs::threads)
      .def_readwrite("keep", &RunArgs::keep)
      .def_readwrite("cluster", &RunArgs::cluster)
      .def_readwrite("text_field", &RunArgs::text_field)
      .def_readwrite("id_field", &RunArgs::id_field)
      .def_readwrite("skip_bad", &RunArgs::skip_bad)
      .def_readwrite("keep_duplicate_ids", &RunArgs::keep_duplicate_ids)
      .def_readwrite("top", &RunArgs::top)
      .def_readwrite("measure", &RunArgs::measure)
      .def_readwrite("memory_map", &RunArgs::memory_map)
      .def_readwrite("temp_dir", &RunArgs::temp_dir)
      .def_readwrite("memory_limit", &RunArgs::memory_limit);
  m.def("run_documents", &run_documents, py::arg("ids"), py::arg("texts"), py::arg("pairs_mode"), py::arg("args"),
        py::arg("progress") = py::none());
  m.def("run_paths", &run_paths, py::arg("paths"), py::arg("pairs_mode"), py::arg("args"), py::arg("progress") = py::none());
  m.def("sketch", &sketch, py::arg("texts"), py::arg("spec"), py::arg("threads") = 0);
  m.def("resolve_spec", [](const std::string& s) { return PipelineSpec::parse(s).resolved().to_string(); });
  m.def("sha1_hash32", [](const py::bytes& b) {
    const std::string s = b;
    return sha1_hash32(s.data(), s.size());
  });
  m.def("sha1_hash32_all", &sha1_hash32_all, py::arg("values"), py::arg("threads") = 0);
  m.def("sha1_hash64_all", &sha1_hash64_all, py::arg("values"), py::arg("threads") = 0);
  m.def("update_hashvalues", &update_hashvalues);
  m.def("bulk_sha1", &bulk_sha1, py::arg("docs"), py::arg("a"), py::arg("b"), py::arg("threads") = 0);
  register_datasketch(m);
  register_icws(m);
  register_bloom(m);
  register_band_store(m);
  register_forest(m);
  m.def("version", [] { return std::string(version()); });
  m.def("number_rules", [] {  // the numeric options' names, whether each is whole, and its range
    py::list out;
    for (const NumberRule& r : number_rules()) out.append(py::make_tuple(std::string(r.name), r.integer, rule_range(r)));
    return out;
  });
  // What is wrong with `value` for option `name` ("" if nothing), as the CLI's checks say it.
  m.def("rule_problem", [](const std::string& name, double value) { return rule_problem(number_rule(name), value); });
  m.def("is_closed", [](const PyIndex& i) { return i.closed(); });
  m.def("version_info", &version_info);
  py::class_<PyIndex>(m, "Index")
      .def_static("create", &PyIndex::create, py::arg("path"), py::arg("spec"), py::arg("wait") = false)
      .def_static("open", &PyIndex::open, py::arg("path"), py::arg("update") = false, py::arg("wait") = false)
      .def("add", &PyIndex::add)
      .def("query", &PyIndex::query, py::arg("text"), py::arg("kind") = "similar", py::arg("threshold") = py::none(),
           py::arg("top") = 0)
      .def("remove", &PyIndex::remove)
      .def("contains", &PyIndex::contains)
      .def("save", &PyIndex::save)
      .def("stats", &PyIndex::stats)
      .def("size", &PyIndex::size)
      .def("close", &PyIndex::close);
}
