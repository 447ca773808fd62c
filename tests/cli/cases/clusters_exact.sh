# --method exact, --cluster components|leader, --keep-by, and an index queried below its threshold.
cat > chain.jsonl <<'JSON'
{"id":"a","text":"one two three four five six seven eight nine ten","score":2,"date":"2021-03-01"}
{"id":"b","text":"one two three four five six seven eight nine eleven","score":5,"date":"2020-01-01"}
{"id":"c","text":"one two three four five six seven eight twelve eleven","score":1}
{"id":"d","text":"one two three four five six seven thirteen twelve eleven","score":4,"date":"2019-06-30"}
{"id":"e","text":"alpha beta gamma delta epsilon zeta eta theta iota kappa","score":3,"date":"2022-01-01"}
JSON
echo "--- exact pairs at 0.6"
$NEARDUP pairs chain.jsonl --method exact -k 1 -t 0.6 -q; echo "exit=$?"
echo "--- components: a chain removes d at 0.54 to a"
$NEARDUP dedup chain.jsonl --method exact -k 1 -t 0.6 -o kept.jsonl --removed removed.tsv; echo "exit=$?"
cat removed.tsv
echo "--- leader: every removed document >= 0.6 to its kept one"
$NEARDUP dedup chain.jsonl --method exact -k 1 -t 0.6 --cluster leader -o kept.jsonl --removed removed.tsv -q; echo "exit=$?"
cat removed.tsv
echo "--- keep-by score (largest), date:asc (missing last)"
$NEARDUP dedup chain.jsonl -k 1 -t 0.6 --keep-by score -o - -q | cut -c1-9
$NEARDUP dedup chain.jsonl -k 1 -t 0.6 --keep-by date:asc --removed removed.tsv -o /dev/null -q; cat removed.tsv
echo "--- bad --keep-by"
$NEARDUP dedup chain.jsonl --keep-by score:up -o x.jsonl; echo "exit=$?"
$NEARDUP dedup chain.jsonl --keep-by score --keep longest -o x.jsonl; echo "exit=$?"
printf '{"id":"f","text":"one two","score":"high"}\n' >> chain.jsonl
$NEARDUP dedup chain.jsonl --keep-by score -o x.jsonl; echo "exit=$?"
$NEARDUP dedup chain.jsonl --method exact --verify estimate -o x.jsonl; echo "exit=$?"
echo "--- an index queried below its threshold"
$NEARDUP index create i.ndx -q
$NEARDUP index add i.ndx "$DATA/small.jsonl" -q
$NEARDUP index query i.ndx "$DATA/small.jsonl" -t 0.5 -o matches.tsv 2>&1 | head -1; echo "exit=$?"
