#include "neardup/text.h"

#include <gtest/gtest.h>

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

TEST(Text, CombiningMarksSeparateWords) {
  // U+0301 COMBINING ACUTE ACCENT is Mn: not a letter or number, so it separates.
  EXPECT_EQ(split_words("Cafe\xCC\x81s"), (V{"cafe", "s"}));
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
  EXPECT_FALSE(neardup::is_word_codepoint(0x0301));
  EXPECT_FALSE(neardup::is_word_codepoint(' '));
  EXPECT_EQ(neardup::simple_lower('Q'), static_cast<uint32_t>('q'));
  EXPECT_EQ(neardup::simple_lower(0x1E9E), 0x00DFu);
}
