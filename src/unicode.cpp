// Optional Unicode processing before shingling: NFKC normalisation with case and accent folding,
// and dictionary word segmentation for scripts written without spaces (both ICU's).
#include <unicode/brkiter.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utext.h>

#include <memory>

#include "internal/hash.h"
#include "internal/utf8.h"
#include "neardup/error.h"
#include "neardup/text.h"

namespace neardup {

void normalize_text(std::string_view text, std::string& out) {
  UErrorCode status = U_ZERO_ERROR;
  // NFD first, so that accents are separate combining marks that can be dropped; then NFKC with
  // case folding maps compatibility forms (full-width letters, ligatures, superscripts) and
  // folds case, recomposing what is left (Unicode Standard Annex #15).
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  const icu::Normalizer2* nfkc_cf = icu::Normalizer2::getNFKCCasefoldInstance(status);
  if (U_FAILURE(status)) throw Error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
  const icu::UnicodeString in = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  icu::UnicodeString decomposed = nfd->normalize(in, status);
  icu::UnicodeString stripped;
  stripped.getBuffer(decomposed.length());
  stripped.releaseBuffer(0);
  for (int32_t i = 0; i < decomposed.length();) {
    const UChar32 c = decomposed.char32At(i);
    if (u_charType(c) != U_NON_SPACING_MARK) stripped.append(c);
    i += U16_LENGTH(c);
  }
  const icu::UnicodeString result = nfkc_cf->normalize(stripped, status);
  if (U_FAILURE(status)) throw Error(std::string("ICU normalisation failed: ") + u_errorName(status));
  out.clear();
  result.toUTF8String(out);
}

struct IcuWordBreaker::Impl {
  std::unique_ptr<icu::BreakIterator> it;
  std::string word;
};

IcuWordBreaker::IcuWordBreaker() : impl_(std::make_unique<Impl>()) {
  UErrorCode status = U_ZERO_ERROR;
  impl_->it.reset(icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), status));
  if (U_FAILURE(status) || !impl_->it) throw Error(std::string("ICU word break iterator unavailable: ") + u_errorName(status));
}
IcuWordBreaker::~IcuWordBreaker() = default;

namespace {

// IcuWordBreaker::hash_words into either vector type.
template <class Out>
void icu_hash_words(icu::BreakIterator& it, std::string& word, std::string_view text, uint64_t seed, Out& out) {
  UErrorCode status = U_ZERO_ERROR;
  UText* ut = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status);
  if (U_FAILURE(status)) throw Error(std::string("ICU cannot read the text: ") + u_errorName(status));
  it.setText(ut, status);
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = bytes + text.size();
  int32_t start = it.first();
  for (int32_t stop = it.next(); stop != icu::BreakIterator::DONE; start = stop, stop = it.next()) {
    if (it.getRuleStatus() == UBRK_WORD_NONE) continue;  // spaces, punctuation
    // The segment's word characters, lowercased as the default tokenizer does ("don't" and
    // "3.14" are one segment: their apostrophe and point are dropped).
    word.clear();
    for (const unsigned char* p = bytes + start; p < bytes + stop;) {
      uint32_t cp = *p;
      int len = 1;
      if (cp >= 0x80 && (len = internal::decode_utf8(p, end, cp)) == 0) {
        len = 1;
        cp = 0xFFFD;
      }
      p += len;
      if (!is_word_codepoint(cp)) continue;
      char buf[4];
      word.append(buf, static_cast<size_t>(internal::put_utf8(buf, simple_lower(cp)) - buf));
    }
    if (!word.empty()) out.push_back(internal::word_hash(word.data(), word.size(), seed));
  }
  utext_close(ut);
}

}  // namespace

void IcuWordBreaker::hash_words(std::string_view text, uint64_t seed, std::vector<uint64_t>& out) { icu_hash_words(*impl_->it, impl_->word, text, seed, out); }
void IcuWordBreaker::hash_words(std::string_view text, uint64_t seed, HashVector& out) { icu_hash_words(*impl_->it, impl_->word, text, seed, out); }

uint64_t unspaced_script_bytes(std::string_view text) {
  uint64_t n = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    uint32_t cp = 0;
    const int len = internal::decode_utf8(p, end, cp);
    if (len == 0) {
      ++p;
      continue;
    }
    switch (ublock_getCode(static_cast<UChar32>(cp))) {
      case UBLOCK_CJK_UNIFIED_IDEOGRAPHS:
      case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_A:
      case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_B:
      case UBLOCK_CJK_COMPATIBILITY_IDEOGRAPHS:
      case UBLOCK_HIRAGANA:
      case UBLOCK_KATAKANA:
      case UBLOCK_THAI:
      case UBLOCK_LAO:
      case UBLOCK_KHMER:
      case UBLOCK_MYANMAR:
      case UBLOCK_TIBETAN:
        n += static_cast<uint64_t>(len);
        break;
      default:
        break;
    }
    p += len;
  }
  return n;
}

}  // namespace neardup
