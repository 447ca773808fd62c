# The command line as strict and as clear everywhere: one file given twice, outputs where no file
# can be made, options offered only where they work, -q on every command, summary lines that say
# what was written, the spec that reproduces a --top run, explain's lines, the update lock.
cp "$DATA/small.jsonl" s.jsonl && S=s.jsonl
echo "--- one file given twice"
$NEARDUP pairs "$S" "$S" -q; echo "exit=$?"
echo "--- outputs where no file can be made"
$NEARDUP pairs "$S" -o /proc/version -q; echo "exit=$?"
$NEARDUP pairs "$S" -o no-such-dir/x.tsv -q; echo "exit=$?"
echo "--- pairs: --on-duplicate-id error or keep only"
$NEARDUP pairs "$S" --on-duplicate-id skip -q; echo "exit=$?"
$NEARDUP pairs --help | grep -A1 -e "--on-duplicate-id"
echo "--- every compression named in the inputs' help"
$NEARDUP dedup --help | grep -c "gz/.zst/.xz/.bz2"
echo "--- every command takes -q"
$NEARDUP tune --low 0.05:0.001 --high 0.5:0.99 -q | head -2; echo "exit=$?"
$NEARDUP simhash-plan --hamming 3 --docs 1000 -q | head -1
$NEARDUP pairs "$S" -t 0.5 -k 3 -o p.tsv -q
$NEARDUP eval p.tsv --truth p.tsv -q | head -1
$NEARDUP index create i.ndx -q && $NEARDUP index stats i.ndx -q | head -1
$NEARDUP explain orig copy "$S" -q | head -1
echo "--- summaries: what pairs wrote, the flag that --top adds to the spec"
$NEARDUP pairs "$S" --method exact -t 0.5 -k 3 -o /dev/null
$NEARDUP pairs "$S" --method bottomk --top 2 -k 3 -o /dev/null
echo "--- explain: its options, the LSH and SimHash lines"
$NEARDUP explain --help | grep -c -e "--verify" -e "--rejects"
$NEARDUP explain --help | grep -A1 -e "-t,--threshold"
$NEARDUP explain orig copy "$S" -t 0.5 -k 3 | grep "LSH"
$NEARDUP explain orig other "$S" -k 3 | grep "LSH"
$NEARDUP explain orig copy "$S" --method simhash | grep "SimHash"
echo "--- an index another process changes: refused at once, or waited for with --wait"
flock i.ndx.lock sleep 2 &
until ! flock -n i.ndx.lock true; do sleep 0.05; done  # held
$NEARDUP index add i.ndx "$S" -q; echo "exit=$?"
$NEARDUP index add i.ndx "$S" --wait -q; echo "exit=$?"
wait
$NEARDUP index stats i.ndx | head -1
