# What bench/mpi.sh and bench/mpi_cost.sh share, sourced with the input and the repetitions as
# $1 and $2: the two programs (BUILD, default build/), a scratch folder removed on exit, and
# OpenMPI's shared-memory transport without its single-copy mechanism (which containers refuse).
set -euo pipefail
IN=$1 REPS=${2:-3}
BUILD=${BUILD:-build}
ND=$BUILD/neardup MPI=$BUILD/neardup-mpi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none
