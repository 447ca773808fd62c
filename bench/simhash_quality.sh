#!/usr/bin/env bash
# Recall and precision of SimHash at several Hamming distances against the exact truth of a
# corpus (every pair with Jaccard >= 0.5 over word 3-shingles), next to MinHash + LSH and
# bottom-k at 0.8, scored by their estimate (no exact verification; one SimHash run verifies). A truth pair is "near"
# at J >= 0.8; a reported pair is correct if its true J >= 0.8 (precision), and recall counts the
# near pairs reported, overall and at J >= 0.9.
#   bench/simhash_quality.sh [CORPUS.jsonl.zst] [TRUTH.tsv.zst] [NEARDUP]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
corpus=${1:-$here/../shared/corpora/spamassassin.jsonl.zst}
truth=${2:-${corpus%.jsonl.zst}.truth.tsv.zst}
bin=${3:-$here/build/neardup}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zstdcat "$truth" > "$work/truth.tsv"
run() {  # name, args...
  local name=$1
  shift
  "$bin" pairs "$corpus" --shingle 3 --quiet "$@" -o "$work/$name.tsv"
  echo "$name $work/$name.tsv"
}
{
  for k in 0 2 3 4 6 8 10 12 16; do run "simhash-k$k" --method simhash --hamming "$k"; done
  run "simhash-tf-k0" --method simhash --hamming 0 --weights tf
  run "simhash-tf-k6" --method simhash --hamming 6 --weights tf
  run "simhash-logtf-k6" --method simhash --hamming 6 --weights logtf
  run "simhash-k12-exact-0.8" --method simhash --hamming 12 --threshold 0.8
  run "minhash-t0.8" --method minhash --threshold 0.8 --verify estimate
  run "bottomk-t0.8" --method bottomk --threshold 0.8 --verify estimate
} > "$work/runs.txt"
python3 - "$work/truth.tsv" "$work/runs.txt" <<'PY'
import sys
truth = {}
for line in open(sys.argv[1]):
    a, b, j = line.split('\t')
    truth[(min(a, b), max(a, b))] = float(j)
near = {p for p, j in truth.items() if j >= 0.8}
near9 = {p for p, j in truth.items() if j >= 0.9}
print(f"truth: {len(truth)} pairs with J >= 0.5, {len(near)} with J >= 0.8, {len(near9)} with J >= 0.9")
print(f"| method | pairs reported | precision (true J >= 0.8) | recall J >= 0.8 | recall J >= 0.9 | reported with J < 0.5 |")
print("| --- | --- | --- | --- | --- | --- |")
for line in open(sys.argv[2]):
    name, path = line.split()
    got = set()
    for l in open(path):
        a, b = l.split('\t')[:2]
        got.add((min(a, b), max(a, b)))
    good = sum(1 for p in got if truth.get(p, 0) >= 0.8)
    low = sum(1 for p in got if p not in truth)
    prec = good / len(got) if got else 1.0
    print(f"| {name} | {len(got)} | {prec:.3f} | {len(got & near) / len(near):.3f} | {len(got & near9) / len(near9):.3f} | {low} |")
PY
