#!/usr/bin/env bash
# Stands in for `neardup` in the bench scripts that take a NEARDUP program, so that they measure
# neardup-mpi: `pairs` and `dedup` with --method oph or minhash run on RANKS ranks (default 2) of
# one thread; everything else (the exact join, eval) runs in one process.
#   bench/recall_vs_exact.sh CORPUS 5 0.8 bench/mpi_as_neardup.sh
set -euo pipefail
BUILD=${BUILD:-build}
cmd=${1:-}
if [[ ($cmd == pairs || $cmd == dedup) && " $* " =~ " --method "(oph|minhash)" " ]]; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=none  # as bench/mpi_setup.sh: containers refuse it
  exec mpirun --allow-run-as-root -np "${RANKS:-2}" "$BUILD/neardup-mpi" "$@" -j 1
fi
exec "$BUILD/neardup" "$@"
