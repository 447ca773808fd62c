# The persistent index: create, add, query (= pairs on the same data), add --dedup, remove,
# stats, dedup --against with provenance and --add-kept, and refusals.
cp "$DATA/small.jsonl" small.jsonl
$NEARDUP index create idx.ndx --shingle 3 --threshold 0.5; echo "exit=$?"
$NEARDUP index add idx.ndx small.jsonl; echo "exit=$?"
$NEARDUP index query idx.ndx small.jsonl --skip-same-id --quiet | sort
echo "--- pairs on the same data"
$NEARDUP pairs small.jsonl --shingle 3 --threshold 0.5 --quiet
echo "--- a higher query threshold"
$NEARDUP index query idx.ndx small.jsonl --threshold 0.9 --quiet
echo "--- add --dedup: what duplicated what"
$NEARDUP index create walk.ndx --shingle 3 --threshold 0.5 --quiet
$NEARDUP index add walk.ndx small.jsonl --dedup -o dup.tsv; echo "exit=$?"
cat dup.tsv
echo "--- dedup --against"
$NEARDUP index create v1.ndx --shingle 3 --threshold 0.5 --quiet
head -2 small.jsonl > v1.jsonl
$NEARDUP index add v1.ndx v1.jsonl --quiet
$NEARDUP dedup small.jsonl --against v1.ndx --removed removed.tsv -o kept.jsonl --add-kept --on-duplicate-id skip; echo "exit=$?"
cut -c1-20 kept.jsonl
cat removed.tsv
$NEARDUP index stats v1.ndx | sed -n 2,3p
echo "--- remove"
$NEARDUP index remove idx.ndx orig copy missing; echo "exit=$?"
$NEARDUP index query idx.ndx small.jsonl --skip-same-id --quiet | sort
$NEARDUP index stats idx.ndx --json | sed -E 's/"file_bytes": [0-9]+, "bytes_per_document": [0-9.]+, //'
echo "--- refusals"
$NEARDUP index create idx.ndx; echo "exit=$?"
$NEARDUP index add idx.ndx small.jsonl; echo "exit=$?"
$NEARDUP index create bk.ndx --method bottomk; echo "exit=$?"
$NEARDUP dedup small.jsonl --against v1.ndx --num-perm 64 -o x.jsonl; echo "exit=$?"
$NEARDUP dedup small.jsonl --add-kept -o x.jsonl; echo "exit=$?"
head -c 5000 idx.ndx > cut.ndx
$NEARDUP index query cut.ndx small.jsonl; echo "exit=$?"
printf 'hello' > junk.ndx
$NEARDUP index stats junk.ndx; echo "exit=$?"
$NEARDUP index query nothere.ndx small.jsonl; echo "exit=$?"
ls -A | grep -c neardup-tmp
