# The expected memory of a run: printed before runs over 256 MB of input (not with --quiet), and
# by --estimate-memory for any run, which then stops without output.
echo "--- --estimate-memory: counts are exact when the inputs are read whole; no output is written"
$NEARDUP dedup --estimate-memory "$DATA/small.jsonl" -j 2
echo "exit=$?"
$NEARDUP pairs --estimate-memory --method simhash "$DATA/small.jsonl" -j 2 -o pairs.tsv
$NEARDUP pairs --estimate-memory --method bottomk --verify estimate "$DATA/small.jsonl" -j 2
ls
echo "--- a run over 256 MB states its expected memory first (a sparse file: one record, then NUL bytes)"
printf '{"id": "a", "text": "one record"}\n' > big.jsonl
truncate -s 300M big.jsonl
$NEARDUP dedup big.jsonl -o kept.jsonl --max-record-bytes 1M -j 2 2>&1 | sed -E 's/^(neardup: about) [0-9.]+[KMG]? documents?.*(expected memory) .*/\1 N documents ... \2 .../'
echo "exit=${PIPESTATUS[0]}"
echo "--- not with --quiet"
$NEARDUP dedup big.jsonl -o kept.jsonl --max-record-bytes 1M -j 2 --quiet 2>&1 | grep -c "expected memory"
echo "--- dedup needs -o, unless it only estimates; --against has no estimate"
$NEARDUP dedup "$DATA/small.jsonl"
echo "exit=$?"
$NEARDUP dedup --estimate-memory --against none.ndx "$DATA/small.jsonl" -o x
echo "exit=$?"
echo "--- --memory-limit: a run expected to take more keeps its document table and band keys on disk, with the same outputs"
$NEARDUP pairs "$DATA/small.jsonl" -j 2 -o full.tsv -q
$NEARDUP pairs "$DATA/small.jsonl" -j 2 -o spilled.tsv --memory-limit 1K 2>&1 | sed "s|disk in ${TMPDIR:-/tmp} (|disk in TMPDIR (|"
echo "exit=${PIPESTATUS[0]}"
cmp full.tsv spilled.tsv && echo "the same pairs"
$NEARDUP dedup "$DATA/small.jsonl" -j 2 -o full.jsonl --removed full.tsv -q
$NEARDUP dedup "$DATA/small.jsonl" -j 2 -o spilled.jsonl --removed spilled.tsv --memory-limit 1K -q
cmp full.jsonl spilled.jsonl && cmp full.tsv spilled.tsv && echo "the same kept and removed documents"
echo "--- other methods keep only their document table on disk"
$NEARDUP dedup "$DATA/small.jsonl" --method simhash -j 2 -o full.jsonl --removed full.tsv -q
$NEARDUP dedup "$DATA/small.jsonl" --method simhash -j 2 -o spilled.jsonl --removed spilled.tsv --memory-limit 1K 2>&1 |
  sed "s|disk in ${TMPDIR:-/tmp} (|disk in TMPDIR (|" | grep -o "the document table goes to disk in TMPDIR ([^)]*)"
cmp full.jsonl spilled.jsonl && cmp full.tsv spilled.tsv && echo "the same kept and removed documents"
echo "--- no room to spill where TMPDIR points: exit 4, naming it"
TMPDIR=$PWD/missing $NEARDUP dedup "$DATA/small.jsonl" -o k.jsonl --memory-limit 1K -q 2>&1 | sed "s|$PWD|WORK|"
echo "exit=${PIPESTATUS[0]}"
ls k.jsonl 2>&1 | sed 's/.*/no output written: &/' | grep -c "No such file"
echo "--- a bad size"
$NEARDUP dedup "$DATA/small.jsonl" -o k.jsonl --memory-limit lots
echo "exit=$?"
