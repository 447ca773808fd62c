#!/usr/bin/env bash
# End-to-end benchmark of `neardup dedup` on a real corpus at 1 and 2 threads: median wall time
# of REPS runs, MB/s of text, peak memory (max RSS), and the per-stage times of the median run.
#
#   bench/e2e.sh CORPUS.jsonl [REPS]     (build first: make build)
set -euo pipefail
corpus=$1
reps=${2:-3}
bin=${NEARDUP:-build/neardup}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mb=$(python3 -c "import sys,json; print(sum(len(json.loads(l)['text'].encode()) for l in open(sys.argv[1]))/1e6)" "$corpus")
echo "corpus: $corpus ($(wc -l < "$corpus") documents, $mb MB of text); $($bin --version | head -1)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F)"
for j in 1 2; do
  rows=()
  for r in $(seq 1 "$reps"); do
    rm -f "$out/kept.jsonl" "$out/removed.tsv"  # a new file each time, as a user's run writes
    /usr/bin/time -f "%e %M" -o "$out/time" "$bin" dedup "$corpus" -o "$out/kept.jsonl" --removed "$out/removed.tsv" \
      -j "$j" --stats 2> "$out/log.$r"
    read -r wall rss < "$out/time"
    rows+=("$wall $rss $r")
  done
  median=$(printf '%s\n' "${rows[@]}" | sort -n | sed -n "$(( (reps + 1) / 2 ))p")
  read -r wall rss r <<< "$median"
  echo "-j $j: median wall ${wall} s of $reps, $(python3 -c "print(f'{$mb/$wall:.1f}')") MB/s, peak RSS $((rss / 1024)) MiB"
  grep -v '^neardup: stages' "$out/log.$r" | tail -1
  grep '^neardup: stages' "$out/log.$r"
done
