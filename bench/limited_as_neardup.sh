#!/usr/bin/env bash
# Stands in for `neardup` in the bench scripts that take a NEARDUP program, so that they measure
# runs under a memory limit: `pairs` and `dedup` with --method oph or minhash get
# --memory-limit LIMIT (default 1K: every state that can spill does); everything else (the exact
# join, eval) runs as it is.
#   bench/recall_vs_exact.sh CORPUS 5 0.8 bench/limited_as_neardup.sh
set -euo pipefail
BUILD=${BUILD:-build}
cmd=${1:-}
if [[ ($cmd == pairs || $cmd == dedup) && " $* " =~ " --method "(oph|minhash)" " ]]; then
  exec "$BUILD/neardup" "$@" --memory-limit "${LIMIT:-1K}"
fi
exec "$BUILD/neardup" "$@"
