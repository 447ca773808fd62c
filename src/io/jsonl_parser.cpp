// The JSONL parser: a line to its id, text and key with simdjson, and the word-text path that
// hands a text over already as the shingler reads it.
#include "neardup/io/reader.h"
#include "io/raw_records.h"

#include "internal/parallel.h"
#include "internal/realloc_buffer.h"
#include "internal/testing.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fnmatch.h>

#include "internal/utf8.h"
#include "kernels/dispatch.h"
#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/io/writer.h"


namespace fs = std::filesystem;

namespace neardup::io {

namespace {

const char* type_name(simdjson::dom::element_type t) {
  using T = simdjson::dom::element_type;
  switch (t) {
    case T::ARRAY: return "an array";
    case T::OBJECT: return "an object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE: return "a number";
    case T::STRING: return "a string";
    case T::BOOL: return "a boolean";
    case T::NULL_VALUE: return "null";
  }
  return "?";
}

}  // namespace

const size_t JsonlParser::kPadding = simdjson::SIMDJSON_PADDING;

namespace {

// A field by name, or by dotted path through nested objects (`meta.content`) when the record has
// no field of that exact name.
simdjson::error_code find_field(simdjson::dom::object obj, std::string_view name, simdjson::dom::element& out) {
  if (!obj.at_key(name).get(out)) return simdjson::SUCCESS;
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return simdjson::NO_SUCH_FIELD;
  simdjson::dom::element cur;
  if (obj.at_key(name.substr(0, dot)).get(cur)) return simdjson::NO_SUCH_FIELD;
  name.remove_prefix(dot + 1);
  for (;;) {
    simdjson::dom::object o;
    if (cur.get_object().get(o)) return simdjson::NO_SUCH_FIELD;
    dot = name.find('.');
    if (o.at_key(name.substr(0, dot)).get(cur)) return simdjson::NO_SUCH_FIELD;
    if (dot == std::string_view::npos) {
      out = cur;
      return simdjson::SUCCESS;
    }
    name.remove_prefix(dot + 1);
  }
}

// Shows an id in a message: at most 60 bytes, control characters escaped.
std::string shown_id(std::string_view id) {
  std::string out;
  for (const char c : id.substr(0, 60)) {
    if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  if (id.size() > 60) out += "...";
  return out;
}

}  // namespace

namespace {
struct WordTextRun;
}  // namespace

struct JsonlParser::Impl {
  ReaderOptions opt;
  bool word_text = false;
  int threads = 1;
  // A long line's word text in place (word_text_validate, then word_text_write): where its parts
  // start, then the line's end; what each part gave; the part with the closing quote.
  std::vector<size_t> cuts;
  std::vector<WordTextRun> runs;
  size_t string_part = 0;
  // A long line's word text where the line may not be overwritten (a mapped file's). Kept from one
  // long line to the next, cut to keep_long_words before the next short line (the parsers of a
  // pass together keep no more than the reader keeps of its read buffers, which it does not use
  // on mapped files): long records come in groups (generated files), and faulting in a fresh
  // buffer for each of them took 4-6% of the CPU samples of `pairs` on the crowded mix.
  internal::ReallocBuffer long_words;
  size_t keep_long_words = 0;
  simdjson::dom::parser parser;
  std::string id_buf, sanitized, surrogates, skeleton;
  internal::ReallocBuffer words;
  uint64_t text_length = 0;
  bool replaced = false;
  bool missing_id = false;
  const char* kind = "";

  bool fields(simdjson::dom::element doc, const Source& source, uint64_t line_no, Record& out, std::string& problem);
  bool flat_fields(std::string_view skeleton, const Source& source, uint64_t line_no, Record& out);
  // A record without an id field is named by its place, FILE:LINE.
  void id_of_place(const Source& source, uint64_t line_no, Record& out) {
    id_buf = source.display + ":" + std::to_string(line_no);
    out.id = id_buf;
    missing_id = true;
  }
  bool parse_word_text(std::string_view line, bool long_line, char* in_place, const Source& source, uint64_t line_no, Record& out);
  int word_text_copy(std::string_view line, size_t begin, uint64_t& blanked, size_t& n);
  int word_text_decoding(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded);  // after word_text_copy
  void cut_parts(std::string_view line, size_t begin);
  void run_parts(std::string_view line, size_t begin, size_t parts, char* to);
  int settle_parts(size_t begin, size_t& n, size_t& text, uint64_t& decoded);
  void pack_parts(size_t begin, char* to);
  int word_text_validate(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded);
  void word_text_write(std::string_view line, size_t begin, char* to);
  int word_text_into_long_words(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded);
};

JsonlParser::JsonlParser(const ReaderOptions& options, bool word_text, int threads) : impl_(std::make_unique<Impl>()) {
  impl_->opt = options;
  impl_->word_text = word_text;
  impl_->threads = std::max(threads, 1);
  impl_->keep_long_words = kKeptReadBufferBytes / static_cast<size_t>(impl_->threads);
}
JsonlParser::~JsonlParser() = default;
bool JsonlParser::replaced_invalid_utf8() const noexcept { return impl_->replaced; }
bool JsonlParser::missing_id() const noexcept { return impl_->missing_id; }
const char* JsonlParser::problem_kind() const noexcept { return impl_->kind; }
uint64_t JsonlParser::text_length() const noexcept { return impl_->text_length; }

namespace {
// Word text is tried on lines from this long. A flat skeleton is read without the DOM parser
// (flat_skeleton), so that word text costs less than the DOM's parse of the whole line on lines of
// a few words too: from 64 bytes instead of 256, dedup of 1M lines of 30-60 words took 0.9x the
// time and 0.86x the CPU (bench/abba.sh, Zen 3). Shorter lines gain nothing.
std::atomic<size_t> word_text_min_line{64};
}  // namespace

size_t set_word_text_min_line(size_t bytes) noexcept { return word_text_min_line.exchange(bytes); }

bool JsonlParser::parse(std::string_view line, const Source& source, uint64_t line_no, Record& out, std::string& problem,
                        char* overwritable) {
  Impl& m = *impl_;
  // Word text is tried first on every line long enough to gain from it; its \u escapes are
  // decoded where they are (JSON written with ASCII only escapes every non-ASCII character). So
  // whether a text comes as word text or decoded depends on its own line alone, never on the
  // lines this parser met before: the same line gives the same text on every thread and in every
  // run. A line of kWordTextMaxLine or more is made word text in place where it may be.
  const bool long_line = line.size() >= kWordTextMaxLine;
  char* const in_place = long_line ? overwritable : nullptr;
  // simdjson keeps the buffers of the largest line it parsed (its text, tape and indexes: several
  // times the line), and long_words the word text of the longest line; after a large record they
  // are let go before the next small one, so that one 20 MB record does not hold them for the
  // rest of the pass on every thread.
  constexpr size_t kLargeCapacity = size_t{4} << 20;
  if (m.long_words.size() > m.keep_long_words && line.size() <= kLargeCapacity / 4) {
    if (m.keep_long_words >= internal::ReallocBuffer::kMapBytes) m.long_words.resize(m.keep_long_words);  // in place, its first pages kept
    else m.long_words = internal::ReallocBuffer();
  }
  if (m.word_text && line.size() >= word_text_min_line.load(std::memory_order_relaxed) &&
      m.parse_word_text(line, long_line, in_place, source, line_no, out))
    return true;
  if (m.parser.capacity() > kLargeCapacity && line.size() <= kLargeCapacity / 4) m.parser = simdjson::dom::parser();
  simdjson::dom::element doc;
  auto err = m.parser.parse(line.data(), line.size(), false).get(doc);
  m.replaced = false;
  if (err == simdjson::UTF8_ERROR) {
    internal::sanitize_utf8(line.data(), line.size(), m.sanitized);
    m.replaced = true;
    m.sanitized.reserve(m.sanitized.size() + kPadding);
    err = m.parser.parse(m.sanitized.data(), m.sanitized.size(), false).get(doc);
  }
  // A \uD800-\uDFFF escape outside a surrogate pair is valid JSON but no character (Python's
  // json.dumps writes them): it becomes \uFFFD, like invalid UTF-8.
  if (err == simdjson::STRING_ERROR) {
    std::string& fixed = m.replaced ? m.surrogates : m.sanitized;
    const std::string_view from = m.replaced ? std::string_view(m.sanitized) : line;
    if (internal::replace_lone_surrogate_escapes(from, fixed)) {
      m.replaced = true;
      fixed.reserve(fixed.size() + kPadding);
      err = m.parser.parse(fixed.data(), fixed.size(), false).get(doc);
    }
  }
  m.missing_id = false;
  m.kind = "";
  if (err) {
    problem = std::string("malformed JSON (") + simdjson::error_message(err) + ")";
    m.kind = "malformed JSON";
    return false;
  }
  if (!m.fields(doc, source, line_no, out, problem)) return false;
  m.text_length = out.text.size();
  return true;
}

// The record's fields from its parsed line.
bool JsonlParser::Impl::fields(simdjson::dom::element doc, const Source& source, uint64_t line_no, Record& out,
                               std::string& problem) {
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) {
    problem = std::string("the line is ") + type_name(doc.type()) + ", not a JSON object";
    kind = "not a JSON object";
    return false;
  }
  simdjson::dom::element text_el;
  if (find_field(obj, opt.text_field, text_el)) {
    problem = "missing text field \"" + opt.text_field + "\" (choose another with " NEARDUP_OPT("text_field") "; nested fields as a.b)";
    kind = "missing text field";
    return false;
  }
  std::string_view text;
  if (text_el.get_string().get(text)) {
    problem = "text field \"" + opt.text_field + "\" is " + type_name(text_el.type()) + ", not a string";
    kind = "text not a string";
    return false;
  }
  simdjson::dom::element id_el;
  if (find_field(obj, opt.id_field, id_el)) {
    id_of_place(source, line_no, out);
  } else if (id_el.is_string()) {
    out.id = id_el.get_string().value_unsafe();
  } else if (id_el.is_number()) {
    id_buf = simdjson::minify(id_el);  // the number as written: 42, 1e3, 0.5
    out.id = id_buf;
  } else {
    problem = "id field \"" + opt.id_field + "\" is " + type_name(id_el.type()) + ", not a string or number";
    kind = "bad id";
    return false;
  }
  if (bad_id_char(out.id)) {
    problem = "id \"" + shown_id(out.id) + "\" holds a TAB, CR or LF, which would corrupt the TSV outputs (pairs, "
              NEARDUP_OPT("removed") ", " NEARDUP_OPT("clusters") "); remove them from the ids";
    kind = "bad id";
    return false;
  }
  out.key = KeyValue{};
  if (!opt.key_field.empty()) {
    simdjson::dom::element key_el;
    if (!find_field(obj, opt.key_field, key_el) && !key_el.is_null()) {
      if (key_el.is_number()) {
        out.key.kind = KeyValue::Kind::Number;
        out.key.number = key_el.get_double().value_unsafe();
      } else if (key_el.is_string()) {
        out.key.kind = KeyValue::Kind::String;
        out.key.text = key_el.get_string().value_unsafe();
      } else {
        problem = "keep-by field \"" + opt.key_field + "\" is " + type_name(key_el.type()) + ", not a number or string";
        kind = "bad keep-by field";
        return false;
      }
    }
  }
  if (!limit_doc_text(text, opt, problem)) {
    kind = "longer than " NEARDUP_OPT("max_doc_bytes");
    return false;
  }
  out.text = text;
  return true;
}

namespace {

inline bool json_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Where the string value of the top-level field `key` starts (the byte after its opening quote),
// found by walking the line's tokens up to it; npos when there is no such field written without
// escapes, or its value is not a string. Only strings and brackets are followed: the skeleton's
// parse validates the rest.
size_t top_level_string_value(std::string_view line, std::string_view key) {
  const size_t n = line.size();
  int depth = 0;
  size_t i = 0;
  while (i < n) {
    const char c = line[i];
    if (c == '{' || c == '[') {
      ++depth;
      ++i;
    } else if (c == '}' || c == ']') {
      if (--depth <= 0) return std::string_view::npos;
      ++i;
    } else if (c == '"') {
      const size_t s = ++i;
      bool escapes = false;
      while (i < n && line[i] != '"') {
        if (line[i] == '\\') {
          escapes = true;
          ++i;
        }
        ++i;
      }
      if (i >= n) return std::string_view::npos;
      const std::string_view str = line.substr(s, i - s);
      ++i;
      size_t j = i;
      while (j < n && json_space(line[j])) ++j;
      if (depth != 1 || j >= n || line[j] != ':' || escapes || str != key) continue;  // not the key
      ++j;
      while (j < n && json_space(line[j])) ++j;
      return j < n && line[j] == '"' ? j + 1 : std::string_view::npos;
    } else {
      ++i;
    }
  }
  return std::string_view::npos;
}

// Whether the skeleton's text field is the one parse_word_text blanked: exactly one top-level
// field of that name, an empty string. The walk compares keys as written and the DOM parser
// decoded ("te\u0078t" is found by the second only), and both take the first of repeated keys.
bool blanked_text_field(simdjson::dom::element doc, std::string_view name) {
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return false;
  int found = 0;
  for (const auto field : obj) {
    if (field.key != name) continue;
    std::string_view text;
    if (++found > 1 || field.value.get_string().get(text) || !text.empty()) return false;
  }
  return found == 1;
}

}  // namespace

namespace {

// JSON string contents decoded from in[0] up to the closing quote, or up to `stop` where the
// string goes on (an escape that crosses `stop` is read whole, up to in[limit), the end of the
// line). The decoded bytes go to out (at most as many as are read). Returns kJsonWordTextOk with
// *consumed at the closing quote, kJsonWordTextOpen with *consumed >= stop, or
// kJsonWordTextInvalid for anything the full parse must see: a control character, an unknown or
// cut escape, a \uD800-\uDFFF escape that is not half of a pair (it is replaced there).
// Decoded as simdjson decodes: \uXXXX and surrogate pairs as UTF-8, the others as their byte.
int decode_json_piece(const uint8_t* in, size_t stop, size_t limit, uint8_t* out, size_t* consumed, size_t* produced) noexcept {
  const auto hex4 = [&](size_t at, uint32_t& v) { return internal::hex4_at(reinterpret_cast<const char*>(in), at, limit, v); };
  size_t r = 0, w = 0;
  while (r < stop) {
    const uint8_t c = in[r];
    if (c == '"') {
      *consumed = r;
      *produced = w;
      return internal::kJsonWordTextOk;
    }
    if (c < 0x20) return internal::kJsonWordTextInvalid;
    if (c != '\\') {
      out[w++] = c;
      ++r;
      continue;
    }
    if (r + 1 >= limit) return internal::kJsonWordTextInvalid;
    const uint8_t e = in[r + 1];
    if (e != 'u') {
      const uint8_t d = e == '"' ? '"' : e == '\\' ? '\\' : e == '/' ? '/' : e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : 0;
      if (d == 0) return internal::kJsonWordTextInvalid;
      out[w++] = d;
      r += 2;
      continue;
    }
    uint32_t cp = 0, low = 0;
    if (!hex4(r + 2, cp)) return internal::kJsonWordTextInvalid;
    r += 6;
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      if (cp > 0xDBFF || r + 1 >= limit || in[r] != '\\' || in[r + 1] != 'u' || !hex4(r + 2, low) || low < 0xDC00 || low > 0xDFFF)
        return internal::kJsonWordTextInvalid;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      r += 6;
    }
    w = static_cast<size_t>(internal::put_utf8(reinterpret_cast<char*>(out + w), cp) - reinterpret_cast<char*>(out));
  }
  *consumed = r;
  *produced = w;
  return internal::kJsonWordTextOpen;
}

}  // namespace

// Whether the text from its first \u escape on (`rest`) is written mostly in them: 8 or more in
// its next 512 bytes, as in JSON written with ASCII only of a language in another script (most of
// whose characters are then escaped). Those are decoded block by block slower than the full parse
// decodes them. A test of the line alone, so that a line's text always takes the same path.
static bool dense_escapes(std::string_view rest) noexcept {
  const std::string_view window = rest.substr(0, 512);
  int escapes = 0;
  for (size_t i = window.find('\\'); i != std::string_view::npos && i + 1 < window.size(); i = window.find('\\', i + 2))
    escapes += window[i + 1] == 'u';
  return escapes >= 8;
}

namespace {

// A value of a flat skeleton (flat_skeleton): a string of printable ASCII without escapes, or an
// integer of at most 18 digits as written.
struct FlatValue {
  enum class Kind : uint8_t { None, String, Integer };
  Kind kind = Kind::None;
  std::string_view text;
};

// Reads a JSON string of printable ASCII without escapes from s[i] (its opening quote) on.
bool flat_string(std::string_view s, size_t& i, std::string_view& out) noexcept {
  if (i >= s.size() || s[i] != '"') return false;
  const size_t begin = ++i;
  for (; i < s.size() && s[i] != '"'; ++i)
    if (const auto c = static_cast<unsigned char>(s[i]); c < 0x20 || c > 0x7E || c == '\\') return false;
  if (i >= s.size()) return false;
  out = s.substr(begin, i++ - begin);
  return true;
}

// Reads an integer from s[i] on: an optional minus, then 0 or up to 18 digits without a leading
// zero (an int64 that simdjson prints as written), not followed by a fraction or an exponent.
bool flat_integer(std::string_view s, size_t& i, std::string_view& out) noexcept {
  const size_t begin = i;
  if (i < s.size() && s[i] == '-') ++i;
  const size_t digits = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  const size_t n = i - digits;
  if (n == 0 || n > 18 || (s[digits] == '0' && (n > 1 || digits > begin))) return false;  // none, long, 01 or -0
  if (i < s.size() && (s[i] == '.' || s[i] == 'e' || s[i] == 'E')) return false;
  out = s.substr(begin, i - begin);
  return true;
}

// The fields of a skeleton in the shape most JSONL lines have, read without the DOM parser: one
// object whose field names and string values are printable ASCII without escapes, and whose other
// values are integers (flat_integer), with exactly one field named `text` and its value "" (the
// blanked text). `id` and `key` receive the first field of their name, as the DOM's lookup does.
// False for anything else (nested values, fractions, true, false, null, escapes, other bytes,
// other whitespace than JSON's), which the DOM parse then reads: every skeleton this accepts is
// valid JSON, and the DOM parse would give the same fields.
bool flat_skeleton(std::string_view s, std::string_view text, std::string_view id_name, std::string_view key_name, FlatValue& id,
                   FlatValue& key) noexcept {
  size_t i = 0;
  const auto space = [&] {
    while (i < s.size() && json_space(s[i])) ++i;
  };
  space();
  if (i >= s.size() || s[i++] != '{') return false;
  int texts = 0;
  for (;;) {
    space();
    std::string_view name;
    if (!flat_string(s, i, name)) return false;
    space();
    if (i >= s.size() || s[i++] != ':') return false;
    space();
    FlatValue v;
    if (i < s.size() && s[i] == '"') {
      if (!flat_string(s, i, v.text)) return false;
      v.kind = FlatValue::Kind::String;
    } else {
      if (!flat_integer(s, i, v.text)) return false;
      v.kind = FlatValue::Kind::Integer;
    }
    if (name == text && (++texts > 1 || v.kind != FlatValue::Kind::String || !v.text.empty())) return false;
    if (name == id_name && id.kind == FlatValue::Kind::None) id = v;
    if (!key_name.empty() && name == key_name && key.kind == FlatValue::Kind::None) key = v;
    space();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i >= s.size() || s[i++] != '}') return false;
    space();
    return i == s.size() && texts == 1;
  }
}

}  // namespace

// The record's fields from a flat skeleton (flat_skeleton), as fields() reads them from its DOM;
// false, with nothing set, where the skeleton is not flat.
bool JsonlParser::Impl::flat_fields(std::string_view skeleton, const Source& source, uint64_t line_no, Record& out) {
  FlatValue id, key;
  if (!flat_skeleton(skeleton, opt.text_field, opt.id_field, opt.key_field, id, key)) return false;
  if (id.kind == FlatValue::Kind::None) {
    id_of_place(source, line_no, out);
  } else {
    out.id = id.text;  // printable ASCII: no TAB, CR or LF (bad_id_char)
  }
  out.key = KeyValue{};
  if (key.kind == FlatValue::Kind::String) {
    out.key.kind = KeyValue::Kind::String;
    out.key.text = key.text;
  } else if (key.kind == FlatValue::Kind::Integer) {
    int64_t v = 0;
    std::from_chars(key.text.data(), key.text.data() + key.text.size(), v);
    out.key.kind = KeyValue::Kind::Number;
    out.key.number = static_cast<double>(v);  // as simdjson's get_double of an int64
  }
  out.text = {};
  return true;
}

// The fast path of word text (JsonlParser's constructor): the text field's raw contents are found
// by a walk over the tokens before them, turned into word text by the json_word_text kernel,
// which also validates them and finds their end, and validated as UTF-8; the rest of the line
// (the skeleton: the line with those contents cut out) is parsed by the DOM parser, which
// validates it and gives the other fields as the full parse would. False, with nothing reported,
// where the full parse must decide: anything it would reject or decode differently (a lone
// surrogate, a text over max_doc_bytes, a field name written with escapes).
//
// A short line's word text is a copy of the contents in `words`, taken on past its first \u
// escape with the blocks that hold them decoded (word_text_decoding). A long line's is made in parts
// (word_text_run: the 64-byte blocks holding \u escapes decoded, which only shortens them): given
// `in_place` (line.data() as memory the caller lets the parser overwrite), the contents
// themselves with their escapes blanked, so that a text of tens of MB costs no second buffer of
// its size; else a copy in long_words (a mapped line). A fresh buffer is the dear part of such a
// record: its pages are faulted in and zeroed (half of the CPU time of one 50 MB record of source
// code went to zeroing the full parse's). The line is overwritten only once everything is
// validated, so that nothing but word text is lost (a line rejected, or decoded by the full
// parse, keeps its bytes).
bool JsonlParser::Impl::parse_word_text(std::string_view line, bool long_line, char* in_place, const Source& source, uint64_t line_no,
                                         Record& out) {
  if (opt.text_field.find('.') != std::string::npos) return false;  // a dotted path: find_field's rules
  const size_t begin = top_level_string_value(line, opt.text_field);
  if (begin == std::string_view::npos) return false;
  size_t n = 0, text = 0;
  uint64_t decoded = 0;
  int status;
  if (in_place) {
    status = word_text_validate(line, begin, n, text, decoded);
  } else if (long_line) {
    status = word_text_into_long_words(line, begin, n, text, decoded);
  } else {
    uint64_t blanked = 0;
    status = word_text_copy(line, begin, blanked, n);
    text = n;
    decoded = n - blanked / 2;
    if (status == internal::kJsonWordTextDecode) {
      if (dense_escapes(line.substr(begin + n))) return false;  // for the full parse, faster at them
      status = word_text_decoding(line, begin, n, text, decoded);
    }
  }
  if (status != internal::kJsonWordTextOk) return false;
  if (decoded > opt.max_doc_bytes) return false;  // cut by limit_doc_text, at a decoded position
  // The skeleton's parse validates its own UTF-8; the contents are bordered by ASCII quotes.
  if (!simdjson::validate_utf8(line.data() + begin, n)) return false;
  skeleton.assign(line.data(), begin);
  skeleton.append(line.data() + begin + n, line.size() - begin - n);
  replaced = false;
  missing_id = false;
  kind = "";
  if (!flat_fields(skeleton, source, line_no, out)) {
    skeleton.reserve(skeleton.size() + kPadding);
    simdjson::dom::element doc;
    if (parser.parse(skeleton.data(), skeleton.size(), false).get(doc) || !blanked_text_field(doc, opt.text_field)) return false;
    std::string problem;
    if (!fields(doc, source, line_no, out, problem)) return false;
  }
  if (in_place) {
    word_text_write(line, begin, in_place + begin);  // validated above: `text` bytes
    out.text = std::string_view(in_place + begin, text);
  } else if (long_line) {
    out.text = std::string_view(long_words.data(), text);
  } else {
    out.text = std::string_view(words.data(), text);
  }
  text_length = decoded;
  return true;
}

int JsonlParser::Impl::word_text_copy(std::string_view line, size_t begin, uint64_t& blanked, size_t& n) {
  const size_t avail = line.size() - begin;
  if (words.size() < avail + 64) words.resize(avail + 64);
  const auto* raw = reinterpret_cast<const uint8_t*>(line.data() + begin);
  const int status = internal::kernels().json_word_text(raw, avail, reinterpret_cast<uint8_t*>(words.data()), &blanked, &n);
  return status == internal::kJsonWordTextOpen ? internal::kJsonWordTextInvalid : status;  // the line ends unclosed
}

namespace {

// Word text of a JSON string's contents, line[from, until), a piece of about 256 KiB at a time
// through `scratch` (a piece's room, reused: warm in the cache): each piece is made word text by
// the kernel, with each 64-byte block that holds a \u escape decoded (decode_json_piece). Pieces
// are cut after a byte that is not a backslash, so that no escape but a \u one spans two (a
// decoded block reads that one whole); `until` is the line's end, or a cut that no escape spans.
// With `to`, the result goes there, to[0] on; to may be line.data() + from, which the result
// never overtakes (decoding only shortens it). Past `max_decoded` decoded bytes it stops, invalid:
// a text over max_doc_bytes is cut by the full parse, and is not read whole here first.
struct WordTextRun {
  int status = internal::kJsonWordTextOpen;  // Ok: the closing quote at line[end]; Open: end == until
  size_t end = 0;
  size_t text = 0;       // bytes of the result
  uint64_t decoded = 0;  // length of the decoded string
};
constexpr size_t kWordTextPiece = size_t{256} << 10;

WordTextRun word_text_run(std::string_view line, size_t from, size_t until, uint64_t max_decoded, uint8_t* scratch, char* to) {
  const auto* in = reinterpret_cast<const uint8_t*>(line.data());
  WordTextRun r;
  for (size_t at = from; at < until;) {
    size_t stop = until;
    if (stop - at > kWordTextPiece) {
      stop = at + kWordTextPiece;
      while (stop > at && line[stop - 1] == '\\') --stop;
      if (stop == at) {  // a run of backslashes as long as a piece: let the full parse see
        r.status = internal::kJsonWordTextInvalid;
        return r;
      }
    }
    size_t pos = at, made = 0;
    int status = internal::kJsonWordTextOpen;
    while (pos < stop) {
      uint64_t blanked = 0;
      size_t length = 0;
      status = internal::kernels().json_word_text(in + pos, stop - pos, scratch + made, &blanked, &length);
      if (status == internal::kJsonWordTextOpen) length = stop - pos;
      if (status == internal::kJsonWordTextInvalid) break;
      made += length;
      r.decoded += length - blanked / 2;
      pos += length;
      if (status != internal::kJsonWordTextDecode) break;
      size_t read = 0, wrote = 0;
      status = decode_json_piece(in + pos, std::min<size_t>(64, stop - pos), line.size() - pos, scratch + made, &read, &wrote);
      if (status == internal::kJsonWordTextInvalid) break;
      made += wrote;
      r.decoded += wrote;
      pos += read;
      if (status == internal::kJsonWordTextOk) break;
    }
    if (status == internal::kJsonWordTextInvalid) {
      r.status = status;
      return r;
    }
    if (to) std::memcpy(to + r.text, scratch, made);
    r.text += made;
    at = pos;
    if (r.decoded > max_decoded) {  // longer than max_doc_bytes: the full parse cuts it
      r.status = internal::kJsonWordTextInvalid;
      return r;
    }
    if (status == internal::kJsonWordTextOk) {
      r.status = status;
      r.end = pos;
      return r;
    }
  }
  r.end = until;
  return r;
}

// Each thread's room for word_text_run (a piece's, reused: warm in the cache).
uint8_t* word_text_scratch() {
  thread_local std::vector<uint8_t> scratch;
  scratch.resize(kWordTextPiece + 128);
  return scratch.data();
}

}  // namespace

// A short line's word text taken on where word_text_copy stopped, at the 64-byte block holding the
// first \u escape (n: the bytes copied; text and decoded: what they gave): the rest, with each
// block that holds such an escape decoded (word_text_run), goes into `words` (which word_text_copy
// sized to hold the contents) after them. Before, a parser that met such a line parsed the next
// 15 whole, so a text's form hung on the lines before it. On the crowded mix's 641 lines with \u escapes, five
// times over (67 MB), the first pass's parse took 0.015 s of CPU against 0.025 s. On the kernel's
// Documentation/translations written with ASCII only, 30 times over (153 MB: Chinese, Japanese,
// Korean, whose every character is an escape), decoding every line here took 0.30 s against
// 0.17-0.18 s; with dense_escapes sending those lines to the full parse, 0.18 s.
int JsonlParser::Impl::word_text_decoding(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  if (decoded > opt.max_doc_bytes) return internal::kJsonWordTextInvalid;  // the full parse cuts it
  const WordTextRun r =
      word_text_run(line, begin + n, line.size(), opt.max_doc_bytes - decoded, word_text_scratch(), words.data() + text);
  if (r.status != internal::kJsonWordTextOk) return internal::kJsonWordTextInvalid;  // unclosed, or for the full parse to judge
  n = r.end - begin;
  text += r.text;
  decoded += r.decoded;
  return internal::kJsonWordTextOk;
}

// The contents from line[begin] as word text in place (word_text_run), on up to `threads`
// threads: the contents are cut into parts where none of the 11 bytes before a cut is a
// backslash (so that no escape, 12 bytes at most, spans it), and each part is validated on its
// own (word_text_validate), then written where it lies (a part's result never overtakes its own
// bytes) and moved down behind the part before (word_text_write).

// Parts of at least 1 MiB, four per thread (their speed varies: decoded blocks are slower), cut
// into `cuts` (each part's start, then the line's end).
void JsonlParser::Impl::cut_parts(std::string_view line, size_t begin) {
  const size_t size = line.size() - begin;
  const size_t parts = threads > 1 ? std::min<size_t>(4 * static_cast<size_t>(threads), size >> 20) : 1;
  cuts.assign(1, begin);
  for (size_t k = 1; k < parts; ++k) {
    size_t at = begin + size / parts * k;
    const size_t give_up = std::min(at + (size_t{64} << 10), line.size());
    size_t clean = 0;  // bytes without a backslash just before `at`
    for (size_t j = at - 11; j < at; ++j) clean = line[j] == '\\' ? 0 : clean + 1;
    while (clean < 11 && at < give_up) clean = line[at++] == '\\' ? 0 : clean + 1;
    if (clean >= 11 && at > cuts.back() && at < line.size()) cuts.push_back(at);
  }
  cuts.push_back(line.size());
}

// word_text_run over the first `parts` parts into runs[], each written where it lies with `to`
// (line.data() + begin).
void JsonlParser::Impl::run_parts(std::string_view line, size_t begin, size_t parts, char* to) {
  runs.resize(cuts.size() - 1);
  internal::parallel_for(parts, threads, [&](size_t i, size_t) {
    runs[i] = word_text_run(line, cuts[i], cuts[i + 1], opt.max_doc_bytes, word_text_scratch(), to ? to + (cuts[i] - begin) : nullptr);
  });
}

// Sets n (the closing quote at line[begin + n]), text (the bytes of the result) and decoded (the
// length of the decoded string) from the parts' runs. The string ends in the first part that found
// its closing quote; every part before it is open at its end (a part after it is not the string's).
int JsonlParser::Impl::settle_parts(size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  text = 0;
  decoded = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].status != internal::kJsonWordTextOpen && runs[i].status != internal::kJsonWordTextOk) return runs[i].status;
    text += runs[i].text;
    decoded += runs[i].decoded;
    if (runs[i].status == internal::kJsonWordTextOk) {
      n = runs[i].end - begin;
      string_part = i;
      return internal::kJsonWordTextOk;
    }
  }
  return internal::kJsonWordTextInvalid;  // the line ends before the string does
}

// The parts up to the one with the closing quote, each written where it lies in `to` (as the line
// from line[begin]), moved down behind the one before.
void JsonlParser::Impl::pack_parts(size_t begin, char* to) {
  size_t text = 0;
  for (size_t i = 0; i <= string_part; ++i) {
    if (text != cuts[i] - begin) std::memmove(to + text, to + (cuts[i] - begin), runs[i].text);
    text += runs[i].text;
  }
}

int JsonlParser::Impl::word_text_validate(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  cut_parts(line, begin);
  run_parts(line, begin, cuts.size() - 1, nullptr);
  return settle_parts(begin, n, text, decoded);
}

// The validated contents written to `to` (line.data() + begin), the parts up to the one with the
// closing quote.
void JsonlParser::Impl::word_text_write(std::string_view line, size_t begin, char* to) {
  run_parts(line, begin, string_part + 1, to);
  pack_parts(begin, to);
}

// A long line that may not be overwritten: its parts are made word text into long_words at once,
// in parallel, where the DOM parser would decode the whole line on one thread into fresh buffers
// several times its size. Nothing is lost if the line turns out invalid: only long_words is written.
int JsonlParser::Impl::word_text_into_long_words(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  // Mapped from the start, so that it grows with mremap, its pages kept (a heap block would be
  // copied into fresh ones).
  if (long_words.size() < line.size() - begin) long_words.resize(std::max(line.size() - begin, internal::ReallocBuffer::kMapBytes));
  cut_parts(line, begin);
  run_parts(line, begin, cuts.size() - 1, long_words.data());
  const int status = settle_parts(begin, n, text, decoded);
  if (status == internal::kJsonWordTextOk) pack_parts(begin, long_words.data());
  return status;
}

bool limit_doc_text(std::string_view& text, const ReaderOptions& options, std::string& problem) {
  if (text.size() <= options.max_doc_bytes) return true;
  if (options.long_docs == LongDocs::Skip) {
    problem = "the text is " + std::to_string(text.size()) + " bytes, longer than " +
              option_ref("max_doc_bytes", std::to_string(options.max_doc_bytes)) + " (raise it, or " NEARDUP_OPT_IS("long_docs", "truncate") ")";
    return false;
  }
  size_t cut = static_cast<size_t>(options.max_doc_bytes);
  // Back to the start of a character: never more than 3 continuation bytes.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80; ++i) --cut;
  text = text.substr(0, cut);
  return true;
}

}  // namespace neardup::io
