# explain: one pair's exact Jaccard (the similarity `pairs` reports for it), shingles, sketch
# estimate, colliding bands and word diff; ids from the command line or from a pairs file.
cp "$DATA/small.jsonl" small.jsonl
$NEARDUP pairs small.jsonl -o pairs.tsv -q -t 0.5
cat pairs.tsv
echo "--- by ids: the least similar pair"
read -r a b s < <(sort -t$'\t' -k3 -n pairs.tsv | head -1)
$NEARDUP explain "$a" "$b" small.jsonl -t 0.5
echo "--- agrees with pairs on every pair"
while IFS=$'\t' read -r x y s; do
  got=$($NEARDUP explain "$x" "$y" small.jsonl -t 0.5 | sed -n 's/^  exact Jaccard: \([0-9.]*\) .*/\1/p')
  [ "$got" = "$s" ] || echo "DIFFERS: $x $y: pairs $s, explain $got"
done < pairs.tsv
echo "$(wc -l < pairs.tsv) pairs checked"
echo "--- from a pairs file, with minhash"
$NEARDUP explain --pair pairs.tsv small.jsonl --method minhash | head -3
echo "--- an id not in the inputs; no inputs"
$NEARDUP explain nosuch "$a" small.jsonl
echo "exit=$?"
$NEARDUP explain "$a" "$b"
echo "exit=$?"
