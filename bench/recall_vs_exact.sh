#!/usr/bin/env bash
# Recall of the LSH methods against the exact join, per similarity bin, and the share of the
# removable documents dedup removes (removable: documents with a pair of J >= T, minus one per
# connected component of the exact graph).
#
#   bench/recall_vs_exact.sh CORPUS [K] [T] [NEARDUP]
set -euo pipefail
corpus=$1 k=${2:-5} t=${3:-0.8} nd=${4:-build/neardup}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/time -f "exact: %e s, %M KB" "$nd" pairs "$corpus" -k "$k" -t "$t" --method exact -o "$tmp/exact.tsv" -q
removable=$(python3 - "$tmp/exact.tsv" <<'PY'
import sys
parent = {}
def find(x):
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x
for line in open(sys.argv[1]):
    a, b, _ = line.rstrip('\n').split('\t')
    ra, rb = find(a), find(b)
    if ra != rb: parent[max(ra, rb)] = min(ra, rb)
roots = {find(x) for x in list(parent)}
print(len(parent) - len(roots))
PY
)
echo "exact pairs: $(wc -l < "$tmp/exact.tsv"), removable documents: $removable"
for m in oph minhash; do
  /usr/bin/time -f "$m pairs: %e s, %M KB" "$nd" pairs "$corpus" -k "$k" -t "$t" --method "$m" -o "$tmp/$m.tsv" -q
  "$nd" eval --truth "$tmp/exact.tsv" "$tmp/$m.tsv" --threshold "$t" --truth-floor "$t" | grep -E "^recall|^0\.[5-9]-|^1\.0-"
  removed=$("$nd" dedup "$corpus" -k "$k" -t "$t" --method "$m" -o /dev/null --removed "$tmp/$m.removed" -q && wc -l < "$tmp/$m.removed")
  echo "$m dedup removes $removed of $removable removable"
done
