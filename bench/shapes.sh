#!/usr/bin/env bash
# `neardup dedup -j 2` on corpora of one shape against one reference, `zstd -1 -T1` of the first
# corpus (a single-threaded pass that reads every byte): medians of REPS alternating runs, the
# input in the page cache, every output compared with the first run's.
#   bench/shapes.sh REPS FREE.jsonl [CROWDED.jsonl ...]
# The short-document shapes: bench/short_docs.py bench/data/short-free.jsonl --duplicated 0 and
# bench/short_docs.py bench/data/short-crowded.jsonl (1 million documents of 30-60 words).
set -euo pipefail
REPS=$1; shift
ND=${NEARDUP:-build/neardup}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall() { /usr/bin/time -f "%e %M" -o "$OUT/time" "$@"; cat "$OUT/time"; }
echo "$($ND --version | head -1); $(nproc) cores; $(date -u +%F)"
for f in "$@"; do cat "$f" > /dev/null; done
declare -A T M
for rep in $(seq "$REPS"); do
  read -r w _ < <(wall zstd -1 -T1 -q -c "$1" -o /dev/null); T[zstd]+="$w "
  for f in "$@"; do
    rm -f "$OUT/kept.jsonl"
    read -r w m < <(wall "$ND" dedup "$f" -o "$OUT/kept.jsonl" -j 2 -q); T[$f]+="$w "; M[$f]+="$m "
    if [ "$rep" = 1 ]; then cp "$OUT/kept.jsonl" "$OUT/$(basename "$f").first"; else cmp "$OUT/kept.jsonl" "$OUT/$(basename "$f").first"; fi
  done
done
z=$(echo ${T[zstd]} | median)
echo "zstd -1 -T1 $1: $z s (runs: ${T[zstd]})"
for f in "$@"; do
  d=$(echo ${T[$f]} | median) m=$(echo ${M[$f]} | median)
  kept=$(wc -l < "$OUT/$(basename "$f").first") all=$(wc -l < "$f")
  echo "dedup -j 2 $f: $d s (runs: ${T[$f]}), peak $((m / 1024)) MiB, $((all - kept)) of $all removed; $(python3 -c "print(f'{$d / $z:.2f}')")x the reference"
done
