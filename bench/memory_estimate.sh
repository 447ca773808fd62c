#!/usr/bin/env bash
# The expected memory printed before a run (--estimate-memory) against the peak resident memory
# the run then takes (/usr/bin/time), per input and sketch method, with the document count
# estimated against the true one. The estimate compared is the one before verification plus
# its cost per candidate document times the run's candidate documents (--stats: read again or
# kept from the first pass).
#
#   bench/memory_estimate.sh NEARDUP INPUT... [-- EXTRA OPTIONS]
set -euo pipefail
bin=$1
shift
inputs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do inputs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
extra=("$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
to_mb() {  # "2.9 GB" -> MB
  awk -v v="$1" -v u="$2" 'BEGIN { f = u == "KB" ? 1e-3 : u == "MB" ? 1 : u == "GB" ? 1e3 : u == "TB" ? 1e6 : 1e-6; printf "%.6f", v * f }'
}
printf '%-28s %-8s %10s %10s %9s %12s %12s %8s\n' input method docs est.docs verified est.MB peak.MB ratio
for f in "${inputs[@]}"; do
  case $f in
    *.zst) docs=$(zstd -dc "$f" | wc -l) ;;
    *.gz) docs=$(gzip -dc "$f" | wc -l) ;;
    *) docs=$(wc -l <"$f") ;;
  esac
  for m in oph minhash simhash bottomk; do
    line=$("$bin" dedup --estimate-memory --method "$m" "${extra[@]}" "$f" 2>&1)
    est_docs=$(sed -E 's/^neardup: (about )?([0-9.]+[KMG]?) documents?[ ,].*/\2/' <<<"$line")
    read -r v u < <(sed -E 's/.*expected memory ([0-9.]+) ([KMGT]?B).*/\1 \2/' <<<"$line")
    est=$(to_mb "$v" "$u")
    per_verified=0
    if grep -q 'verification then adds' <<<"$line"; then
      read -r pv pu < <(sed -E 's/.*verification then adds ([0-9.]+) ([KMGT]?B) per document.*/\1 \2/' <<<"$line")
      per_verified=$(to_mb "$pv" "$pu")
    fi
    run=$( { /usr/bin/time -f 'peak %M' "$bin" dedup --stats --method "$m" "${extra[@]}" -o "$out/kept" "$f" >/dev/null; } 2>&1)
    peak_kb=$(sed -nE 's/^peak ([0-9]+)$/\1/p' <<<"$run")
    # Documents in candidate pairs: read again, or their sets kept from the first pass.
    verified=$(sed -nE 's/.*verify [0-9.]+ s \(([0-9]+) documents re-read, [0-9]+ of them copies of a text read before, ([0-9]+) sets from the first pass.*/\1 \2/p' <<<"$run" |
      awk '{ print $1 + $2 }')
    # The estimate of the run: before verification, plus the documents it verified.
    est=$(awk -v e="$est" -v n="${verified:-0}" -v p="$per_verified" 'BEGIN { printf "%.1f", e + n * p }')
    peak=$(awk -v k="$peak_kb" 'BEGIN { printf "%.1f", k / 1024 * 1.048576 }')
    printf '%-28s %-8s %10s %10s %9s %12s %12s %8s\n' "$(basename "$f")" "$m" "$docs" "$est_docs" "${verified:-0}" "$est" "$peak" \
      "$(awk -v e="$est" -v p="$peak" 'BEGIN { printf "%.2f", e / p }')"
  done
done
