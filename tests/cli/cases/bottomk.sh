# --method bottomk: every pair above the threshold (exact join, exact scores), the top M pairs
# best first, dedup, and the option combinations that make no sense.
$NEARDUP pairs "$DATA/small.jsonl" --method bottomk --threshold 0.5 --shingle 3 -o pairs.tsv; echo "exit=$?"
cat pairs.tsv
echo "--- estimate, small sketch"
$NEARDUP pairs "$DATA/small.jsonl" --method bottomk --sketch-size 16 --threshold 0.3 --shingle 3 --verify estimate --quiet
echo "--- top 3, exact"
$NEARDUP pairs "$DATA/small.jsonl" --method bottomk --top 3 --shingle 3 --quiet
echo "--- top 100 (fewer pairs share a shingle)"
$NEARDUP pairs "$DATA/small.jsonl" --method bottomk --top 100 --shingle 3 --quiet | wc -l
echo "--- spec"
$NEARDUP pairs "$DATA/small.jsonl" --spec "words:3 bottomk:64 verify:0.5" -o /dev/null
echo "--- dedup"
$NEARDUP dedup "$DATA/small.jsonl" --method bottomk --threshold 0.5 --shingle 3 -o kept.jsonl --removed removed.tsv --quiet; echo "exit=$?"
cut -c1-20 kept.jsonl
cat removed.tsv
echo "--- misuse"
$NEARDUP pairs "$DATA/small.jsonl" --top 3; echo "exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --method bottomk --num-perm 64; echo "exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --sketch-size 64; echo "exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --method bottomk --bands 4 --rows 4; echo "exit=$?"
$NEARDUP dedup "$DATA/small.jsonl" --method bottomk --top 3 -o x; echo "exit=$?"
