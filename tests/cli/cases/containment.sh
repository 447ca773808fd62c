# Containment and top-k: pairs --measure containment (a quotation inside longer pages, which
# Jaccard misses), index query --containment and --top, and their refusals.
words() { seq "$1" "$2" | sed 's/^/w/' | tr '\n' ' '; }
{
  printf '{"id":"article","text":"%s"}\n' "$(words 1 200)"
  printf '{"id":"quote","text":"%s"}\n' "$(words 50 89)"
  printf '{"id":"page","text":"%s %s %s"}\n' "$(words 1000 1300)" "$(words 50 89)" "$(words 2000 2300)"
  printf '{"id":"half","text":"%s %s"}\n' "$(words 50 69)" "$(words 3000 3019)"
  printf '{"id":"other","text":"%s"}\n' "$(words 5000 5100)"
} > docs.jsonl
$NEARDUP pairs docs.jsonl --measure containment --threshold 0.9; echo "exit=$?"
echo "--- at 0.4 the half-quoted one joins; Jaccard at 0.4 finds none of them"
$NEARDUP pairs docs.jsonl --measure containment --threshold 0.4 --quiet
$NEARDUP pairs docs.jsonl --threshold 0.4 --method exact --quiet
echo "--- the index: who contains the quote, and each document's two most similar others"
$NEARDUP index create idx.ndx --quiet
$NEARDUP index add idx.ndx docs.jsonl --quiet
printf '{"id":"q","text":"%s"}\n' "$(words 50 89)" > q.jsonl
$NEARDUP index query idx.ndx q.jsonl --containment 0.9; echo "exit=$?"
$NEARDUP index query idx.ndx docs.jsonl --top 2 --skip-same-id --quiet
echo "--- refusals"
$NEARDUP pairs docs.jsonl --measure containment --method oph; echo "exit=$?"
$NEARDUP pairs docs.jsonl --measure cosine; echo "exit=$?"
$NEARDUP pairs docs.jsonl --measure containment --report r.html; echo "exit=$?"
$NEARDUP index query idx.ndx q.jsonl --top 2 --containment 0.5; echo "exit=$?"
$NEARDUP index create est.ndx --verify estimate --quiet
$NEARDUP index add est.ndx docs.jsonl --quiet
$NEARDUP index query est.ndx q.jsonl --top 2; echo "exit=$?"
