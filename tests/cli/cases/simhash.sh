# --method simhash: pairs within the Hamming distance scored 1 - d/64 with the distance, exact
# verification when a Jaccard threshold is given, dedup, the plan command, and misuse.
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --hamming 12 --shingle 3 -o pairs.tsv; echo "exit=$?"
cat pairs.tsv
echo "--- exact verification at a Jaccard threshold"
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --hamming 12 --shingle 3 --threshold 0.5 --quiet
echo "--- estimate with a threshold: only d <= 2 of those"
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --hamming 12 --shingle 3 --verify estimate --threshold 0.97 --quiet
echo "--- weights"
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --hamming 12 --shingle 3 --weights logtf -o /dev/null
$NEARDUP pairs "$DATA/small.jsonl" --spec "words:3 simhash:12 weights:tf" -o /dev/null
echo "--- dedup"
$NEARDUP dedup "$DATA/small.jsonl" --method simhash --hamming 12 --shingle 3 -o kept.jsonl --removed removed.tsv --quiet; echo "exit=$?"
cut -c1-20 kept.jsonl
cat removed.tsv
echo "--- plan"
$NEARDUP simhash-plan --hamming 3 --docs 1000000
$NEARDUP simhash-plan --hamming 3 --docs 100000000 --batch --tables | tail -3
$NEARDUP simhash-plan --hamming 6 --docs 10000000 --json
echo "--- misuse"
$NEARDUP pairs "$DATA/small.jsonl" --hamming 3; echo "exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --hamming 17; echo "exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --num-perm 64; echo "exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --bands 4 --rows 4; echo "exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --method simhash --top 3; echo "exit=$?"
$NEARDUP simhash-plan --hamming 6 --docs 1000000 --memory 1000; echo "exit=$?"
