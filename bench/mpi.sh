#!/usr/bin/env bash
# neardup-mpi on one machine: wall time, bytes shuffled per document and peak memory per rank for
# N = 1, 2 and 4 ranks (4 oversubscribed on 2 cores), against `neardup dedup` in one process on
# the same file; every output compared byte for byte. Medians of REPS interleaved runs.
#   bench/mpi.sh bench/data/kernel-1000mb.jsonl [REPS]
source "$(dirname "$0")/mpi_setup.sh"
declare -A times
for rep in $(seq "$REPS"); do
  t=$( { /usr/bin/time -f "%e" "$ND" dedup "$IN" -o "$OUT/one.jsonl" -q; } 2>&1 | tail -1)
  times[one]+="$t "
  for np in 1 2 4; do
    log=$( { /usr/bin/time -f "%e" mpirun --allow-run-as-root --oversubscribe -np "$np" "$MPI" dedup "$IN" -o "$OUT/mpi.jsonl" --stats; } 2>&1)
    times[$np]+="$(echo "$log" | tail -1) "
    cmp -s "$OUT/one.jsonl" "$OUT/mpi.jsonl" || { echo "outputs differ with $np ranks" >&2; exit 1; }
    [ "$rep" = 1 ] && echo "$np ranks: $(echo "$log" | grep 'neardup: stages' | sed 's/^neardup: stages: //')"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "one process: $(echo ${times[one]} | median) s (runs: ${times[one]})"
for np in 1 2 4; do echo "$np ranks: $(echo ${times[$np]} | median) s (runs: ${times[$np]}); outputs identical"; done
