#!/usr/bin/env bash
# Predicted vs observed LSH candidate pairs: `neardup tune --sample` predicts, for each
# (b, r) it considers, the distinct pairs that share a band, from the pair similarities of a
# sample; the observed count comes from an index built with those bands and rows in estimate
# mode at threshold 0 (every document sharing a band is a match), queried with the corpus itself.
#
#   bench/tune_predict.sh [CORPUS] [SAMPLE_DOCS...]   (defaults: the shared SpamAssassin corpus; 1000 3000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${NEARDUP:-$here/../build/neardup}
corpus=${1:-$here/../../shared/corpora/spamassassin.jsonl.zst}
shift || true
samples=${*:-1000 3000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '| sample docs | b x r | predicted candidates | observed | predicted / observed |\n| --- | --- | --- | --- | --- |\n'
for n in $samples; do
  "$bin" tune --threshold 0.6 --margin 0.2 --num-perm 128 --sample "$corpus" --sample-docs "$n" --shingle 3 --json > "$work/t.json"
  python3 - "$work/t.json" > "$work/rows" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["sample"]["considered"]:
    print(c["bands"], c["rows"], c["predicted_candidates"])
PY
  while read -r b r pred; do
    "$bin" index create "$work/i.ndx" --force --shingle 3 --bands "$b" --rows "$r" --verify estimate --threshold 0.0001 -q
    "$bin" index add "$work/i.ndx" "$corpus" -q
    obs=$("$bin" index query "$work/i.ndx" "$corpus" --skip-same-id -q | wc -l)
    obs=$((obs / 2))
    python3 -c "print(f'| $n | ${b}x${r} | {float($pred):,.0f} | {int($obs):,} | {float($pred)/max(1,int($obs)):.2f} |')"
  done < "$work/rows"
done
