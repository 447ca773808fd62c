// `neardup serve INDEX`: the online near-duplicate service, HTTP/1.1 with JSON (cpp-httplib),
// over a LiveIndex (neardup/live_index.h), which owns durability and concurrency. This file holds
// the protocol only: routes, request validation, responses, limits, metrics, shutdown.
// The API and the durability promise: docs/serve.md.
#include <arpa/inet.h>
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <simdjson.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "io/fd_stream.h"
#include "json.h"
#include "serve_connection.h"
#include "serve_harness.h"
#include "neardup/neardup.h"

namespace neardup::cli {
namespace {

struct ServeOptions {
  std::string index;
  std::string listen = "127.0.0.1:8080";
  int threads = 0;
  size_t max_connections = 0;
  std::string token_file;
  uint64_t max_body_bytes = uint64_t{64} << 20;
  uint64_t max_text_bytes = uint64_t{8} << 20;
  size_t max_pending = 4096;
  uint64_t fold_mb = 256;
  int timeout = 10;
  bool quiet = false;
};

// ---- Requests ----

// A 4xx answer: the status, what is wrong, and the field it concerns (if one).
struct BadRequest {
  int status;
  std::string message;
  std::string field;
};

std::string error_json(const std::string& message, const std::string& field = {}, uint64_t line = 0) {
  std::string out = "{\"error\":";
  append_json_string(out, message);
  if (!field.empty()) {
    out += ",\"field\":";
    append_json_string(out, field);
  }
  if (line) out += ",\"line\":" + std::to_string(line);
  out += "}\n";
  return out;
}

void reply(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.set_content(std::move(body), "application/json");
}

void reply_error(httplib::Response& res, const BadRequest& e, uint64_t line = 0) {
  reply(res, e.status, error_json(e.message, e.field, line));
}

// 404 for a path or method no endpoint takes, in JSON like every other answer.
void reply_no_endpoint(const httplib::Request& req, httplib::Response& res) {
  reply(res, 404, error_json("no endpoint " + req.method + " " + req.path + " (see docs/serve.md)"));
}

// An id must be a line of a TSV output and a path segment: no control characters, bounded.
void check_id(std::string_view id, const char* field) {
  if (id.empty()) throw BadRequest{400, std::string("'") + field + "' is empty", field};
  if (id.size() > 4096) throw BadRequest{400, std::string("'") + field + "' is longer than 4096 bytes", field};
  for (const char c : id)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      throw BadRequest{400, std::string("'") + field + "' holds a control character (tab, line break, ...); ids are one line of text", field};
}

// One JSON object of a request, its fields checked against those the endpoint takes.
class RequestObject {
 public:
  RequestObject(simdjson::dom::parser& parser, std::string_view body, std::initializer_list<const char*> allowed) {
    simdjson::dom::element doc;
    if (const auto err = parser.parse(body.data(), body.size()).get(doc))
      throw BadRequest{400, std::string("malformed JSON: ") + simdjson::error_message(err), ""};
    if (doc.type() != simdjson::dom::element_type::OBJECT) throw BadRequest{400, "the body must be a JSON object", ""};
    obj_ = doc.get_object().value_unsafe();
    std::set<std::string_view> seen;
    for (const auto field : obj_) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || field.key == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        throw BadRequest{400, "unknown field '" + std::string(field.key) + "' (this endpoint takes " + list + ")", std::string(field.key)};
      }
      if (!seen.insert(field.key).second)
        throw BadRequest{400, "field '" + std::string(field.key) + "' is given twice", std::string(field.key)};
    }
  }
  bool has(const char* name) const { return obj_[name].error() == simdjson::SUCCESS; }
  std::string_view string(const char* name, bool required) const {
    simdjson::dom::element e;
    if (obj_[name].get(e)) {
      if (required) throw BadRequest{400, std::string("missing field '") + name + "'", name};
      return {};
    }
    std::string_view s;
    if (e.get(s)) throw BadRequest{400, std::string("field '") + name + "' must be a string", name};
    return s;
  }
  /// An optional field of type T (double, bool), or `fallback` when it is absent.
  template <class T>
  T value(const char* name, T fallback, const char* type) const {
    simdjson::dom::element e;
    if (obj_[name].get(e)) return fallback;
    T v;
    if (e.get(v)) throw BadRequest{400, std::string("field '") + name + "' must be " + type, name};
    return v;
  }

 private:
  simdjson::dom::object obj_;
};

struct QueryRequest {
  std::string text, id;
  IndexQuery how;
};

struct Limits {
  uint64_t max_text_bytes;
  double build_threshold;
};

// The most answers a top-k query may ask for: each is an id and a number in the reply.
constexpr uint64_t kMaxTop = 10000;

std::string_view text_field(const RequestObject& o, const Limits& l) {
  const std::string_view t = o.string("text", true);
  if (t.size() > l.max_text_bytes)
    throw BadRequest{413, "'text' is " + std::to_string(t.size()) + " bytes, over the limit of " + std::to_string(l.max_text_bytes) +
                              " (--max-text-bytes)", "text"};
  return t;
}

// What a query asks, one of: near-duplicates at "threshold" (the index's unless given), the
// indexed documents holding a share "containment" of it, or the "top" K most similar.
struct QueryAsk {
  std::optional<double> threshold, containment;
  std::optional<uint64_t> top;
  size_t count() const { return threshold.has_value() + containment.has_value() + top.has_value(); }
};

IndexQuery query_of(const QueryAsk& a, const Limits& l) {
  if (a.count() > 1) throw BadRequest{400, "'threshold', 'containment' and 'top' exclude each other; give one", "top"};
  if (a.containment) {
    if (const std::string why = rule_problem(number_rule("containment"), *a.containment); !why.empty())
      throw BadRequest{400, "'containment' " + why, "containment"};
    return {IndexQuery::Kind::Containing, *a.containment, 0};
  }
  if (a.top) {
    if (*a.top < 1 || *a.top > kMaxTop) throw BadRequest{400, "'top' must be a whole number from 1 to " + std::to_string(kMaxTop), "top"};
    return {IndexQuery::Kind::Top, 0.0, static_cast<size_t>(*a.top)};
  }
  const double t = a.threshold.value_or(l.build_threshold);
  if (!(t >= 0 && t <= 1)) throw BadRequest{400, "'threshold' must be between 0 and 1", "threshold"};
  return {IndexQuery::Kind::Similar, t, 0};
}

// The URL's ?threshold=, ?containment= or ?top=: what every query of the request asks unless its
// body says.
QueryAsk url_ask(const httplib::Request& req) {
  QueryAsk a;
  const auto number = [&](const char* name) -> std::optional<double> {
    if (!req.has_param(name)) return std::nullopt;
    const std::string v = req.get_param_value(name);
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(d)) throw BadRequest{400, std::string("?") + name + "=" + v + " is not a number", name};
    return d;
  };
  a.threshold = number("threshold");
  a.containment = number("containment");
  if (const auto top = number("top")) {
    if (*top != std::floor(*top) || *top < 0 || *top > 1e18) throw BadRequest{400, "?top= must be a whole number", "top"};
    a.top = static_cast<uint64_t>(*top);
  }
  return a;
}

QueryRequest parse_query(simdjson::dom::parser& p, std::string_view body, const Limits& l, const QueryAsk& url) {
  RequestObject o(p, body, {"text", "id", "threshold", "containment", "top"});
  QueryRequest q;
  q.text = text_field(o, l);
  if (o.has("id")) {
    q.id = o.string("id", true);
    check_id(q.id, "id");
  }
  QueryAsk a;
  if (o.has("threshold")) a.threshold = o.value<double>("threshold", 0.0, "a number");
  if (o.has("containment")) a.containment = o.value<double>("containment", 0.0, "a number");
  if (o.has("top")) a.top = o.value<uint64_t>("top", 0, "a whole number");
  q.how = query_of(a.count() ? a : url, l);
  return q;
}

LiveChange parse_add(simdjson::dom::parser& p, std::string_view body, const Limits& l) {
  RequestObject o(p, body, {"id", "text", "dedup"});
  LiveChange c;
  c.id = o.string("id", true);
  check_id(c.id, "id");
  c.text = text_field(o, l);
  c.dedup = o.value<bool>("dedup", true, "true or false");
  return c;
}

// The lines of an NDJSON body (blank lines skipped), with their 1-based numbers.
std::vector<std::pair<uint64_t, std::string_view>> ndjson_lines(std::string_view body) {
  std::vector<std::pair<uint64_t, std::string_view>> out;
  uint64_t n = 0;
  for (size_t at = 0; at < body.size();) {
    size_t end = body.find('\n', at);
    if (end == std::string_view::npos) end = body.size();
    ++n;
    std::string_view line = body.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) out.emplace_back(n, line);
    at = end + 1;
  }
  return out;
}

// ---- Responses ----

void append_matches(std::string& out, const std::vector<LiveMatch>& m) {
  out += '[';
  for (size_t i = 0; i < m.size(); ++i) {
    if (i) out += ',';
    out += "{\"id\":";
    append_json_string(out, m[i].id);
    out += ",\"similarity\":";
    io::append_similarity(out, m[i].similarity);
    out += '}';
  }
  out += ']';
}

std::string query_json(const std::vector<LiveMatch>& m, const IndexQuery& how, const LiveIndex& idx) {
  std::string out = "{\"matches\":";
  append_matches(out, m);
  if (how.kind == IndexQuery::Kind::Top) {
    out += ",\"top\":" + std::to_string(how.top) + "}";
    return out;
  }
  const double threshold = how.threshold;
  out += how.kind == IndexQuery::Kind::Containing ? ",\"containment\":" : ",\"threshold\":";
  io::append_similarity(out, threshold);
  const PipelineSpec& s = idx.spec();
  if (how.kind == IndexQuery::Kind::Similar && threshold + kSimilarityEpsilon < s.threshold) {
    char w[256];
    std::snprintf(w, sizeof w,
                  "the index was built for threshold %g: at %g its bands find only %.1f%% of the pairs of that similarity", s.threshold,
                  threshold, 100 * lsh_probability(threshold, s.lsh.bands, s.lsh.rows));
    out += ",\"warning\":";
    append_json_string(out, w);
  }
  out += "}";
  return out;
}

// The answer to one add: (status, body without the newline).
std::pair<int, std::string> add_json(std::string_view id, const LiveResult& r) {
  std::string out = "{\"id\":";
  append_json_string(out, id);
  int status = 200;
  switch (r.outcome) {
    case LiveResult::Outcome::Added:
      out += ",\"added\":true";
      status = 201;
      break;
    case LiveResult::Outcome::Duplicate:
      out += ",\"added\":false,\"duplicate_of\":";
      append_json_string(out, r.matches.front().id);
      out += ",\"similarity\":";
      io::append_similarity(out, r.matches.front().similarity);
      out += ",\"matches\":";
      append_matches(out, r.matches);
      break;
    case LiveResult::Outcome::IdExists:
      out += ",\"added\":false,\"error\":\"a document with this id is indexed; remove it first (DELETE /v1/docs/ID)\",\"field\":\"id\"";
      status = 409;
      break;
    default:
      out += ",\"added\":false,\"error\":\"busy\"";
      status = 503;
      break;
  }
  out += '}';
  return {status, out};
}

// ---- Metrics (Prometheus text format) ----

constexpr std::array<double, 14> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
enum Endpoint : int { kQuery, kQueryBatch, kAdd, kAddBatch, kDocGet, kDocDelete, kStats, kHealth, kMetrics, kOther, kEndpoints };
const char* const kEndpointNames[kEndpoints] = {"query", "query_batch", "add", "add_batch", "doc_get", "doc_delete", "stats", "healthz", "metrics", "other"};

struct EndpointMetrics {
  std::array<std::atomic<uint64_t>, 6> by_class{};  // 1xx..5xx by hundreds; [0] unused
  std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets{};
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> micros{0};
};

struct Metrics {
  std::array<EndpointMetrics, kEndpoints> e;
  std::atomic<uint64_t> refused_connections{0};
  std::atomic<uint64_t> server_errors{0};  // answers 5xx but 503 (which asks to retry): an internal error
  void observe(Endpoint ep, int status, double seconds) {
    EndpointMetrics& m = e[ep];
    if (status >= 500 && status != 503) ++server_errors;
    const int cls = status / 100;
    if (cls >= 1 && cls <= 5) ++m.by_class[cls];
    size_t b = 0;
    while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
    ++m.buckets[b];
    ++m.count;
    m.micros += static_cast<uint64_t>(seconds * 1e6);
  }
};

Endpoint endpoint_of(const httplib::Request& req) {
  const std::string& p = req.path;
  if (p == "/v1/query") return kQuery;
  if (p == "/v1/query/batch") return kQueryBatch;
  if (p == "/v1/add") return kAdd;
  if (p == "/v1/add/batch") return kAddBatch;
  if (p.starts_with("/v1/docs/")) return req.method == "DELETE" ? kDocDelete : kDocGet;
  if (p == "/v1/stats") return kStats;
  if (p == "/healthz") return kHealth;
  if (p == "/metrics") return kMetrics;
  return kOther;
}

std::string metrics_text(const Metrics& m, const LiveStats& st) {
  std::string out;
  char buf[256];
  out += "# HELP neardup_requests_total Requests answered, by endpoint and status class.\n# TYPE neardup_requests_total counter\n";
  for (int ep = 0; ep < kEndpoints; ++ep)
    for (int c = 1; c <= 5; ++c) {
      const uint64_t v = m.e[ep].by_class[c];
      if (!v) continue;
      std::snprintf(buf, sizeof buf, "neardup_requests_total{endpoint=\"%s\",code=\"%dxx\"} %llu\n", kEndpointNames[ep], c,
                    static_cast<unsigned long long>(v));
      out += buf;
    }
  out += "# HELP neardup_request_seconds Time from the request's headers read to the response built.\n# TYPE neardup_request_seconds histogram\n";
  for (int ep = 0; ep < kEndpoints; ++ep) {
    const EndpointMetrics& e = m.e[ep];
    if (!e.count) continue;
    uint64_t cum = 0;
    for (size_t b = 0; b <= kBuckets.size(); ++b) {
      cum += e.buckets[b];
      if (b < kBuckets.size())
        std::snprintf(buf, sizeof buf, "neardup_request_seconds_bucket{endpoint=\"%s\",le=\"%g\"} %llu\n", kEndpointNames[ep], kBuckets[b],
                      static_cast<unsigned long long>(cum));
      else
        std::snprintf(buf, sizeof buf, "neardup_request_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %llu\n", kEndpointNames[ep],
                      static_cast<unsigned long long>(cum));
      out += buf;
    }
    std::snprintf(buf, sizeof buf, "neardup_request_seconds_sum{endpoint=\"%s\"} %.6f\nneardup_request_seconds_count{endpoint=\"%s\"} %llu\n",
                  kEndpointNames[ep], static_cast<double>(e.micros) / 1e6, kEndpointNames[ep], static_cast<unsigned long long>(e.count.load()));
    out += buf;
  }
  const auto gauge = [&](const char* name, const char* help, const char* type, double v) {
    std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
    out += buf;
  };
  gauge("neardup_index_documents", "Live documents in the index.", "gauge", static_cast<double>(st.documents));
  gauge("neardup_index_file_bytes", "Size of the index file as last folded.", "gauge", static_cast<double>(st.index.file_bytes));
  gauge("neardup_log_bytes", "Size of the write-ahead log (changes since the last fold).", "gauge", static_cast<double>(st.log_bytes));
  gauge("neardup_search_bytes", "Memory of the inverted index of containment and top-k queries.", "gauge",
        static_cast<double>(st.search_bytes));
  gauge("neardup_pending_changes", "Changes waiting for the writer.", "gauge", static_cast<double>(st.pending));
  gauge("neardup_log_syncs_total", "Syncs of the write-ahead log (one per group of changes).", "counter", static_cast<double>(st.syncs));
  gauge("neardup_changes_total", "Changes logged since the start.", "counter", static_cast<double>(st.changes));
  gauge("neardup_folds_total", "Folds of the log into the index file since the start.", "counter", static_cast<double>(st.folds));
  gauge("neardup_refused_connections_total", "Connections answered 503 because every worker was busy.", "counter",
        static_cast<double>(m.refused_connections));
  return out;
}

std::string stats_json(const LiveStats& st, const LiveIndex& idx, const std::string& path) {
  std::string out = "{\"index\":";
  append_json_string(out, path);
  out += ",\"spec\":";
  append_json_string(out, idx.spec().to_string());
  char buf[640];
  std::snprintf(buf, sizeof buf,
                ",\"documents\":%llu,\"index_file_bytes\":%llu,\"shingles\":%llu,\"largest_bucket\":%llu,\"log_bytes\":%llu,"
                "\"log_records\":%llu,\"replayed\":%llu,\"torn_bytes\":%llu,\"folds\":%llu,\"last_fold_seconds\":%.3f,\"syncs\":%llu,"
                "\"changes\":%llu,\"pending\":%llu,\"search_bytes\":%llu}\n",
                static_cast<unsigned long long>(st.documents), static_cast<unsigned long long>(st.index.file_bytes),
                static_cast<unsigned long long>(st.index.shingles), static_cast<unsigned long long>(st.index.largest_bucket),
                static_cast<unsigned long long>(st.log_bytes), static_cast<unsigned long long>(st.log_records),
                static_cast<unsigned long long>(st.replayed), static_cast<unsigned long long>(st.torn_bytes),
                static_cast<unsigned long long>(st.folds), st.last_fold_seconds, static_cast<unsigned long long>(st.syncs),
                static_cast<unsigned long long>(st.changes), static_cast<unsigned long long>(st.pending),
                static_cast<unsigned long long>(st.search_bytes));
  out += buf;
  return out;
}

// ---- Connections ----

// Connections are served by a fixed pool of threads (cpp-httplib serves a connection, with its
// keep-alive requests, on one thread). When every thread is busy and `max_queue` connections
// already wait, a new one is answered "503 Service Unavailable" with Retry-After by one more
// thread (the overflow marks it so), so that a flood queues neither without bound nor silently.
thread_local bool t_overflow = false;

class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t max_queue) : max_queue_(max_queue) {
    for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(jobs_, false); });
    workers_.emplace_back([this] { work(overflow_, true); });
  }
  void enqueue(std::function<void()> fn) override {
    // The connection's deadline counts from now, however long it waits for a thread.
    std::function<void()> job = [fn = std::move(fn), accepted = ConnectionStream::Clock::now()] {
      ConnectionStream::set_accepted(accepted);
      fn();
    };
    {
      std::lock_guard<std::mutex> g(mu_);
      if (jobs_.size() < max_queue_)
        jobs_.push_back(std::move(job));
      else
        overflow_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void work(std::deque<std::function<void()>>& q, bool overflow) {
    t_overflow = overflow;
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !q.empty(); });
        if (q.empty()) return;
        fn = std::move(q.front());
        q.pop_front();
      }
      fn();
    }
  }
  size_t max_queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_, overflow_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
};

// Compares in time independent of where the strings differ (the token is a secret).
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string read_token(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("cannot read the token file", ErrorPlace{path});
  std::string t((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.size() < 16) throw UsageError(path + ": the token is shorter than 16 characters; write a long random one (for example 'openssl rand -hex 32')");
  for (const char c : t)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F)
      throw UsageError(path + ": the token holds a space or control character; write it on one line");
  return t;
}

// HOST:PORT, [IPv6]:PORT or :PORT (every interface).
std::pair<std::string, int> parse_listen(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) throw UsageError("--listen " + s + ": expected HOST:PORT, for example 127.0.0.1:8080");
  std::string host = s.substr(0, colon);
  const std::string port = s.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p < 0 || p > 65535) throw UsageError("--listen " + s + ": the port must be a number from 0 to 65535");
  return {host, static_cast<int>(p)};
}

bool is_loopback(const std::string& host) {
  in_addr a4{};
  in6_addr a6{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  if (::inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return host == "localhost";
}

thread_local std::chrono::steady_clock::time_point t_request_start;
// One JSON parser per connection thread. simdjson keeps the buffers of the largest document it
// parsed (several times its size): after a large body they are let go before a small one, or
// every thread that once met a 64 MiB body would hold them for good.
thread_local simdjson::dom::parser t_parser;

simdjson::dom::parser& request_parser(const std::string& body) {
  constexpr size_t kLargeCapacity = size_t{4} << 20;
  if (t_parser.capacity() > kLargeCapacity && body.size() <= kLargeCapacity / 4) t_parser = simdjson::dom::parser();
  return t_parser;
}

// A request's body, whatever its Content-Type, up to --max-body-bytes: curl -d sends
// application/x-www-form-urlencoded, whose bodies cpp-httplib would otherwise parse as a form and
// refuse over 8 KiB. A multipart form (curl -F) is not a JSON body.
std::string read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader, uint64_t limit) {
  if (req.is_multipart_form_data())
    throw BadRequest{415, "the body is a multipart form (curl -F); send the JSON itself (curl -d @doc.json, or --data-binary)", ""};
  std::string body;
  if (!reader([&](const char* data, size_t n) {
        body.append(data, n);
        return true;
      })) {
    if (res.status == 413)
      throw BadRequest{413, "the request body is over the limit of " + std::to_string(limit) + " bytes (--max-body-bytes)", ""};
    throw BadRequest{400, "the request body ended before its Content-Length (" + req.get_header_value("Content-Length") +
                              " bytes) or could not be decoded", ""};
  }
  return body;
}

// Content-Length, when given, is one decimal number of bytes: cpp-httplib would read "-5" as a
// huge number and answer 413.
std::string content_length_problem(const httplib::Request& req) {
  if (!req.has_header("Content-Length")) return "";
  if (req.get_header_value_count("Content-Length") > 1) return "the request has more than one Content-Length header";
  const std::string v = req.get_header_value("Content-Length");
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
    return "Content-Length '" + v.substr(0, 40) + "' is not a number of bytes";
  return "";
}

// cpp-httplib listens with the backlog it was compiled with (5 in Debian's build): a burst of
// clients connecting at once would overflow it, and a connection whose handshake ACK is
// dropped there can be reset. listen() again with a deep backlog once bound.
struct Server : httplib::Server {
  void deepen_backlog() { ::listen(svr_sock_, SOMAXCONN); }
  // Each connection through a ConnectionStream: a request must arrive by its deadline
  // (serve_connection.h), where cpp-httplib would wait for a byte-a-second client for ever.
  int timeout = 10;
  bool process_and_close_socket(socket_t sock) override {
    return serve_connection(
        sock, timeout, timeout, static_cast<int>(keep_alive_timeout_sec_), keep_alive_max_count_,
        [this](httplib::Stream& s, bool last, bool& closed) { return process_request(s, last, closed, nullptr); },
        [this] { return svr_sock_ == INVALID_SOCKET; });
  }
  /// One request read from `s` and answered there (ServeHarness); false once the connection ends.
  bool serve_one(httplib::Stream& s, bool& closed) { return process_request(s, false, closed, nullptr); }
};

// POST endpoints read their bodies themselves (read_body), whatever their Content-Type; a
// BadRequest reading one is answered at once.
void post(Server& svr, const ServeOptions& o, const char* path,
          std::function<void(const httplib::Request&, httplib::Response&, const std::string& body)> fn) {
  svr.Post(path, [&o, fn = std::move(fn)](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    std::string body;
    try {
      body = read_body(req, res, reader, o.max_body_bytes);
      if (ConnectionStream* c = ConnectionStream::current()) c->request_read();
    } catch (const BadRequest& e) {
      res.set_header("Connection", "close");  // what is left of the body is not read
      return reply_error(res, e);
    }
    fn(req, res, body);
  });
}

// 503 with Retry-After: the change queue is full.
void busy(httplib::Response& res) {
  res.set_header("Retry-After", "1");
  reply(res, 503, error_json("too many changes are waiting to be logged; retry after a second"));
}

// The server's pool, timeouts and limits, and what every request goes through: the worker check,
// Content-Length, the token, the metrics, JSON errors.
void configure(Server& svr, const ServeOptions& o, const std::string& token, Metrics& metrics) {
  const int threads = o.threads > 0 ? o.threads : std::max(32, 8 * static_cast<int>(std::thread::hardware_concurrency()));
  const size_t max_queue = o.max_connections ? o.max_connections : static_cast<size_t>(threads) * 4;
  svr.new_task_queue = [threads, max_queue] { return new BoundedPool(static_cast<size_t>(threads), max_queue); };
  svr.set_tcp_nodelay(true);
  svr.set_keep_alive_max_count(100000);
  svr.set_keep_alive_timeout(std::min(o.timeout, 5));
  svr.set_read_timeout(o.timeout, 0);
  svr.timeout = o.timeout;
  svr.set_write_timeout(o.timeout, 0);
  svr.set_payload_max_length(o.max_body_bytes);

  svr.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    t_request_start = std::chrono::steady_clock::now();
    if (t_overflow) {
      ++metrics.refused_connections;
      res.set_header("Retry-After", "1");
      res.set_header("Connection", "close");
      reply(res, 503, error_json("every worker is busy; retry after a second"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (const std::string problem = content_length_problem(req); !problem.empty()) {
      res.set_header("Connection", "close");  // the body's end is unknown: the connection cannot go on
      reply(res, 400, error_json(problem + "; send the body's length in bytes, or no Content-Length"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (ConnectionStream* c = ConnectionStream::current())  // the body may take a second more per MiB
      c->allow_body(req.has_header("Content-Length") ? std::stoull(req.get_header_value("Content-Length")) : o.max_body_bytes);
    if (!token.empty() && req.path != "/healthz") {
      const std::string auth = req.get_header_value("Authorization");
      // The scheme is case-insensitive (RFC 7235 section 2.1): Bearer, bearer, BEARER.
      const bool bearer = auth.size() > 7 && ::strncasecmp(auth.c_str(), "bearer ", 7) == 0;
      if (!bearer || !constant_time_equal(std::string_view(auth).substr(7), token)) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"neardup\"");
        reply(res, 401, error_json("missing or wrong bearer token (send 'Authorization: Bearer TOKEN')", "Authorization"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_request_start).count();
    metrics.observe(endpoint_of(req), res.status, s);
  });
  // A status without a body (an unknown path, a body over the limit, a malformed request line)
  // still answers in JSON.
  svr.set_error_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      reply_no_endpoint(req, res);
    else if (res.status == 413)
      reply(res, 413, error_json("the request body is over the limit of " + std::to_string(o.max_body_bytes) + " bytes (--max-body-bytes)"));
    else
      reply(res, res.status, error_json("bad request (HTTP status " + std::to_string(res.status) + ")"));
  });
  svr.set_exception_handler([&](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const BadRequest& e) {
      reply_error(res, e);
    } catch (const Error& e) {
      reply(res, e.category() == ErrorCategory::Usage ? 503 : 500, error_json(flag_text(e)));
    } catch (const std::bad_alloc&) {
      reply(res, 503, error_json("out of memory"));
    } catch (const std::exception& e) {
      reply(res, 500, error_json(std::string("internal error: ") + e.what()));
    }
  });

}

// Queries: one text, or an NDJSON batch.
void add_query_routes(Server& svr, const ServeOptions& o, LiveIndex& live, const Limits& limits) {
  post(svr, o, "/v1/query", [&](const httplib::Request& req, httplib::Response& res, const std::string& body) {
    const QueryRequest q = parse_query(request_parser(body), body, limits, url_ask(req));
    reply(res, 200, query_json(live.query(q.text, q.how, q.id), q.how, live) + "\n");
  });
  post(svr, o, "/v1/query/batch", [&](const httplib::Request& req, httplib::Response& res, const std::string& body) {
    std::vector<QueryRequest> qs;
    simdjson::dom::parser& parser = request_parser(body);
    const QueryAsk url = url_ask(req);
    for (const auto& [n, line] : ndjson_lines(body)) {
      try {
        qs.push_back(parse_query(parser, line, limits, url));
      } catch (const BadRequest& e) {
        return reply_error(res, e, n);
      }
    }
    std::string out;
    for (const QueryRequest& q : qs) {
      out += query_json(live.query(q.text, q.how, q.id), q.how, live);
      out += '\n';
    }
    res.status = 200;
    res.set_content(std::move(out), "application/x-ndjson");
  });
}

// Changes: adds (one, or an NDJSON batch) and removals, each acknowledged once in the synced log.
void add_change_routes(Server& svr, const ServeOptions& o, LiveIndex& live, const Limits& limits) {
  post(svr, o, "/v1/add", [&](const httplib::Request& req, httplib::Response& res, const std::string& body) {
    LiveChange c = parse_add(request_parser(body), body, limits);
    const std::string id = c.id;
    const LiveResult r = live.apply(std::move(c));
    if (r.outcome == LiveResult::Outcome::Busy) return busy(res);
    auto [status, answer] = add_json(id, r);
    reply(res, status, answer + "\n");
  });
  post(svr, o, "/v1/add/batch", [&](const httplib::Request& req, httplib::Response& res, const std::string& body) {
    std::vector<LiveChange> cs;
    std::vector<std::string> ids;
    simdjson::dom::parser& parser = request_parser(body);
    for (const auto& [n, line] : ndjson_lines(body)) {
      try {
        cs.push_back(parse_add(parser, line, limits));
      } catch (const BadRequest& e) {
        return reply_error(res, e, n);
      }
      ids.push_back(cs.back().id);
    }
    // A batch larger than the change queue could never be admitted: refused as too large.
    if (cs.size() > o.max_pending)
      return reply(res, 413, error_json("a batch of " + std::to_string(cs.size()) + " changes is more than --max-pending " +
                                        std::to_string(o.max_pending) + "; split it"));
    const std::vector<LiveResult> rs = live.apply(std::move(cs));
    if (!rs.empty() && rs.front().outcome == LiveResult::Outcome::Busy) return busy(res);
    std::string out;
    for (size_t i = 0; i < rs.size(); ++i) {
      out += add_json(ids[i], rs[i]).second;
      out += '\n';
    }
    res.status = 200;
    res.set_content(std::move(out), "application/x-ndjson");
  });
  svr.Delete("/v1/docs/(.+)", [&](const httplib::Request& req, httplib::Response& res) {
    LiveChange c;
    c.kind = LiveChange::Kind::Remove;
    c.id = req.matches[1];
    check_id(c.id, "id");
    std::string out = "{\"id\":";
    append_json_string(out, c.id);
    const LiveResult r = live.apply(std::move(c));
    if (r.outcome == LiveResult::Outcome::Busy) return busy(res);
    const bool removed = r.outcome == LiveResult::Outcome::Removed;
    out += removed ? ",\"removed\":true}\n" : ",\"removed\":false,\"error\":\"no document with this id\",\"field\":\"id\"}\n";
    reply(res, removed ? 200 : 404, out);
  });
}

// Lookups and the service's state: a document by id, stats, health, metrics; methods no endpoint
// takes.
void add_status_routes(Server& svr, const ServeOptions& o, LiveIndex& live, Metrics& metrics) {
  svr.Get("/v1/docs/(.+)", [&](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    check_id(id, "id");
    const bool present = live.contains(id);
    std::string out = "{\"id\":";
    append_json_string(out, id);
    out += present ? ",\"present\":true}\n" : ",\"present\":false}\n";
    reply(res, present ? 200 : 404, out);
  });
  svr.Get("/v1/stats", [&](const httplib::Request&, httplib::Response& res) { reply(res, 200, stats_json(live.stats(), live, o.index)); });
  svr.Get("/healthz", [&](const httplib::Request&, httplib::Response& res) {
    // Unhealthy while the last write of the log failed (changes are tried again as they come), or
    // for good once the log could not be cut back (changes refused until a restart).
    const LiveStats st = live.stats();
    if (st.log_failure.empty()) return reply(res, 200, "{\"status\":\"ok\"}\n");
    std::string out = "{\"status\":\"failing\",\"error\":";
    append_json_string(out, st.log_failure_needs_restart
                                ? "changes are refused: the log cannot be written (" + st.log_failure + "); free space and restart"
                                : "the last changes could not be logged (" + st.log_failure +
                                      ") and were not applied; changes are tried again as they come: free space");
    reply(res, 503, out + "}\n");
  });
  // Methods no endpoint takes: answered as an unknown endpoint is, in JSON, whether or not they
  // carry a body (taken with a content reader so that cpp-httplib does not try to read one first
  // and answer 400; what is left unread closes the connection).
  const auto no_endpoint_with_body = [](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader&) {
    res.set_header("Connection", "close");
    reply_no_endpoint(req, res);
  };
  svr.Patch(".*", no_endpoint_with_body);
  svr.Put(".*", no_endpoint_with_body);
  svr.Options(".*", reply_no_endpoint);
  svr.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(metrics_text(metrics, live.stats()), "text/plain; version=0.0.4");
  });

}

int run_serve(const ServeOptions& o) {
  const auto [host, port] = parse_listen(o.listen);
  const std::string token = o.token_file.empty() ? std::string() : read_token(o.token_file);
  // The signals end the service gracefully: blocked here, before any thread starts (threads
  // inherit the mask), and taken by one thread with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR2}) sigaddset(&stop_signals, s);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is an error on its socket, not the end of the service

  LiveIndexOptions lo;
  lo.max_pending = o.max_pending;
  lo.fold_bytes = o.fold_mb << 20;
  auto idx = LiveIndex::open(o.index, lo);
  const LiveStats opened = idx->stats();
  if (!o.quiet && opened.torn_bytes)
    std::fprintf(stderr, "neardup: warning: %s: cut a torn record of %llu bytes off the log's end (a change that was never acknowledged)\n",
                 LiveIndex::log_path(o.index).c_str(), static_cast<unsigned long long>(opened.torn_bytes));
  const Limits limits{o.max_text_bytes, idx->spec().threshold};
  Metrics metrics;

  Server svr;
  configure(svr, o, token, metrics);
  add_query_routes(svr, o, *idx, limits);
  add_change_routes(svr, o, *idx, limits);
  add_status_routes(svr, o, *idx, metrics);

  int bound = port;
  if (port == 0) {
    bound = svr.bind_to_any_port(host);
    if (bound < 0) throw IoError("cannot listen on " + host + ": " + std::strerror(errno));
  } else if (!svr.bind_to_port(host, port)) {
    throw IoError("cannot listen on " + o.listen + ": " + std::strerror(errno) + " (is another service on that port?)");
  }
  svr.deepen_backlog();
  // Port 0: the port chosen is the command's output, even with -q (a script needs it).
  if (port == 0) {
    const std::string line = "http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(bound) + "\n";
    std::fflush(stdout);
    if (io::write_fully(STDOUT_FILENO, line.data(), line.size()) < line.size())  // no one would know where it listens
      throw IoError(std::string("cannot write the port chosen to standard output: ") + std::strerror(errno));
  }
  if (!o.quiet) {
    if (!is_loopback(host))
      std::fprintf(stderr, "neardup: warning: listening on %s, reachable from other machines%s\n", host.c_str(),
                   token.empty() ? " with no token (--token-file)" : "");
    std::fprintf(stderr, "neardup: serving %s (%llu documents, %llu changes replayed from the log) on http://%s:%d\n", o.index.c_str(),
                 static_cast<unsigned long long>(opened.documents), static_cast<unsigned long long>(opened.replayed),
                 host.find(':') != std::string::npos ? ("[" + host + "]").c_str() : host.c_str(), bound);
  }

  // The first signal stops accepting, lets the requests in flight finish and folds the log; a
  // second one ends the process at once (every acknowledged change is in the synced log).
  std::atomic<int> got_signal{0};
  std::atomic<bool> finished{false};
  std::thread sig_thread([&] {
    for (int stops = 0;;) {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      if (sig == SIGUSR2) {
        if (finished) return;  // the service has stopped: this thread's end
        continue;
      }
      if (stops++ > 0) std::_Exit(128 + sig);
      got_signal = sig;
      svr.stop();
    }
  });
  const bool listened = svr.listen_after_bind();
  const int sig = got_signal.load();
  if (!o.quiet && sig) std::fprintf(stderr, "neardup: %s: finishing: folding the log into %s\n", strsignal(sig), o.index.c_str());
  // The last fold can fail (a full disk): every acknowledged change is still in the synced log,
  // so that is reported, after the threads are stopped, not left to end the process.
  std::string fold_error;
  try {
    idx->close();
  } catch (const std::exception& e) {
    fold_error = e.what();
  }
  idx.reset();
  finished = true;
  pthread_kill(sig_thread.native_handle(), SIGUSR2);  // in the thread's set only to end it
  sig_thread.join();
  if (!fold_error.empty())
    throw IoError("cannot fold the log into the index (" + fold_error + "); every acknowledged change is still in " +
                  LiveIndex::log_path(o.index) + ", replayed at the next start: free space, then start the service again "
                  "or run 'neardup index fold " + o.index + "'");
  if (!listened && !sig) throw IoError("the service stopped: cannot accept connections on " + o.listen);
  if (!o.quiet) std::fprintf(stderr, "neardup: stopped; %s is up to date\n", o.index.c_str());
  return kExitOk;
}

// A connection's bytes in memory (ServeHarness).
class MemoryStream : public httplib::Stream {
 public:
  explicit MemoryStream(std::string_view in) : in_(in) {}
  bool is_readable() const override { return at_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - at_);
    std::memcpy(ptr, in_.data() + at_, n);
    at_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8080;
  }
  socket_t socket() const override { return INVALID_SOCKET; }
  std::string take() { return std::move(out_); }

 private:
  std::string_view in_;
  size_t at_ = 0;
  std::string out_;
};

}  // namespace

struct ServeHarness::Impl {
  ServeOptions o;
  Limits limits;
  Metrics metrics;
  Server svr;
  std::string token;
};

ServeHarness::ServeHarness(LiveIndex& live, const std::string& index_path, const std::string& token) : impl_(std::make_unique<Impl>()) {
  Impl& h = *impl_;
  h.o.index = index_path;
  h.token = token;
  h.limits = Limits{h.o.max_text_bytes, live.spec().threshold};
  configure(h.svr, h.o, h.token, h.metrics);
  add_query_routes(h.svr, h.o, live, h.limits);
  add_change_routes(h.svr, h.o, live, h.limits);
  add_status_routes(h.svr, h.o, live, h.metrics);
}

ServeHarness::~ServeHarness() = default;

uint64_t ServeHarness::server_errors() const noexcept { return impl_->metrics.server_errors; }

std::string ServeHarness::serve(std::string_view bytes) {
  MemoryStream s(bytes);
  bool closed = false;
  for (int i = 0; i < 64 && s.is_readable() && !closed; ++i)
    if (!impl_->svr.serve_one(s, closed)) break;
  return s.take();
}

void add_serve(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve an index over HTTP/1.1 with JSON: query, add (durably), remove (docs/serve.md)");
  cmd->add_option("index", o->index, "Index file (made with 'neardup index create')")->required();
  cmd->add_option("--listen", o->listen, "HOST:PORT to listen on (default 127.0.0.1:8080; port 0: any free port)");
  cmd->add_option("--threads", o->threads, "Connections served at once (default: 8 per core, at least 32)")->check(CLI::Range(1, 4096));
  cmd->add_option("--max-connections", o->max_connections, "Connections that may wait for a thread; more are answered 503 (default: 4 x --threads)");
  cmd->add_option("--token-file", o->token_file, "A file holding a bearer token every request must carry (but /healthz)");
  cmd->add_option("--max-body-bytes", o->max_body_bytes, "Largest request body (default 64 MiB)")->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 40));
  cmd->add_option("--max-text-bytes", o->max_text_bytes, "Largest document text (default 8 MiB)")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--max-pending", o->max_pending, "Changes that may wait for the log; more are answered 503 (default 4096)")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--fold-mb", o->fold_mb, "Fold the log into the index file when it grows past this many MiB (default 256)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  cmd->add_option("--timeout", o->timeout, "Seconds a client may take to send a request or read a response (default 10)")->check(CLI::Range(1, 3600));
  cmd->add_flag("-q,--quiet", o->quiet, "No messages on stderr");
  cmd->callback([&run, o] { run = [o] { return run_serve(*o); }; });
}

}  // namespace neardup::cli
