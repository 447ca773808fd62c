# Every bad input: one error line naming file and line, a documented exit code, no output left.
printf '{"id": "a", "text": "fine"}\n{"id": "b", "text": "broken\n' > badjson.jsonl
printf '{"id": "a2", "text": "fine"}\n{"id": "b2", "body": "x"}\n' > notext.jsonl
printf '{"id": "a", "text": 42}\n' > numtext.jsonl
printf '{"id": "a", "text": null}\n' > nulltext.jsonl
: > empty.jsonl
for i in $(seq 1 300); do echo "{\"id\": \"$i\", \"text\": \"document number $i with some words $((i * 7919))\"}"; done > big.jsonl
gzip -c big.jsonl > full.gz; zstd -q -c big.jsonl > full.zst
head -c $(( $(stat -c %s full.gz) / 2 )) full.gz > trunc.jsonl.gz
head -c $(( $(stat -c %s full.zst) / 2 )) full.zst > trunc.jsonl.zst
for f in badjson notext numtext nulltext empty trunc.jsonl.gz trunc.jsonl.zst; do
  case $f in *.*) p=$f ;; *) p=$f.jsonl ;; esac
  $NEARDUP dedup "$p" -o out.jsonl; echo "exit=$?"
done
$NEARDUP pairs missing.jsonl; echo "exit=$?"
echo "--- no output was created"
ls out.jsonl 2>&1 | sed 's/^ls: //'
echo "--- an existing output is untouched by a failed run"
echo "precious" > out.jsonl
$NEARDUP dedup badjson.jsonl -o out.jsonl --quiet; echo "exit=$?"
cat out.jsonl; ls -A | grep -c neardup-tmp
echo "--- --on-error skip counts and goes on"
$NEARDUP dedup badjson.jsonl notext.jsonl numtext.jsonl -o out.jsonl --on-error skip; echo "exit=$?"
cat out.jsonl
echo "--- invalid UTF-8 is not an error"
printf '{"id": "u", "text": "caf\xe9 latt\xe9"}\n' > latin1.jsonl
$NEARDUP pairs latin1.jsonl --quiet; echo "exit=$?"
