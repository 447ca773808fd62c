#!/usr/bin/env bash
# The cost of distributing: neardup-mpi on 2 ranks of 1 thread against `neardup dedup -j 2` on
# the same 2 cores, alternating, REPS times each; wall time and CPU time (user + sys) net of an
# MPI program that does nothing (2 ranks on a 3-record file, measured in the same loop), and
# peak memory (the largest rank's, against the one process's). Outputs are compared every run.
#   bench/mpi_cost.sh bench/data/crowded.jsonl [REPS]
source "$(dirname "$0")/mpi_setup.sh"
head -3 "$IN" > "$OUT/tiny.jsonl"
MPIRUN=(mpirun --allow-run-as-root -np 2 "$MPI" dedup)
one_w="" one_c="" one_m="" mpi_w="" mpi_c="" mpi_m="" empty_w="" empty_c=""
for rep in $(seq "$REPS"); do
  read -r w c m < <( { /usr/bin/time -f "%e %U %S %M" "$ND" dedup "$IN" -o "$OUT/one.jsonl" -j 2 -q; } 2>&1 | tail -1 |
                     awk '{print $1, $2 + $3, $4 / 1024}')
  one_w+="$w " one_c+="$c " one_m+="$m "
  log=$( { /usr/bin/time -f "%e %U %S" "${MPIRUN[@]}" "$IN" -o "$OUT/mpi.jsonl" -j 1 --stats; } 2>&1)
  read -r w c < <(echo "$log" | tail -1 | awk '{print $1, $2 + $3}')
  mpi_w+="$w " mpi_c+="$c " mpi_m+="$(echo "$log" | grep -o 'peak memory [0-9]*' | awk '{print $3}') "
  cmp -s "$OUT/one.jsonl" "$OUT/mpi.jsonl" || { echo "outputs differ" >&2; exit 1; }
  read -r w c < <( { /usr/bin/time -f "%e %U %S" "${MPIRUN[@]}" "$OUT/tiny.jsonl" -o "$OUT/tiny.out" -j 1 -q; } 2>&1 | tail -1 |
                   awk '{print $1, $2 + $3}')
  empty_w+="$w " empty_c+="$c "
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ow=$(echo $one_w | median) oc=$(echo $one_c | median) om=$(echo $one_m | median)
mw=$(echo $mpi_w | median) mc=$(echo $mpi_c | median) mm=$(echo $mpi_m | median)
ew=$(echo $empty_w | median) ec=$(echo $empty_c | median)
echo "one process -j 2: wall $ow s, CPU $oc s, peak $om MiB"
echo "2 ranks x 1 thread: wall $mw s, CPU $mc s, peak $mm MiB per rank (largest); empty MPI program: wall $ew s, CPU $ec s"
awk -v ow="$ow" -v oc="$oc" -v om="$om" -v mw="$mw" -v mc="$mc" -v mm="$mm" -v ew="$ew" -v ec="$ec" 'BEGIN {
  printf "net of the empty program: wall %.2fx, CPU %.2fx; peak per rank %.2fx\n", (mw - ew) / ow, (mc - ec) / oc, mm / om }'
