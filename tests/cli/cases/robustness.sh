# Outputs that never destroy data, and inputs in the shapes users have (docs/robustness.md lists
# each case). Every input's checksum is compared before and after.
same() { if [ "$(sha1sum < "$1")" = "$2" ]; then echo "$1 unchanged"; else echo "$1 CHANGED"; fi; }
printf '%s\n' '{"id":"a","text":"the quick brown fox jumps over the lazy dog near the bank"}' \
  '{"id":"b","text":"the quick brown fox jumps over the lazy dog near the bank"}' \
  '{"id":"c","text":"an unrelated record about ships sailing on the open sea"}' > s.jsonl
sum=$(sha1sum < s.jsonl)

echo "--- an output that is an input, or another output, is refused before any work"
$NEARDUP dedup s.jsonl -o s.jsonl -q; echo "exit=$?"; same s.jsonl "$sum"
$NEARDUP dedup s.jsonl -o kept.jsonl --removed s.jsonl -q; echo "exit=$?"; same s.jsonl "$sum"
ln s.jsonl hard.jsonl; ln -s s.jsonl soft.jsonl
$NEARDUP dedup s.jsonl -o hard.jsonl -q; echo "exit=$?"
$NEARDUP dedup s.jsonl -o soft.jsonl -q; echo "exit=$?"; same s.jsonl "$sum"
$NEARDUP dedup s.jsonl -o x --removed x --clusters x -q; echo "exit=$?"; [ -e x ] || echo "x was not written"
$NEARDUP dedup s.jsonl -o - --removed - -q; echo "exit=$?"
$NEARDUP index create idx.ndx -q && $NEARDUP index add idx.ndx s.jsonl -q
isum=$(sha1sum < idx.ndx)
$NEARDUP index query idx.ndx s.jsonl -o idx.ndx -q; echo "exit=$?"; same idx.ndx "$isum"
$NEARDUP index add idx.ndx idx.ndx -q; echo "exit=$?"; same idx.ndx "$isum"

echo "--- special files are written in place, links through, modes kept"
$NEARDUP dedup s.jsonl -o kept.jsonl --clusters /dev/stdout -q | cat; echo "exit=${PIPESTATUS[0]}"
[ -L /dev/stdout ] && echo "/dev/stdout is still a link"
$NEARDUP dedup s.jsonl -o /dev/null --removed /dev/null -q; echo "exit=$?"
[ -c /dev/null ] && echo "/dev/null is still a character device"
$NEARDUP dedup s.jsonl -o /dev/stdout -q | wc -l
$NEARDUP dedup s.jsonl -o >(gzip > sub.gz) -q; echo "exit=$?"; wait $!; zcat sub.gz | wc -l  # $!: the substitution's gzip
mkfifo fifo; cat fifo > from-fifo & reader=$!; $NEARDUP dedup s.jsonl -o fifo -q; echo "exit=$?"; wait $reader
wc -l < from-fifo; [ -p fifo ] && echo "fifo is still a FIFO"
ln -s real.jsonl link.jsonl
$NEARDUP dedup s.jsonl -o link.jsonl -q; echo "exit=$?"; [ -L link.jsonl ] && echo "link.jsonl is still a link to $(readlink link.jsonl), $(wc -l < real.jsonl) lines"
touch ro.jsonl private.jsonl; chmod 0444 ro.jsonl; chmod 0600 private.jsonl
$NEARDUP dedup s.jsonl -o ro.jsonl --removed private.jsonl -q; echo "exit=$?"; stat -c '%n %a' ro.jsonl private.jsonl

echo "--- compressed outputs, one kept file per input shard"
$NEARDUP dedup s.jsonl -o kept.jsonl.gz --removed removed.tsv.zst -q; echo "exit=$?"
gzip -t kept.jsonl.gz && zcat kept.jsonl.gz | wc -l; zstd -dc removed.tsv.zst
$NEARDUP dedup s.jsonl -o kept.jsonl.xz -q; echo "exit=$?"
mkdir shards; gzip -c s.jsonl > shards/one.jsonl.gz; printf '%s\n' '{"id":"d","text":"the quick brown fox jumps over the lazy dog near the bank"}' > shards/two.jsonl
$NEARDUP dedup shards --output-dir out -q; echo "exit=$?"; ls out; zcat out/one.jsonl.gz | wc -l; wc -l < out/two.jsonl
$NEARDUP dedup shards --output-dir shards -q; echo "exit=$?"

echo "--- inputs: xz, bzip2, JSONL by content, nested fields, numeric ids"
xz -c s.jsonl > s.jsonl.xz; bzip2 -c s.jsonl > s.jsonl.bz2; cp s.jsonl records.txt
for f in s.jsonl.xz s.jsonl.bz2 records.txt; do $NEARDUP pairs "$f" -q; done
TMPDIR=/tmp $NEARDUP dedup s.jsonl.xz s.jsonl.bz2 s.jsonl -o /dev/null --estimate-memory; echo "exit=$?"
echo "a pipe as input (process substitution), read twice through its spooled copy:"
$NEARDUP dedup <(gzip -c s.jsonl) -o - --removed removed.tsv -q | wc -l; cat removed.tsv
printf '%s\n' '{"meta":{"body":"one two three four five six"},"n":7}' '{"meta":{"body":"one two three four five six"},"n":8.5}' > nested.jsonl
$NEARDUP pairs nested.jsonl --text-field meta.body --id-field n -q
$NEARDUP pairs s.jsonl --id-field uid 2>&1 | grep warning
printf '%s\n' '{"id":"tab\there","text":"x"}' > tab.jsonl
$NEARDUP pairs tab.jsonl -q; echo "exit=$?"

echo "--- --max-record-bytes holds for every line, with its line number"
python3 -c 'print("{\"text\": \"" + "a " * 300000 + "\"}"); [print("{\"text\": \"short %d\"}" % i) for i in range(3000)]' > long.jsonl
$NEARDUP pairs long.jsonl --max-record-bytes 100K -q; echo "exit=$?"
$NEARDUP pairs long.jsonl --max-record-bytes 500 -q; echo "exit=$?"

echo "--- folders: ids unique across folders, one form everywhere, hidden and binary files left out"
mkdir -p d1/a d2/a d1/.git
echo "the same little text in two folders with the same names" > d1/a/x.txt
cp d1/a/x.txt d2/a/x.txt; echo "object" > d1/.git/HEAD; echo "secret" > d1/.env
printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' > d1/a/img.png; echo "skip me" > d1/notes.log
$NEARDUP dedup ./d1 d2 --exclude '*.log' -o kept.txt --removed removed.tsv; echo "exit=$?"; cat kept.txt removed.tsv
$NEARDUP dedup d1/a/x.txt d1/a/x.txt -o - -q; echo "exit=$?"
cat d1/a/x.txt | $NEARDUP dedup - --format text -o - -q

echo "--- --on-error skip: each skipped record kept with its reason; a run of only bad records fails"
printf '%s\n' 'not json' '{"text": 5}' '{"id": "ok", "text": "fine"}' '{"body": "x"}' > mixed.jsonl
$NEARDUP dedup mixed.jsonl -o kept.jsonl --on-error skip --rejects rejects.jsonl; echo "exit=$?"; cat rejects.jsonl
printf '%s\n' 'not json' '{"body": "x"}' > allbad.jsonl
$NEARDUP dedup allbad.jsonl -o kept.jsonl --on-error skip -q; echo "exit=$?"

echo "--- Unicode: NFC and NFD, full-width and ASCII; scripts without spaces"
python3 - <<'EOF'
import json, unicodedata
s = "Le café de la rue Saint-Honoré est fermé depuis l'été dernier"
zh = "我们今天去公园散步，天气非常好，阳光明媚，很多人在那里锻炼身体和聊天，孩子们在草地上玩耍。" * 3
with open("uni.jsonl", "w") as f:
    for i, t in [("nfc", unicodedata.normalize("NFC", s)), ("nfd", unicodedata.normalize("NFD", s)),
                 ("wide", "ＴＨＥ ＱＵＩＣＫ ＢＲＯＷＮ ＦＯＸ jumps over the dog"), ("ascii", "the quick brown fox jumps over the dog")]:
        f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
with open("zh.jsonl", "w") as f:
    for i, t in enumerate([zh, zh.replace("天气非常好", "天气很不错")]):
        f.write(json.dumps({"id": "zh%d" % i, "text": t}, ensure_ascii=False) + "\n")
EOF
echo "default:"; $NEARDUP pairs uni.jsonl -q
echo "--normalize nfkc:"; $NEARDUP pairs uni.jsonl --normalize nfkc -q
$NEARDUP pairs zh.jsonl -t 0.5 2>&1 | grep warning
echo "--words icu:"; $NEARDUP pairs zh.jsonl -t 0.5 --words icu -q

echo "--- tune --plot writes SVG an XML parser reads; other names are refused"
$NEARDUP tune --plot curve.svg > /dev/null; echo "exit=$?"
python3 -c 'import xml.etree.ElementTree as E; r = E.parse("curve.svg").getroot(); print("valid SVG with", len(r.findall("{http://www.w3.org/2000/svg}text")), "labels")'
$NEARDUP tune --plot curve.png; echo "exit=$?"

echo "--- an input truncated while it is read in place (--mmap) is an I/O error naming it, with no output left"
yes '{"text": "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi"}' | head -c 100000000 > big.jsonl
$NEARDUP dedup big.jsonl -o big-kept.jsonl -q -j 1 --mmap & pid=$!
until grep -q big.jsonl /proc/$pid/maps 2>/dev/null || ! kill -0 $pid 2>/dev/null; do :; done  # mapped, or ended
truncate -s 0 big.jsonl
wait $pid; echo "exit=$?"; ls big-kept* 2>/dev/null | wc -l
echo "--- the same with --no-mmap: read as a stream, never mapped; the shrunk input is still an error naming it"
yes '{"text": "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi"}' | head -c 100000000 > big.jsonl
$NEARDUP dedup big.jsonl -o big-kept.jsonl -q -j 1 --no-mmap 2> err.txt & pid=$!
# Read by read(2): the bytes it has read pass 20 MB (a mapped file's never do).
for _ in $(seq 2000); do r=$(awk '/^rchar/ {print $2}' /proc/$pid/io 2>/dev/null); [ "${r:-0}" -gt 20000000 ] && break; sleep 0.005; done
truncate -s 0 big.jsonl
wait $pid; rc=$?
[ "${r:-0}" -gt 20000000 ] && echo "read with read(2)"; echo "exit=$rc"
grep -c "mapped into memory" err.txt; grep -q "^neardup: error: big.jsonl: the file shrank while it was read" err.txt && echo "the error names big.jsonl and says it shrank"
ls big-kept* 2>/dev/null | wc -l
rm -f big.jsonl err.txt

echo "--- help and parse errors"
$NEARDUP pairs --help | grep -E -- '^ +(-t,)?--(method|threshold|on-error) ' | sed 's/  */ /g'
$NEARDUP index create --help | grep -E -- '^ +--(method|sketch-size|hamming|weights) ' | sed 's/  */ /g'
$NEARDUP pairs s.jsonl --method 2; echo "exit=$?"
$NEARDUP pairs s.jsonl -t 0; echo "exit=$?"
$NEARDUP pairs s.jsonl --treshold 0.5; echo "exit=$?"
$NEARDUP dedpu s.jsonl; echo "exit=$?"
$NEARDUP; echo "exit=$?"
same s.jsonl "$sum"
echo "--- started through the dynamic loader, the program runs itself (it does not start itself again as the loader)"
loader=$(ldd "$NEARDUP" | awk '/ld-linux/ {print $1}')
"$loader" "$NEARDUP" --version | head -1 | cut -d' ' -f1
