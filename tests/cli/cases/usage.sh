# Usage errors exit 2; help and version exit 0.
$NEARDUP > /dev/null 2>&1; echo "no command: exit=$?"
$NEARDUP dedup "$DATA/small.jsonl" > /dev/null 2>&1; echo "dedup without -o: exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --threshold 1.5 > /dev/null 2>&1; echo "bad threshold: exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --bands 4 > /dev/null 2>&1; echo "bands without rows: exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --bands 20 --rows 20; echo "bands x rows too big: exit=$?"
$NEARDUP pairs "$DATA/small.jsonl" --spec "words:x"; echo "bad spec: exit=$?"
NEARDUP_FORCE_ISA=sse9 $NEARDUP pairs "$DATA/small.jsonl"; echo "bad isa: exit=$?"
$NEARDUP --help > /dev/null; echo "help: exit=$?"
$NEARDUP dedup --help | head -1; echo "dedup help: exit=$?"
$NEARDUP --version | head -1 | cut -d' ' -f1,2; echo "version: exit=$?"
echo "--- every kernel gives the same output"
# A level this CPU lacks is refused (exit 2, "does not support"): nothing to compare there. Any
# other failure, a crash above all, is printed and fails the case.
for isa in scalar avx2 avx512 avx512vbmi; do
  msg=$(NEARDUP_FORCE_ISA=$isa $NEARDUP pairs "$DATA/small.jsonl" --threshold 0.5 --shingle 3 -o $isa.tsv --quiet 2>&1); rc=$?
  if [ $rc -eq 2 ] && [ "$isa" != scalar ] && [[ $msg == *"does not support"* ]]; then
    cp scalar.tsv $isa.tsv
  elif [ $rc -ne 0 ]; then
    echo "$isa: exit=$rc: $msg"
  fi
done
cmp scalar.tsv avx2.tsv && cmp scalar.tsv avx512.tsv && cmp scalar.tsv avx512vbmi.tsv && echo identical
