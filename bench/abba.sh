#!/usr/bin/env bash
# Two builds of neardup against each other on one input, in ABBA order (A B B A, REPS times):
# the order of runs biases timings on a shared machine (the second of two identical binaries can
# be 14% faster), and alternating pairs cancel it. Prints the medians of wall and CPU time and
# the peak memory of each run, and stops if an output differs from the first run's.
#   bench/abba.sh OLD_BINARY NEW_BINARY REPS INPUT [dedup|pairs]
# Example: bench/abba.sh /tmp/neardup-before build/neardup 3 crowded.jsonl.zst
set -euo pipefail
A=$1 B=$2 REPS=$3 IN=$4 CMD=${5:-dedup}
OUT=$(mktemp -d -p "$(dirname "$IN")")  # beside the input: the same disk
trap 'rm -rf "$OUT"' EXIT
cat "$IN" > /dev/null
declare -A W C P
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
first=""
for _ in $(seq "$REPS"); do
  for x in A B B A; do
    bin=${!x}
    rm -f "$OUT/out"; sync
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" "$bin" "$CMD" "$IN" -o "$OUT/out" -q
    read -r wall user sys rss < "$OUT/time"
    W[$x]+="$wall "; C[$x]+="$(python3 -c "print($user + $sys)") "; P[$x]+="$((rss / 1024)) "
    sum=$(md5sum < "$OUT/out" | cut -c1-16)
    [ -z "$first" ] && first=$sum
    [ "$sum" = "$first" ] || { echo "$x ($bin): the output differs from the first run's" >&2; exit 1; }
  done
done
for x in A B; do
  echo "$x ${!x}: wall $(echo ${W[$x]} | median) s (${W[$x]}), CPU $(echo ${C[$x]} | median) s, peak ${P[$x]}MiB"
done
