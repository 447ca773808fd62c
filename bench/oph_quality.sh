#!/usr/bin/env bash
# OPH (one permutation, densified) against k-permutation MinHash on real corpora with exact
# truth: for each method, seed and threshold, recall and precision of `pairs` with exact
# verification and with the signature estimate alone, scored by `neardup eval`, and the mean
# absolute error of the estimates on the correct pairs.
#   bench/oph_quality.sh [NEARDUP] [SEEDS...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/neardup}
shift || true
seeds=${*:-1 2 3}
shared=$here/../shared/corpora
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpora=("$shared/spamassassin.jsonl.zst:$shared/spamassassin.truth.tsv.zst:3"
         "$shared/spamassassin.jsonl.zst:$shared/spamassassin.truth.k5.tsv.zst:5"
         "$here/data/sample/mmds-articles-2500.jsonl.zst:$here/data/sample/mmds-articles-2500.truth.tsv.zst:3")
echo "| corpus | K | method | t | verify | recall (median of seeds) | precision | mean abs error |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for c in "${corpora[@]}"; do
  IFS=: read -r corpus truth k <<< "$c"
  [ -f "$corpus" ] || continue
  for method in minhash oph; do
    for t in 0.5 0.8; do
      for verify in exact estimate; do
        rec=(); prec=(); err=()
        for seed in $seeds; do
          "$bin" pairs "$corpus" --shingle "$k" --method "$method" --threshold "$t" --verify "$verify" --seed "$seed" -q -o "$work/p.tsv"
          read -r r p e < <("$bin" eval --truth "$truth" "$work/p.tsv" --threshold "$t" --json |
            python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["overall"]["recall"], d["overall"]["precision"], d["mean_abs_error"])')
          rec+=("$r"); prec+=("$p"); err+=("$e")
        done
        med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.4f", a[int((NR+1)/2)]}'; }
        echo "| $(basename "$truth" .tsv.zst) | $k | $method | $t | $verify | $(med "${rec[@]}") | $(med "${prec[@]}") | $(med "${err[@]}") |"
      done
    done
  done
done
