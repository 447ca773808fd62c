# A directory of text files: each file is a document, ids are relative paths, OUT lists kept paths.
mkdir -p docs/sub
echo "the cat sat on the mat and looked out of the window at the rain" > docs/b.txt
echo "The cat sat on the mat, and looked out of the window at the rain." > docs/sub/a.txt
echo "completely different content about ships and the sea" > docs/c.txt
: > docs/empty.txt
$NEARDUP dedup docs --threshold 0.8 --shingle 3 -o kept.txt --removed removed.tsv; echo "exit=$?"
cat kept.txt; cat removed.tsv
echo "--- mixing JSONL and text inputs is refused"
$NEARDUP dedup docs "$DATA/small.jsonl" -o x --quiet; echo "exit=$?"
