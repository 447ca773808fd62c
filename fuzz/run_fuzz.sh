#!/usr/bin/env bash
# run_fuzz.sh TARGET SEEDS WORK SECONDS: fuzzes TARGET for SECONDS from the seed corpus SEEDS.
# New inputs are written to WORK/corpus (the tree is never written); a finding leaves its input
# in WORK/artifacts and fails. Prints the executions done, the figure BENCHMARKS.md quotes.
set -euo pipefail
target=$1 seeds=$2 work=$3 seconds=$4
mkdir -p "$work/corpus" "$work/artifacts"
log="$work/log.txt"
if ! "$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -max_len=65536 -print_final_stats=1 \
     -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" > "$log" 2>&1; then
  tail -n 60 "$log"
  echo "run_fuzz: $(basename "$target") found a problem; the input is in $work/artifacts/" >&2
  exit 1
fi
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$log" || true
echo "run_fuzz: $(basename "$target"): $(ls "$work/corpus" | wc -l) inputs in the working corpus"
