#!/usr/bin/env bash
# The aarch64 build (cmake/aarch64-linux-gnu.cmake, scalar kernels) against the x86-64 build
# (SIMD kernels chosen at run time): run under qemu-user, every method's pairs and dedup outputs
# on the sample corpus must be byte-identical, as must an index file and its answers.
#   tests/portable/run.sh X86_NEARDUP AARCH64_NEARDUP
set -euo pipefail
X86=$(realpath "$1") ARM=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
SAMPLE=$here/../../data/sample/mmds-articles-2500.jsonl.zst
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "portable: $*" >&2; exit 1; }
file "$ARM" | grep -q "ARM aarch64" || fail "$ARM is not an aarch64 program"
qemu-aarch64 "$ARM" --version | grep -q "kernel scalar" || fail "the aarch64 build does not run under qemu-aarch64"

# The sample, and a crowded variant of it: every tenth article again with a few words changed, so
# that buckets are large and verification joins them.
zstd -dc "$SAMPLE" > sample.jsonl
python3 - <<'PY'
import json, random
random.seed(7)
docs = [json.loads(l) for l in open("sample.jsonl")]
with open("crowded.jsonl", "w") as f:
    for d in docs:
        f.write(json.dumps(d) + "\n")
    for i, d in enumerate(docs[::10]):
        for c in range(random.randint(1, 80)):
            words = d["text"].split()
            for _ in range(random.randint(0, max(1, len(words) // 8))):
                words[random.randrange(len(words))] = random.choice(["alpha", "beta", "gamma"])
            f.write(json.dumps({"id": f"{d['id']}-copy{c}", "text": " ".join(words)}) + "\n")
PY

same() {  # name, then the command's arguments (outputs under out.*)
  local name=$1; shift
  "$X86" "$@" -q > out.stdout
  for f in out.*; do mv "$f" "x86.$f"; done
  qemu-aarch64 "$ARM" "$@" -q > out.stdout
  for f in out.*; do mv "$f" "arm.$f"; done
  for f in x86.out.pairs x86.out.kept; do
    [ ! -e "$f" ] || [ -s "$f" ] || fail "$name: ${f#x86.out.} is empty (nothing compared)"
  done
  for f in x86.out.*; do
    cmp -s "$f" "arm.${f#x86.}" || fail "$name: ${f#x86.} differs between x86-64 and aarch64"
  done
  rm -f x86.out.* arm.out.*
  echo "portable: $name identical"
}

for input in sample.jsonl crowded.jsonl; do
  for method in "oph" "minhash" "bottomk" "simhash" "exact"; do
    same "$input pairs --method $method" pairs "$input" --method "$method" -t 0.5 -o out.pairs
    same "$input dedup --method $method" dedup "$input" --method "$method" -o out.kept --removed out.removed --clusters out.clusters
  done
  same "$input dedup --verify estimate" dedup "$input" --verify estimate -t 0.7 -o out.kept --removed out.removed
  same "$input dedup --chars 7 --cluster leader" dedup "$input" --chars 7 --cluster leader -o out.kept --removed out.removed
done
"$X86" index create x86.ndx -q && "$X86" index add x86.ndx crowded.jsonl -q
qemu-aarch64 "$ARM" index create arm.ndx -q && qemu-aarch64 "$ARM" index add arm.ndx crowded.jsonl -q
cmp -s x86.ndx arm.ndx || fail "the index files differ between x86-64 and aarch64"
"$X86" index query x86.ndx sample.jsonl -o x86.hits -q
qemu-aarch64 "$ARM" index query arm.ndx sample.jsonl -o arm.hits -q
cmp -s x86.hits arm.hits || fail "index query answers differ between x86-64 and aarch64"
qemu-aarch64 "$ARM" index query x86.ndx sample.jsonl -o cross.hits -q
cmp -s x86.hits cross.hits || fail "an index made on x86-64 answers differently on aarch64"
echo "portable: index files and answers identical, and an x86-64 index reads on aarch64"
