#include "internal/testing.h"
#include "neardup/text.h"

#include <gtest/gtest.h>
#include <unicode/uchar.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/text_kernels.h"
#include "neardup/cpu.h"
#include "test_util.h"

using neardup::split_words;
using V = std::vector<std::string>;

TEST(Text, AsciiWordsLowercasedAndSeparatedByPunctuation) {
  EXPECT_EQ(split_words("Hello, World! It's 2024."), (V{"hello", "world", "it", "s", "2024"}));
  EXPECT_EQ(split_words("a_b-c"), (V{"a", "b", "c"}));  // underscore is punctuation (Pc)
  EXPECT_EQ(split_words("  \t\n  "), V{});
  EXPECT_EQ(split_words(""), V{});
  EXPECT_EQ(split_words("!!!...???"), V{});
}

TEST(Text, AccentedLettersAndSharpS) {
  EXPECT_EQ(split_words("Café CRÈME"), (V{"café", "crème"}));
  EXPECT_EQ(split_words("Straße STRASSE"), (V{"straße", "strasse"}));
  // U+1E9E LATIN CAPITAL LETTER SHARP S lowercases (simple mapping) to U+00DF.
  EXPECT_EQ(split_words("\xE1\xBA\x9E"), (V{"ß"}));
  // Simple lowercase maps one code point to one: U+0130 (İ) becomes plain i, not i + U+0307.
  EXPECT_EQ(split_words("\xC4\xB0stanbul"), (V{"istanbul"}));
  EXPECT_EQ(split_words("ΣΟΦΙΑ"), (V{"σοφια"}));
}

TEST(Text, NumbersIncludeOtherNumberCategories) {
  EXPECT_EQ(split_words("x² ½ Ⅻ"), (V{"x²", "½", "ⅻ"}));  // No, No, Nl (Ⅻ lowercases to ⅻ)
  EXPECT_EQ(split_words("٣٤ 12"), (V{"٣٤", "12"}));      // Arabic-Indic digits (Nd)
}

// A combining mark belongs to its word (Unicode Standard Annex #29): an NFD accent, or the vowel
// signs of Devanagari and Thai, never split one.
TEST(Text, CombiningMarksStayInTheirWord) {
  // U+0301 COMBINING ACUTE ACCENT is Mn: a mark, part of the word it follows (docs/format.md).
  EXPECT_EQ(split_words("Cafe\xCC\x81s"), (V{"cafe\xCC\x81s"}));
  EXPECT_EQ(split_words("\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80 x"),  // Hindi: vowel signs, virama
            (V{"\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80", "x"}));
}

TEST(Text, CjkRunsAreOneWord) {
  EXPECT_EQ(split_words("日本語のテキスト。中文"), (V{"日本語のテキスト", "中文"}));
}

TEST(Text, InvalidUtf8SeparatesWords) {
  EXPECT_EQ(split_words("abc\xFF" "def"), (V{"abc", "def"}));
  EXPECT_EQ(split_words("ab\xC0\xAF" "cd"), (V{"ab", "cd"}));        // overlong '/'
  EXPECT_EQ(split_words("ab\xED\xA0\x80" "cd"), (V{"ab", "cd"}));    // encoded surrogate U+D800
  EXPECT_EQ(split_words("ab\xF4\x90\x80\x80" "cd"), (V{"ab", "cd"}));  // above U+10FFFF
  EXPECT_EQ(split_words("ab\xC3"), (V{"ab"}));                        // truncated sequence at the end
  EXPECT_EQ(split_words(std::string("a\0b", 3)), (V{"a", "b"}));      // NUL separates
}

TEST(Text, SupplementaryPlaneLetters) {
  // U+10400 DESERET CAPITAL LETTER LONG I lowercases to U+10428.
  EXPECT_EQ(split_words("\xF0\x90\x90\x80"), (V{"\xF0\x90\x90\xA8"}));
  // U+1F600 (emoji, So) separates.
  EXPECT_EQ(split_words("a\xF0\x9F\x98\x80" "b"), (V{"a", "b"}));
}

TEST(Text, CategoryAndLowercaseQueries) {
  EXPECT_TRUE(neardup::is_word_codepoint('A'));
  EXPECT_TRUE(neardup::is_word_codepoint(0x00B2));
  EXPECT_TRUE(neardup::is_word_codepoint(0x0301));  // a combining mark
  EXPECT_FALSE(neardup::is_word_codepoint(0x2019));  // a quotation mark
  EXPECT_FALSE(neardup::is_word_codepoint(' '));
  EXPECT_EQ(neardup::simple_lower('Q'), static_cast<uint32_t>('q'));
  EXPECT_EQ(neardup::simple_lower(0x1E9E), 0x00DFu);
}

// The classification tables (bitmaps and the lowercase where it differs) equal ICU, the
// definition in docs/format.md, for every code point.
TEST(Text, CategoryAndLowercaseEqualIcuForEveryCodePoint) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const uint32_t mask = U_MASK(u_charType(static_cast<UChar32>(cp)));
    const bool word = (mask & (U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK)) != 0;
    ASSERT_EQ(neardup::is_word_codepoint(cp), word) << std::hex << cp;
    ASSERT_EQ(neardup::simple_lower(cp), static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp)))) << std::hex << cp;
  }
}

// ---- The fast word path: the SIMD scan kernels against their scalar twin, and hash_words
// against the byte-at-a-time scanner, on text built to hit every boundary case. ----

namespace {

// Random text from pieces: ASCII words of every length (some over 16 and 64 bytes), capitals,
// punctuation and runs of it, accented and CJK letters, a combining mark, an emoji, invalid
// and overlong bytes, NUL.
std::string random_text(std::mt19937_64& rng, size_t target) {
  static const char* const kPieces[] = {" ", ", ", "\n", "_", "--", "\t\t", "\xC3\xA9", "\xC3\x89", "\xE6\x97\xA5",
                                        "\xCC\x81", "\xF0\x9F\x98\x80", "\xFF", "\xC0\xAF",
                                        "\xC3", "\xE1\xBA\x9E", "\xC2\xB2", "'"};
  std::string t;
  while (t.size() < target) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 6) {
      const size_t len = rng() % 8 == 0 ? 1 + rng() % 90 : 1 + rng() % 12;
      for (size_t i = 0; i < len; ++i) {
        const int c = static_cast<int>(rng() % 40);
        t.push_back(c < 26 ? static_cast<char>((rng() % 5 == 0 ? 'A' : 'a') + c) : c < 36 ? static_cast<char>('0' + c - 26) : 'x');
      }
    } else if (kind == 6) {
      t.push_back('\0');
    } else {
      t += kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))];
    }
  }
  return t;
}

}  // namespace

TEST(TextKernels, SimdScanEqualsScalarBitForBit) {
  using neardup::internal::TextScan;
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::string t = random_text(rng, 64 * (1 + rng() % 40));
    t.resize(t.size() / 64 * 64);
    const size_t nb = t.size() / 64;
    const auto run = [&](auto fn, std::vector<uint8_t>& lower, std::vector<uint64_t>& high, std::vector<uint32_t>& st,
                         std::vector<uint32_t>& en, TextScan& s) {
      lower.assign(t.size(), 0);
      high.assign(nb, 0);
      st.assign(32 * nb + 64, 0);
      en.assign(32 * nb + 64, 0);
      s.lower = lower.data();
      s.high = high.data();
      s.starts = st.data();
      s.ends = en.data();
      // In two calls, as hash_words makes them at a window edge: the carry crosses.
      const size_t half = nb / 2;
      fn(reinterpret_cast<const uint8_t*>(t.data()), 0, half, s);
      fn(reinterpret_cast<const uint8_t*>(t.data()) + 64 * half, half, nb - half, s);
      st.resize(s.ns);
      en.resize(s.ne);
    };
    std::vector<uint8_t> l0, l1;
    std::vector<uint64_t> h0, h1;
    std::vector<uint32_t> s0, s1, e0, e1;
    TextScan ref, got;
    run(neardup::internal::scan_text_scalar, l0, h0, s0, e0, ref);
    for (neardup::Isa isa : neardup::test::available_isas()) {
      if (isa == neardup::Isa::Scalar) continue;
      got = TextScan{};
      run(neardup::internal::kernels(isa).scan_text, l1, h1, s1, e1, got);
      ASSERT_EQ(l1, l0) << neardup::isa_name(isa);
      ASSERT_EQ(h1, h0) << neardup::isa_name(isa);
      ASSERT_EQ(s1, s0) << neardup::isa_name(isa);
      ASSERT_EQ(e1, e0) << neardup::isa_name(isa);
      ASSERT_EQ(got.carry, ref.carry);
      ASSERT_EQ(got.any_high, ref.any_high);
    }
  }
}

// The fast word and character paths equal the byte-at-a-time scanner, for every instruction set.
TEST(TextKernels, FastWordPathEqualsExactScanner) {
  std::mt19937_64 rng(12);
  std::vector<std::string> texts = {"", "a", "A", "ab", std::string(64, 'a'), std::string(63, 'b') + " ",
                                    std::string(65, 'c'), std::string(200000, 'd'), "caf\xC3\xA9 x", "\xC3\xA9t\xC3\xA9",
                                    "x\xFF" "y", std::string(64, ' ') + "Z",
                                    // a word across the 64 KiB window edge, non-ASCII only before it
                                    std::string(65530, ' ') + "ab\xC3\x89" "CDEFGH", std::string(65534, '.') + "\xC3\x89" "xyz"};
  // a word across the window edge, non-ASCII only after it; a window whose last run stays open
  texts.push_back(std::string(65533, ' ') + "abcd\xC3\xA9" " e");
  texts.push_back(std::string(65530, ' ') + "x\xC3\xA9" + std::string(70000, 'y') + "\xC3\xA9 z");
  for (size_t len : {10, 63, 64, 65, 127, 128, 1000, 70000, 140000}) texts.push_back(random_text(rng, len));
  // Mostly ASCII with a non-ASCII word now and then (curly quotes in English text): the ASCII
  // words between them are hashed in stretches.
  for (size_t len : {3000, 200000}) {
    std::string t;
    while (t.size() < len) {
      t += rng() % 50 == 0 ? "don\xE2\x80\x99t" : std::string(1 + rng() % 9, static_cast<char>('a' + rng() % 26));
      t += rng() % 7 == 0 ? ", " : " ";
    }
    texts.push_back(std::move(t));
  }
  for (int i = 0; i < 300; ++i) texts.push_back(random_text(rng, rng() % 3000));
  for (neardup::Isa isa : neardup::test::available_isas()) {
    neardup::force_isa(isa);
    for (const std::string& t : texts)
      for (size_t cut : {t.size(), t.size() / 2}) {  // a view that ends mid-buffer, too
        const std::string_view v(t.data(), cut);
        std::vector<uint64_t> fast, exact;
        neardup::hash_words(v, 99, fast);
        neardup::hash_words_exact(v, 99, exact);
        ASSERT_EQ(fast, exact) << neardup::isa_name(isa) << " length " << cut;
        fast.clear();
        exact.clear();
        neardup::hash_chars(v, 7, fast);
        neardup::hash_chars_exact(v, 7, exact);
        ASSERT_EQ(fast, exact) << "chars " << neardup::isa_name(isa) << " length " << cut;
      }
  }
  neardup::reset_isa();
}

namespace {

// JSON string contents for the word-text kernels: words, spaces, UTF-8, and escapes in runs of
// backslashes of every length, placed anywhere (across the kernels' 64-byte blocks too).
std::string random_json_contents(std::mt19937_64& rng, size_t len) {
  static const char* const kEscapes[] = {"\\n", "\\t", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\r", "\\\\\\\\", "\\\\\\n"};
  std::string s;
  while (s.size() < len) {
    switch (rng() % 6) {
      case 0: s += kEscapes[rng() % 10]; break;
      case 1: s += "caf\xC3\xA9"; break;
      case 2: s += ' '; break;
      default: s += static_cast<char>('a' + rng() % 26);
    }
  }
  return s;
}

// The decoded string of valid contents without \u, the plain way.
std::string decode_json_contents(const std::string& raw) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      out += raw[i];
      continue;
    }
    const char c = raw[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
  }
  return out;
}

// The kernel of `isa` on in[from, from + avail) (in is readable 64 bytes past that, as a padded
// line is): its status, its word text in out (avail + 64 bytes of room), the bytes it blanked
// added to `blanked`, and the length it reports.
struct KernelRun {
  int status = 0;
  std::string out;
  size_t length = 0;
};
KernelRun run_word_text(neardup::Isa isa, const std::string& in, size_t from, size_t avail, uint64_t& blanked) {
  KernelRun k;
  k.out.assign(avail + 64, '?');
  k.status = neardup::internal::kernels(isa).json_word_text(reinterpret_cast<const uint8_t*>(in.data() + from), avail,
                                                            reinterpret_cast<uint8_t*>(k.out.data()), &blanked, &k.length);
  return k;
}

// Whether s[at] follows an odd run of backslashes: it is escaped (inside an escape).
bool escaped_at(const std::string& s, size_t at) {
  size_t run = 0;
  while (run < at && s[at - 1 - run] == '\\') ++run;
  return run % 2 == 1;
}

// The kernel on `raw` as a string's contents in a line: its closing quote, then more of the line
// (with what would be defects inside a string), then padding.
// With `closed` false the line ends at the quote (a string whose last backslash escapes it is
// never closed).
int word_text(neardup::Isa isa, const std::string& raw, std::string& out, uint64_t& blanked, bool closed = true) {
  const std::string rest = closed ? "\", \"x\": \"\\u00e9 \\q \x01\"}" : "\"";
  const std::string in = raw + rest + std::string(64, 'x');  // readable past the end, as in a padded line
  blanked = 0;
  KernelRun k = run_word_text(isa, in, 0, raw.size() + rest.size(), blanked);
  if (k.status == neardup::internal::kJsonWordTextOk) {
    EXPECT_EQ(k.length, raw.size()) << raw;
  }
  out = k.out.substr(0, raw.size());
  return k.status;
}

}  // namespace

// Valid contents come out with the words of their decoded string and its length, ending at the
// first quote no backslash escapes; a \u escape asks for decoding; control characters, unknown
// escapes and a string without its closing quote are invalid; every instruction set agrees.
TEST(TextKernels, JsonWordTextHasTheDecodedWords) {
  using namespace neardup::internal;
  std::mt19937_64 rng(13);
  for (int round = 0; round < 3000; ++round) {
    const std::string raw = random_json_contents(rng, rng() % 400);
    const std::string decoded = decode_json_contents(raw);
    for (neardup::Isa isa : neardup::test::available_isas()) {
      std::string out;
      uint64_t blanked = 0;
      ASSERT_EQ(word_text(isa, raw, out, blanked), kJsonWordTextOk) << raw;
      ASSERT_EQ(raw.size() - blanked / 2, decoded.size()) << raw;
      ASSERT_EQ(split_words(out), split_words(decoded)) << raw;
      for (size_t i = 0; i < raw.size(); ++i) ASSERT_TRUE(out[i] == raw[i] || out[i] == ' ') << raw;
    }
    // One defect at a random place, which the kernels must see wherever it falls.
    const size_t at = raw.empty() ? 0 : rng() % raw.size();
    // Not in the middle of an escape (where it would change the escape's meaning instead).
    if (escaped_at(raw, at)) continue;
    const std::pair<std::string, int> defects[] = {{"\\u00e9", kJsonWordTextDecode}, {"\\x", kJsonWordTextInvalid},
                                                   {std::string(1, '\x01'), kJsonWordTextInvalid}, {"\\", kJsonWordTextOpen}};
    for (const auto& [defect, want] : defects) {
      const bool at_end = defect == "\\";
      const std::string bad = at_end ? raw + defect : raw.substr(0, at) + defect + raw.substr(at);
      for (neardup::Isa isa : neardup::test::available_isas()) {
        std::string out;
        uint64_t blanked = 0;
        ASSERT_EQ(word_text(isa, bad, out, blanked, !at_end), want) << neardup::isa_name(isa) << " " << bad;
      }
    }
  }
  // The string ends at the first quote no backslash escapes, wherever it falls.
  for (size_t before = 0; before <= 130; before += 13)
    for (const char* tail : {"\\\"x\"", "\\\\\"", "x\\\\\\\"y\""}) {
      const std::string in = std::string(before, 'a') + tail + ", \"id\": 1}" + std::string(64, ' ');
      const size_t avail = in.size() - 64;
      size_t want = std::string::npos;  // the plain way: skip each escaped byte
      for (size_t i = 0; i < avail; ++i) {
        if (in[i] == '\\') ++i;
        else if (in[i] == '"') { want = i; break; }
      }
      for (neardup::Isa isa : neardup::test::available_isas()) {
        uint64_t blanked = 0;
        const KernelRun k = run_word_text(isa, in, 0, avail, blanked);
        ASSERT_EQ(k.status, kJsonWordTextOk) << in;
        ASSERT_EQ(k.length, want) << neardup::isa_name(isa) << " " << in;
      }
    }
  // Backslash runs across a block edge: the run's parity carries into the next block.
  for (size_t before = 58; before <= 66; ++before)
    for (size_t slashes = 1; slashes <= 5; ++slashes) {
      const std::string raw = std::string(before, 'a') + std::string(slashes, '\\') + (slashes % 2 ? "n" : "") + "bc";
      for (neardup::Isa isa : neardup::test::available_isas()) {
        std::string out;
        uint64_t blanked = 0;
        ASSERT_EQ(word_text(isa, raw, out, blanked), kJsonWordTextOk) << raw;
        ASSERT_EQ(raw.size() - blanked / 2, decode_json_contents(raw).size()) << raw;
        ASSERT_EQ(split_words(out), split_words(decode_json_contents(raw))) << raw;
      }
    }
}

// A \u escape: the kernels stop at the 64-byte block that holds its 'u' (or at the backslash
// before that block, when the escape starts in the block before), with the word text of
// everything before it in out; a string without its closing quote before in[avail] is open,
// with the word text of all of it. Pieces cut after a byte that is not a backslash, each open
// but the last, make the word text of the whole.
TEST(TextKernels, JsonWordTextStopsWhereDecodingMustStartAndReadsInPieces) {
  using namespace neardup::internal;
  std::mt19937_64 rng(17);
  for (int round = 0; round < 2000; ++round) {
    const std::string raw = random_json_contents(rng, 1 + rng() % 600);
    size_t at = round % 2 ? rng() % raw.size() : std::min(raw.size() - 1, size_t{63} + 64 * (rng() % 4));  // half at a block's last byte
    if (escaped_at(raw, at)) continue;  // not inside an escape
    const std::string with_u = raw.substr(0, at) + "\\u00e9" + raw.substr(at);
    const std::string in = with_u + "\"}" + std::string(64, 'x');
    const size_t avail = with_u.size() + 2;
    for (neardup::Isa isa : neardup::test::available_isas()) {
      uint64_t blanked = 0;
      const KernelRun k = run_word_text(isa, in, 0, avail, blanked);
      const size_t length = k.length;
      const std::string& out = k.out;
      ASSERT_EQ(k.status, kJsonWordTextDecode) << with_u;
      // The block of the 'u', or the backslash just before it when that one starts an escape
      // (an odd run of backslashes ends there).
      const size_t block = (at + 1) / 64 * 64;
      size_t slashes = 0;
      while (slashes < block && with_u[block - 1 - slashes] == '\\') ++slashes;
      ASSERT_EQ(length, block - slashes % 2) << neardup::isa_name(isa) << " " << with_u;
      const std::string before = with_u.substr(0, length);
      ASSERT_EQ(length - blanked / 2, decode_json_contents(before).size()) << neardup::isa_name(isa) << " " << with_u;
      ASSERT_EQ(split_words(out.substr(0, length)), split_words(decode_json_contents(before))) << neardup::isa_name(isa) << " " << with_u;
    }
  }
  for (int round = 0; round < 2000; ++round) {
    const std::string raw = random_json_contents(rng, rng() % 700);
    const std::string in = raw + "\", \"id\": 1}" + std::string(64, 'x');
    // Cuts after bytes that are not backslashes.
    std::vector<size_t> cuts = {0};
    for (size_t c = 1 + rng() % 100; c < raw.size(); c += 1 + rng() % 150)
      if (raw[c - 1] != '\\') cuts.push_back(c);
    for (neardup::Isa isa : neardup::test::available_isas()) {
      std::string whole;
      uint64_t blanked = 0;
      for (size_t i = 0; i < cuts.size(); ++i) {
        const size_t from = cuts[i], avail = (i + 1 < cuts.size() ? cuts[i + 1] : in.size() - 64) - from;
        const KernelRun k = run_word_text(isa, in, from, avail, blanked);
        if (i + 1 < cuts.size()) {
          ASSERT_EQ(k.status, kJsonWordTextOpen) << neardup::isa_name(isa) << " " << raw;
          whole += k.out.substr(0, avail);
        } else {
          ASSERT_EQ(k.status, kJsonWordTextOk) << neardup::isa_name(isa) << " " << raw;
          ASSERT_EQ(from + k.length, raw.size());
          whole += k.out.substr(0, k.length);
        }
      }
      ASSERT_EQ(raw.size() - blanked / 2, decode_json_contents(raw).size()) << raw;
      ASSERT_EQ(split_words(whole), split_words(decode_json_contents(raw))) << neardup::isa_name(isa) << " " << raw;
    }
  }
}

// Characters: the code points of the words joined by one space, each hashed as documented.
TEST(Text, CharactersAreTheWordsJoinedBySpaces) {
  const auto h = [](uint32_t cp) {
    uint64_t x = 5 ^ (cp * 0x9E3779B97F4A7C15ULL);  // fmix64(seed ^ (c * golden)), seed 5
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
  };
  std::vector<uint64_t> got;
  neardup::hash_chars("  Ab,\tc\xC3\x89 -- 9!", 5, got);
  // words "ab", "cé", "9"
  const std::vector<uint64_t> want = {h('a'), h('b'), h(' '), h('c'), h(0xE9), h(' '), h('9')};
  EXPECT_EQ(got, want);
  got.clear();
  neardup::hash_chars(" ... ", 5, got);
  EXPECT_TRUE(got.empty());
}

// --normalize nfkc: NFC and NFD, full-width and ASCII, accented and plain give the same words.
TEST(Text, NormalizeFoldsFormsCaseAndAccents) {
  std::string a, b;
  neardup::normalize_text("Caf\xC3\xA9 \xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3 \xEF\xAC\x81n", a);  // NFC é, full-width ABC, ligature fi
  neardup::normalize_text("CAFE\xCC\x81 abc fin", b);                                            // NFD é
  EXPECT_EQ(a, b);
  EXPECT_EQ(split_words(a), (V{"cafe", "abc", "fin"}));
}

// ICU's dictionary word break splits Chinese and Thai into words; the default takes each run
// without spaces for one word.
TEST(Text, IcuWordBreakSegmentsScriptsWithoutSpaces) {
  const std::string zh = "\xE6\x88\x91\xE4\xBB\xAC\xE4\xBB\x8A\xE5\xA4\xA9\xE5\x8E\xBB\xE5\x85\xAC\xE5\x9B\xAD";  // 我们今天去公园
  std::vector<uint64_t> simple, icu;
  neardup::hash_words(zh, 1, simple);
  neardup::IcuWordBreaker breaker;
  breaker.hash_words(zh, 1, icu);
  EXPECT_EQ(simple.size(), 1u);
  EXPECT_GE(icu.size(), 3u);
  // On text with spaces it agrees with the default definition.
  std::vector<uint64_t> s2, i2;
  neardup::hash_words("The quick brown fox, 42 times", 7, s2);
  breaker.hash_words("The quick brown fox, 42 times", 7, i2);
  EXPECT_EQ(s2, i2);
  EXPECT_GT(neardup::unspaced_script_bytes(zh), 0u);
  EXPECT_EQ(neardup::unspaced_script_bytes("plain ascii and caf\xC3\xA9"), 0u);
}
