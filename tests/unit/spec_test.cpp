#include "neardup/spec.h"

#include <gtest/gtest.h>

#include "neardup/error.h"

using namespace neardup;

TEST(Spec, ParsesAndPrintsBackIdentically) {
  for (const char* text : {"words:5 minhash:128 lsh:16x8 verify:0.8", "chars:7 minhash:64 lsh:8x8 estimate:0.75",
                           "words:3 minhash:256 lsh:32x8 verify:0.9 seed:12345"}) {
    EXPECT_EQ(PipelineSpec::parse(text).to_string(), text);
  }
}

TEST(Spec, ResolvesBandsFromThreshold) {
  const PipelineSpec s = PipelineSpec::parse("words:5 minhash:128 verify:0.8").resolved();
  EXPECT_EQ(s.lsh, (LshParams{21, 6}));
  EXPECT_EQ(s.to_string(), "words:5 minhash:128 lsh:21x6 verify:0.8");
  EXPECT_EQ(PipelineSpec::parse(s.to_string()).resolved().to_string(), s.to_string());
}

TEST(Spec, RejectsBadTokens) {
  EXPECT_THROW(PipelineSpec::parse("words"), UsageError);
  EXPECT_THROW(PipelineSpec::parse("words:x"), UsageError);
  EXPECT_THROW(PipelineSpec::parse("lsh:16"), UsageError);
  EXPECT_THROW(PipelineSpec::parse("bogus:1"), UsageError);
  EXPECT_THROW(PipelineSpec::parse("minhash:64 lsh:16x8").resolved(), UsageError);  // 128 > 64
  EXPECT_THROW(PipelineSpec::parse("verify:1.5").resolved(), UsageError);
  EXPECT_THROW(PipelineSpec::parse("words:0").resolved(), UsageError);
}

TEST(Spec, SimHash) {
  EXPECT_EQ(PipelineSpec::parse("words:3 simhash:6 weights:logtf verify:0.9").to_string(),
            "words:3 simhash:6 weights:logtf verify:0.9");
  // Without a verify token: every pair within the distance, by the estimate 1 - d/64.
  const PipelineSpec s = PipelineSpec::parse("words:3 simhash:3").resolved();
  EXPECT_EQ(s.verify, VerifyMode::Estimate);
  EXPECT_EQ(s.to_string(), "words:3 simhash:3 estimate:0.953125");
  EXPECT_THROW(PipelineSpec::parse("simhash:17").resolved(), UsageError);
  EXPECT_THROW(PipelineSpec::parse("simhash:3 weights:idf"), UsageError);
  EXPECT_THROW(PipelineSpec::parse("simhash:3 lsh:4x4").resolved(), UsageError);
}
