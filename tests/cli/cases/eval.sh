# neardup eval: pairs of the sample corpus scored against its exact truth, at the floor and at a
# threshold, per bin, as JSON and as a list; misuse.
cp "$DATA/../../data/sample/mmds-articles-2500.jsonl.zst" corpus.jsonl.zst
cp "$DATA/../../data/sample/mmds-articles-2500.truth.tsv.zst" truth.tsv.zst
$NEARDUP pairs corpus.jsonl.zst --shingle 3 --threshold 0.5 -q -o exact.tsv
$NEARDUP eval --truth truth.tsv.zst exact.tsv; echo "exit=$?"
echo "--- estimates at 0.8, 64 permutations"
$NEARDUP pairs corpus.jsonl.zst --shingle 3 --threshold 0.8 --num-perm 64 --verify estimate -q -o est.tsv
$NEARDUP eval --truth truth.tsv.zst est.tsv --threshold 0.8; echo "exit=$?"
$NEARDUP eval --truth truth.tsv.zst est.tsv --threshold 0.8 --json
$NEARDUP eval --truth truth.tsv.zst est.tsv --threshold 0.8 --list -o list.tsv; echo "exit=$?"
cut -f1 list.tsv | sort | uniq -c
echo "--- a miss, a false positive, a pair below the floor, a repeat"
printf 'a\tb\t0.9\nc\td\t0.85\ne\tf\t0.6\ng\th\t0.81\n' > t.tsv
printf 'b\ta\t0.92\ne\tf\t0.83\nx\ty\t0.8\ng\th\t0.79\na\tb\t0.1\n' > p.tsv
$NEARDUP eval --truth t.tsv p.tsv --threshold 0.8
$NEARDUP eval --truth t.tsv p.tsv --threshold 0.8 --list
$NEARDUP eval --truth t.tsv p.tsv --threshold 0.8 --list --json
echo "--- misuse"
$NEARDUP eval --truth truth.tsv.zst est.tsv --threshold 0.3; echo "exit=$?"
printf 'a\tb\n' > bad.tsv
$NEARDUP eval --truth truth.tsv.zst bad.tsv; echo "exit=$?"
$NEARDUP eval --truth missing.tsv est.tsv; echo "exit=$?"
$NEARDUP eval est.tsv; echo "exit=$?"
