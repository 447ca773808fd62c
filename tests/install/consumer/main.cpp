// Uses the installed library: two near-identical texts must be found similar, a third not.
#include <neardup/neardup.h>

#include <cstdio>

int main() {
  neardup::Shingler sh({neardup::ShingleKind::Words, 3, neardup::kDefaultSeed});
  neardup::MinHasher mh(128, neardup::kDefaultSeed);
  const auto a = sh.shingle_set("the quick brown fox jumps over the lazy dog near the river bank");
  const auto b = sh.shingle_set("The quick brown fox jumps over the lazy dog near the river bank!");
  const auto c = sh.shingle_set("an entirely different sentence about ships sailing on the sea");
  const double ab = neardup::estimate_jaccard(mh.sketch(a), mh.sketch(b));
  const double ac = neardup::jaccard(a, c);
  std::printf("%s ab=%.3f ac=%.3f\n", neardup::version(), ab, ac);
  return ab == 1.0 && ac == 0.0 ? 0 : 1;
}
