# pairs on a small JSONL file: each similar pair once, id1 TAB id2 TAB similarity.
$NEARDUP pairs "$DATA/small.jsonl" --threshold 0.5 --shingle 3 -o pairs.tsv; echo "exit=$?"
cat pairs.tsv
echo "--- to stdout, estimate"
$NEARDUP pairs "$DATA/small.jsonl" --threshold 0.5 --shingle 3 --verify estimate --quiet | cut -f1,2
echo "--- character 5-grams"
$NEARDUP pairs "$DATA/small.jsonl" --threshold 0.5 --chars 5 --quiet
echo "--- read as a stream (--no-mmap): the same pairs"
$NEARDUP pairs "$DATA/small.jsonl" --threshold 0.5 --shingle 3 -o streamed.tsv --no-mmap -q; echo "exit=$?"
cmp pairs.tsv streamed.tsv && echo "same pairs"
echo "--- read in place (--mmap): the same pairs; --mmap with --no-mmap is a usage error"
$NEARDUP pairs "$DATA/small.jsonl" --threshold 0.5 --shingle 3 -o mapped.tsv --mmap -q; echo "exit=$?"
cmp pairs.tsv mapped.tsv && echo "same pairs"
$NEARDUP pairs "$DATA/small.jsonl" --mmap --no-mmap -q; echo "exit=$?"
