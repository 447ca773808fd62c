#!/usr/bin/env bash
# neardup-mpi against neardup on the same inputs: every output byte-identical for 1 to 4 ranks
# (oversubscribed), on a planted corpus of crowded clusters (shards, and the same as one plain
# file that the ranks cut at line boundaries), on the sample corpus and on SpamAssassin when the
# corpora are there; a bad record on one rank, and a rank killed mid-run.
#   tests/mpi/run.sh NEARDUP NEARDUP_MPI SAMPLE_DIR CORPORA_DIR
set -euo pipefail
ND=$1 MPI=$2 SAMPLE=$3 CORPORA=${4:-}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers forbid the ptrace copy
# The ranks share one machine: Open MPI's ob1 over shared memory, without probing the network
# transports first (UCX, OFI, PSM), which cost 0.2 s of each mpirun's 0.37 (about 70 runs here).
export OMPI_MCA_pml=ob1
mpi() { local np=$1; shift; mpirun --allow-run-as-root --oversubscribe -np "$np" "$MPI" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# A planted corpus: 300 base texts, 70% of 2,000 records near-copies of one of them (a few words
# changed), spread over 5 shards; the clusters chain and overlap, as boilerplate does.
python3 - <<'EOF'
import json, random
random.seed(7)
words = ["w%d" % i for i in range(3000)]
base = [" ".join(random.choice(words) for _ in range(random.randint(30, 200))) for _ in range(300)]
for f in range(5):
    with open("shard%d.jsonl" % f, "w") as out:
        for i in range(400):
            w = (random.choice(base) if random.random() < 0.7 else " ".join(random.choice(words) for _ in range(80))).split()
            for _ in range(random.randint(0, 4)):
                w[random.randrange(len(w))] = random.choice(words)
            rec = {"id": "s%d-%d" % (f, i), "text": " ".join(w)}
            if random.random() < 0.8:  # --keep-by: ties, and records without the field
                rec["score"] = random.choice([1, 2, 3, 4.5, 10])
            out.write(json.dumps(rec) + "\n")
EOF
cat shard*.jsonl > all.jsonl

# dedup: -o, --removed, --clusters; then pairs; each against one process.
same_dedup() {  # name, np, inputs and options...
  local name=$1 np=$2; shift 2
  "$ND" dedup "$@" -o one.out --removed one.rem --clusters one.cl -q
  mpi "$np" dedup "$@" -o mpi.out --removed mpi.rem --clusters mpi.cl -q
  for f in out rem cl; do cmp -s "one.$f" "mpi.$f" || fail "$name, $np ranks: dedup --${f} differs"; done
  [ -s one.rem ] || fail "$name: nothing removed, the comparison shows little"
  rm -f one.* mpi.*
}
same_pairs() {
  local name=$1 np=$2; shift 2
  "$ND" pairs "$@" -o one.tsv -q
  mpi "$np" pairs "$@" -o mpi.tsv -q
  cmp -s one.tsv mpi.tsv || fail "$name, $np ranks: pairs differ"
  [ -s one.tsv ] || fail "$name: no pairs"
  rm -f one.tsv mpi.tsv
}
# Every rank count on the main cases; each variant on a rank count that cuts the files unevenly.
for np in 1 2 3 4; do
  same_dedup planted-shards "$np" shard*.jsonl
  same_dedup planted-one-file "$np" all.jsonl --keep longest --method minhash
  same_pairs planted "$np" shard*.jsonl
done
# Groups of 4 KB and batches of 64 documents: many of each, on plain files (sets read where they
# are verified, groups of a batch taken apart) and with compressed ones (sets sent, a batch a group).
for f in shard1 shard3; do zstd -q "$f.jsonl" -o "$f.small.jsonl.zst"; done
export NEARDUP_MPI_TEST_SMALL_GROUPS=1
same_dedup planted-small-groups 2 all.jsonl --keep-by score
same_dedup planted-small-groups-mixed 3 shard0.jsonl shard1.small.jsonl.zst shard2.jsonl shard3.small.jsonl.zst shard4.jsonl
same_pairs planted-small-groups 3 all.jsonl
unset NEARDUP_MPI_TEST_SMALL_GROUPS
rm -f shard*.small.jsonl.zst
# Under --memory-limit each rank keeps its band keys on disk: the same outputs, and rank 0 says
# so (a TMPDIR that cannot hold them is tested in one process: mpirun makes its own there).
same_dedup planted-memory-limit 2 all.jsonl --memory-limit 1K
same_pairs planted-memory-limit 3 shard*.jsonl --memory-limit 1K
mpi 2 dedup all.jsonl -o mpi.out --memory-limit 1K 2> mpi.err
grep -q "^neardup: about [0-9]* documents a rank, expected memory .* over the memory limit of 0.0 MB: the ranks keep their band keys on disk in " mpi.err ||
  fail "memory limit: no word of the spill: $(head -2 mpi.err)"
mpi 2 dedup all.jsonl -o mpi.out 2> mpi.err
! grep -q "band keys on disk" mpi.err || fail "no memory limit given: the band keys spilled all the same"
rm -f mpi.out mpi.err
same_dedup planted-estimate 2 all.jsonl --verify estimate -t 0.7
same_dedup planted-leader 3 shard*.jsonl --cluster leader
same_dedup planted-keep-by 3 all.jsonl --keep-by score:asc
same_dedup planted-keep-by-leader 4 shard*.jsonl --keep-by score --cluster leader
same_pairs planted-one-file 3 all.jsonl -k 3

# Inputs that can be read only once: standard input (mpirun gives it to rank 0 alone) and a FIFO
# are read by rank 0 and sent to every rank, with one process's outputs; a process substitution,
# whose descriptor mpirun does not pass on, is refused before any work with the usage exit code.
"$ND" dedup all.jsonl -o one.out --removed one.rem -q
"$ND" pairs all.jsonl -o one.tsv -q
for np in 2 3; do
  mpi "$np" dedup - -o mpi.out --removed mpi.rem -q < all.jsonl
  cmp -s one.out mpi.out && cmp -s one.rem mpi.rem || fail "stdin, $np ranks: dedup differs ($(wc -l < mpi.out) kept)"
  cat all.jsonl | mpi "$np" pairs - -o mpi.tsv -q
  cmp -s one.tsv mpi.tsv || fail "stdin through a pipe, $np ranks: pairs differ"
done
mkfifo planted.fifo
(cat all.jsonl > planted.fifo &)
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 3 "$MPI" pairs --format jsonl planted.fifo -o mpi.tsv -q ||
  fail "FIFO, 3 ranks: failed or hung"
cmp -s one.tsv mpi.tsv || fail "FIFO, 3 ranks: pairs differ"
set +e
mpi 2 dedup <(cat all.jsonl) -o subst.out -q 2> mpi.err; got=$?
set -e
[ "$got" = 2 ] && grep -q "process substitution" mpi.err && [ ! -e subst.out ] ||
  fail "process substitution: exit $got, $(head -1 mpi.err)"
rm -f one.* mpi.* planted.fifo

# --output-dir: one file per shard, compressed as named, written by the rank that read it.
for f in shard*.jsonl; do zstd -q "$f" -o "$f.zst"; done
"$ND" dedup shard*.jsonl.zst --output-dir one.d -q
for np in 2 3; do
  mpi "$np" dedup shard*.jsonl.zst --output-dir mpi.d -q
  diff -r one.d mpi.d > /dev/null || fail "--output-dir, $np ranks: outputs differ"
  rm -rf mpi.d
done
rm -rf one.d
# -o over compressed shards that several ranks read, alone and among plain ones: each rank other
# than 0 copies the kept records of its compressed shards and sends them to rank 0.
for np in 2 3 4; do
  same_dedup planted-zst-shards "$np" shard*.jsonl.zst
done
same_dedup planted-mixed-shards 3 shard0.jsonl shard1.jsonl.zst shard2.jsonl shard3.jsonl.zst shard4.jsonl.zst --keep-by score

# The sample corpus, compressed (read whole by one rank) and plain (cut between ranks).
zstd -dcq "$SAMPLE/mmds-articles-2500.jsonl.zst" > sample.jsonl
for np in 2 4; do
  same_dedup sample-zst "$np" "$SAMPLE/mmds-articles-2500.jsonl.zst" -k 3 -t 0.5
  same_dedup sample-plain "$np" sample.jsonl -k 3 -t 0.5
done
if [ -n "$CORPORA" ] && [ -f "$CORPORA/spamassassin.jsonl.zst" ]; then
  zstd -dcq "$CORPORA/spamassassin.jsonl.zst" > spam.jsonl
  for np in 1 2 3 4; do same_dedup spamassassin "$np" spam.jsonl; done
  same_pairs spamassassin 3 spam.jsonl -k 3 -t 0.5
else
  echo "SpamAssassin not found under '$CORPORA': those runs skipped"
fi

# A bad record in the fourth shard: the message and exit code of one process, and no output.
cp shard3.jsonl bad.jsonl
sed -i '57s/.*/{"id": "x", "text": oops}/' bad.jsonl
set +e
"$ND" dedup shard0.jsonl shard1.jsonl shard2.jsonl bad.jsonl -o one.out -q 2> one.err; want=$?
for np in 1 4; do
  mpi "$np" dedup shard0.jsonl shard1.jsonl shard2.jsonl bad.jsonl -o mpi.out --removed mpi.rem -q 2> mpi.err; got=$?
  [ "$got" = "$want" ] || fail "bad record, $np ranks: exit $got, one process $want"
  grep -qxF "$(cat one.err)" mpi.err || fail "bad record, $np ranks: message differs: $(head -1 mpi.err)"
  [ ! -e mpi.out ] && [ ! -e mpi.rem ] || fail "bad record, $np ranks: an output was left"
done
[ "$want" = 3 ] || fail "bad record: one process exited $want, not 3"

# A directory of text files (one record each; verification reads runs of them again).
python3 - <<'PY'
import os, random
random.seed(11)
os.makedirs("txt", exist_ok=True)
words = ["t%d" % i for i in range(3000)]
for f in range(40):
    base = [random.choice(words) for _ in range(60 + random.randrange(200))]
    for c in range(random.randrange(4)):
        w = [x if random.random() > 0.03 * c else "edit" for x in base]
        open("txt/f%02d-%d.txt" % (f, c), "w").write(" ".join(w) + "\n")
PY
same_dedup text-files 3 txt -t 0.7

# Records of 4 MiB or more (shingled and sketched in pieces on every thread), and bad records
# counted and skipped: the outputs of one process.
python3 - <<'PY'
import random
random.seed(7)
words = ["w%d" % i for i in range(50000)]
base = [random.choice(words) for _ in range(700000)]
near = list(base)
for i in range(0, len(near), 50):
    near[i] = "changed"
with open("long.jsonl", "w") as f:
    for name, w in (("long-a", base), ("long-b", near)):
        f.write('{"id": "%s", "text": "%s"}\n' % (name, " ".join(w)))
PY
[ "$(head -1 long.jsonl | wc -c)" -gt $((4 << 20)) ] || fail "the long records were not made"
sed '5s/.*/{"id": "y", "text": [1, 2}/' shard0.jsonl > bad0.jsonl
set -- bad0.jsonl long.jsonl bad.jsonl --on-error skip  # a bad record in the first and the last file
"$ND" dedup "$@" -o one.out --removed one.rem --clusters one.cl --stats 2> one.err
mpi 2 dedup "$@" -o mpi.out --removed mpi.rem --clusters mpi.cl --stats 2> mpi.err
for f in out rem cl; do cmp -s "one.$f" "mpi.$f" || fail "long and skipped records, 2 ranks: dedup --${f} differs"; done
grep -q "long-b" one.rem || fail "long records: the near copy was not removed"
grep -q "2 skipped" one.err && grep -q "2 skipped" mpi.err || fail "skipped records: $(grep -h skipped one.err mpi.err | head -2)"
# The warnings of one process: each skipped record named, in input order, then the count by kind.
diff <(grep "warning" one.err) <(grep "warning" mpi.err) > /dev/null ||
  fail "skipped records: the warnings differ from one process's: $(grep -h warning mpi.err | head -3)"
grep -A1 "warning: skipped .*bad0.jsonl:5" mpi.err | grep -q "warning: skipped .*bad.jsonl:57" ||
  fail "skipped records: not both named in input order: $(grep -h warning mpi.err | head -3)"
set --
rm -f one.* mpi.*

# --keep-by over a field that is a number in one record and a string in another, on two ranks.
sed '30s/"score": [0-9.]*/"score": "high"/' shard2.jsonl > mixed.jsonl
grep -q '"high"' mixed.jsonl || fail "the mixed keep-by record was not made"
"$ND" dedup shard0.jsonl shard1.jsonl mixed.jsonl -o one.out --keep-by score -q 2> one.err; want=$?
mpi 3 dedup shard0.jsonl shard1.jsonl mixed.jsonl -o mpi.out --keep-by score -q 2> mpi.err; got=$?
[ "$got" = "$want" ] && [ "$want" = 3 ] || fail "mixed keep-by: exit $got, one process $want"
grep -qxF "$(cat one.err)" mpi.err || fail "mixed keep-by: message differs: $(head -1 mpi.err)"

# Reused ids, and one JSONL file given twice by two names: the same exit code and message.
ln -sf shard1.jsonl again.jsonl
for inputs in "shard0.jsonl shard1.jsonl shard0.jsonl" "shard0.jsonl shard1.jsonl again.jsonl"; do
  "$ND" dedup $inputs -o one.out -q 2> one.err; want=$?
  mpi 2 dedup $inputs -o mpi.out -q 2> mpi.err; got=$?
  [ "$got" = "$want" ] && [ "$want" = 3 ] || fail "ids reused ($inputs): exit $got, one process $want"
  grep -qxF "$(cat one.err)" mpi.err || fail "ids reused ($inputs): message differs: $(head -1 mpi.err) against $(head -1 one.err)"
done
rm -f again.jsonl

# What runs in one process only is refused, with the usage exit code.
mpi 2 dedup shard0.jsonl -o mpi.out --report r.html -q 2> mpi.err; got=$?
[ "$got" = 2 ] && grep -q "runs in one process" mpi.err && [ ! -e mpi.out ] || fail "--report: exit $got, $(head -1 mpi.err)"
mpi 2 pairs shard0.jsonl --method simhash -q 2> mpi.err; got=$?
[ "$got" = 2 ] && grep -q "runs --method oph and minhash" mpi.err || fail "--method simhash: exit $got, $(head -1 mpi.err)"
for one in "dedup shard0.jsonl -o mpi.out --against x.ndx" "dedup shard0.jsonl -o mpi.out --add-kept" "pairs shard0.jsonl --top 5"; do
  mpi 2 $one 2> mpi.err; got=$?
  [ "$got" = 2 ] && grep -qx "neardup-mpi: error: --[a-z-]* runs in one process (neardup .*)" mpi.err ||
    fail "$one: exit $got, $(head -1 mpi.err)"
done
mpi 2 dedup shard0.jsonl -o mpi.out --bogus 2> mpi.err; got=$?
[ "$got" = 2 ] && grep -qx "neardup-mpi: error: the following argument was not expected: --bogus; see 'neardup-mpi dedup --help'" mpi.err ||
  fail "--bogus: exit $got, $(head -1 mpi.err)"
# The summary of pairs names what it wrote, as one process's does (no clusters, nothing removed).
mpi 2 pairs shard0.jsonl -o mpi.tsv 2> mpi.err
"$ND" pairs shard0.jsonl -o one.tsv 2> one.err
grep -q "candidates, [0-9]* pairs reported, .* on 2 ranks" mpi.err && ! grep -q "clusters" mpi.err ||
  fail "pairs summary: $(cat mpi.err)"

# A rank killed after sketching: the job fails, no output is renamed into place, and nothing is
# left of the ranks' pieces in TMPDIR (their files have no name until they are done).
mkdir -p killed.tmp
for np in 2 4; do
  TMPDIR=$PWD/killed.tmp NEARDUP_MPI_TEST_KILL_RANK=1 mpi "$np" dedup shard*.jsonl --output-dir killed.d --removed killed.rem -q > /dev/null 2>&1; got=$?
  [ "$got" != 0 ] || fail "killed rank, $np ranks: the job succeeded"
  [ ! -e killed.rem ] || fail "killed rank, $np ranks: --removed was left"
  [ -z "$(ls killed.d 2>/dev/null)" ] || fail "killed rank, $np ranks: outputs left: $(ls killed.d)"
  [ -z "$(ls -A killed.tmp)" ] || fail "killed rank, $np ranks: left in TMPDIR: $(ls -A killed.tmp)"
done
set -e
echo "neardup-mpi: all outputs identical to one process"
