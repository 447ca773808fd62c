#!/usr/bin/env bash
# Two builds of neardup against each other on one input, in ABBA order (A B B A, REPS times):
# the order of runs biases timings on a shared machine (the second of two identical binaries can
# be 14% faster), and alternating pairs cancel it. Prints the medians of wall and CPU time and
# the peak memory of each run, and stops if an output differs from the first run's.
#   bench/abba.sh OLD_BINARY NEW_BINARY REPS INPUT [dedup|pairs]
# Example: bench/abba.sh /tmp/neardup-before build/neardup 3 crowded.jsonl.zst
# With REFERENCE=1 each run follows a run of `zstd -1 -T1` of the input, as the floors of
# bench/floors.sh do, and each build's median is also given as a ratio of zstd's: on a virtual
# machine whose host takes freed memory back, a run right after another one finds its memory
# still backed and took 9-13% less time than one after zstd (the dense licence mix, 2026-12-04).
set -euo pipefail
A=$1 B=$2 REPS=$3 IN=$4 CMD=${5:-dedup}
OUT=$(mktemp -d -p "$(dirname "$IN")")  # beside the input: the same disk
trap 'rm -rf "$OUT"' EXIT
cat "$IN" > /dev/null
declare -A W C P
REFERENCE=${REFERENCE:-0}
Z=""
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
first=""
for _ in $(seq "$REPS"); do
  for x in A B B A; do
    bin=${!x}
    rm -f "$OUT/out"; sync
    if [ "$REFERENCE" = 1 ]; then
      /usr/bin/time -f "%e" -o "$OUT/time" zstd -1 -T1 -q -c "$IN" -o /dev/null
      Z+="$(cat "$OUT/time") "
    fi
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" "$bin" "$CMD" "$IN" -o "$OUT/out" -q
    read -r wall user sys rss < "$OUT/time"
    W[$x]+="$wall "; C[$x]+="$(python3 -c "print($user + $sys)") "; P[$x]+="$((rss / 1024)) "
    sum=$(md5sum < "$OUT/out" | cut -c1-16)
    [ -z "$first" ] && first=$sum
    [ "$sum" = "$first" ] || { echo "$x ($bin): the output differs from the first run's" >&2; exit 1; }
  done
done
for x in A B; do
  ratio=""
  [ "$REFERENCE" = 1 ] && ratio=", $(python3 -c "print(f'{$(echo ${W[$x]} | median) / $(echo $Z | median):.2f}')")x zstd's"
  echo "$x ${!x}: wall $(echo ${W[$x]} | median) s (${W[$x]})$ratio, CPU $(echo ${C[$x]} | median) s, peak ${P[$x]}MiB"
done
[ "$REFERENCE" = 1 ] && echo "zstd -1 -T1: wall $(echo $Z | median) s ($Z)"
exit 0
