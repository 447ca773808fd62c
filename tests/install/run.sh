#!/usr/bin/env bash
# Installs the built project into a temporary prefix and builds and runs a consumer project
# that finds it with find_package(neardup).
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
cmake -S "$src/consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$tmp/build" > /dev/null
"$tmp/build/consumer"

# The example deduplicates texts in memory; the CLI must find the same pairs in the same texts
# written to a JSONL file.
cmake -S "$src/../../examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$tmp/examples" > /dev/null
python3 - "$tmp" <<'PY'
import json, random, sys
random.seed(7)
words = "the quick brown fox jumps over lazy dog near river bank while ships sail on open sea".split()
texts = []
for i in range(300):
    base = [random.choice(words) for _ in range(40)]
    texts.append(" ".join(base))
    for _ in range(random.randint(0, 3)):  # near copies: a few words changed
        copy = list(base)
        for _ in range(random.randint(1, 6)):
            copy[random.randrange(len(copy))] = random.choice(words)
        texts.append(" ".join(copy))
with open(sys.argv[1] + "/texts.txt", "w") as f, open(sys.argv[1] + "/texts.jsonl", "w") as j:
    for n, t in enumerate(texts, 1):
        f.write(t + "\n")
        j.write(json.dumps({"id": "t%d" % n, "text": t}) + "\n")
PY
spec='words:3 oph:128 verify:0.5'
"$tmp/examples/dedup_strings" "$spec" < "$tmp/texts.txt" > "$tmp/example.tsv"
"$build/neardup" pairs "$tmp/texts.jsonl" --spec "$spec" -q -o "$tmp/cli.tsv"
[ -s "$tmp/cli.tsv" ] || { echo "the CLI found no pairs: the test data is wrong"; exit 1; }
cmp "$tmp/example.tsv" "$tmp/cli.tsv"
echo "example: $(wc -l < "$tmp/cli.tsv") pairs, the same as the CLI's"

# The Python package, when built, is installed under the prefix where Debian's python3 looks
# (lib/python3/dist-packages with prefix /usr) and imports from there, finding the same pairs.
if [ -d "$build/python/neardup" ]; then
  site="$tmp/prefix/lib/python3/dist-packages"
  [ -f "$site/neardup/__init__.py" ] || { echo "the Python package was not installed under $site"; exit 1; }
  PYTHONPATH="$site" /usr/bin/python3 - "$tmp" <<'PY'
import json, sys, neardup
texts = [json.loads(line) for line in open(sys.argv[1] + "/texts.jsonl")]
got = neardup.pairs([(t["id"], t["text"]) for t in texts], spec_text="words:3 oph:128 verify:0.5").pairs_tsv()
want = open(sys.argv[1] + "/cli.tsv").read()
assert got == want, "the installed Python package finds other pairs than the CLI"
assert neardup.__file__.startswith(sys.argv[1]), neardup.__file__
print("python: the installed package finds the same %d pairs" % want.count("\n"))
PY
fi
