# dedup: kept records byte for byte, removed list, clusters, summary line.
$NEARDUP dedup "$DATA/small.jsonl" --threshold 0.5 --shingle 3 -o kept.jsonl --removed removed.tsv --clusters clusters.tsv -j 2
echo "exit=$?"
echo "--- kept"; cat kept.jsonl
echo "--- removed"; cat removed.tsv
echo "--- clusters"; cat clusters.tsv
echo "--- kept lines are input lines"; grep -vxF -f "$DATA/small.jsonl" kept.jsonl | wc -l
echo "--- keep longest"
$NEARDUP dedup "$DATA/small.jsonl" --threshold 0.5 --shingle 3 --keep longest -o - --quiet | cut -c1-20
echo "--- same output from stdin, gzip and zstd"
gzip -c "$DATA/small.jsonl" > small.jsonl.gz; zstd -q -c "$DATA/small.jsonl" > small.zst
cat "$DATA/small.jsonl" | $NEARDUP dedup - --threshold 0.5 --shingle 3 -o a.jsonl --quiet
$NEARDUP dedup small.jsonl.gz --threshold 0.5 --shingle 3 -o b.jsonl --quiet
$NEARDUP dedup small.zst --format jsonl --threshold 0.5 --shingle 3 -o c.jsonl --quiet
cmp a.jsonl kept.jsonl && cmp b.jsonl kept.jsonl && cmp c.jsonl kept.jsonl && echo identical
echo "--- the spec flag gives the same run"
$NEARDUP dedup "$DATA/small.jsonl" --spec "words:3 minhash:128 lsh:42x3 verify:0.5" -o d.jsonl 2>&1 | sed 's/.*\[/[/'
cmp d.jsonl kept.jsonl && echo identical
