# Hostile inputs (docs/robustness.md): each has a documented outcome, checked here.
echo "--- a line of 100 MB+ (its text cut to --max-doc-bytes, the record kept whole) and a copy"
python3 -c '
import json
cycle = ["w%d" % i for i in range(9973)]  # words w0 ... w9972, 17,500,000 of them in turn
turns, rest = divmod(17_500_000, len(cycle))
words = " ".join([" ".join(cycle)] * turns + [" ".join(cycle[:rest])])
print(json.dumps({"id": "huge", "text": words}))
print(json.dumps({"id": "huge-copy", "text": words}))
print(json.dumps({"id": "small", "text": "a small document"}))' > huge.jsonl
[ "$(head -1 huge.jsonl | wc -c)" -gt 100000000 ] && echo "a line of more than 100 MB"
$NEARDUP dedup huge.jsonl -o kept.jsonl --removed removed.tsv --max-doc-bytes 4M; echo "exit=$?"
cat removed.tsv; cmp <(sed -n 1p huge.jsonl) <(sed -n 1p kept.jsonl) && echo "the kept record is byte-identical"
$NEARDUP dedup huge.jsonl -o kept.jsonl --max-doc-bytes 4M --long-docs skip --on-error skip; echo "exit=$?"
# --max-record-bytes holds for every line: a 100 MB line is refused under a 64 MB limit, and passes under 128 MB
$NEARDUP dedup huge.jsonl -o kept.jsonl --max-record-bytes 64M; echo "exit=$?"
$NEARDUP dedup huge.jsonl -o kept.jsonl --max-record-bytes 128M; echo "exit=$?"
rm -f huge.jsonl
echo "--- a decompression bomb: 20 MB of one byte in 1 KB, no newline"
head -c 20000000 /dev/zero | tr '\0' 'a' | zstd -q -19 > bomb.jsonl.zst
[ "$(stat -c %s bomb.jsonl.zst)" -lt 2000 ] && echo "bomb.jsonl.zst is under 2 KB"
$NEARDUP dedup bomb.jsonl.zst -o kept.jsonl --max-record-bytes 1M; echo "exit=$?"
echo "--- a document that is one 10 MB word, twice"
python3 -c '
w = "x" * 10_000_000
print("{\"id\": \"word\", \"text\": \"%s\"}" % w)
print("{\"id\": \"word-copy\", \"text\": \"%s\"}" % w)' > word.jsonl
$NEARDUP pairs word.jsonl --quiet; echo "exit=$?"
echo "--- a million tiny documents (1,000 distinct texts)"
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "{\"id\":\"d%d\",\"text\":\"tiny doc %d here\"}\n", i, i % 1000 }' > tiny.jsonl
$NEARDUP dedup tiny.jsonl -o kept.jsonl --method minhash --quiet; echo "exit=$?"
wc -l < kept.jsonl; head -2 kept.jsonl
echo "--- whitespace, punctuation, NUL, BOM, CRLF, surrogates, invalid UTF-8, non-string text"
printf '\xef\xbb\xbf{"id":"bom","text":"the first record follows a byte order mark"}\r\n' > odd.jsonl
printf '{"id":"ws","text":"   \\t\\n   "}\n{"id":"punct","text":"!!! ... ??? --- ,,,"}\n' >> odd.jsonl
printf '{"id":"nul","text":"a\\u0000b c d"}\n{"id":"rawnul","text":"a\x00b"}\n' >> odd.jsonl
printf '{"id":"pair","text":"an emoji \\ud83d\\ude00 in a pair"}\n{"id":"lone","text":"a lone \\ud800 surrogate"}\n' >> odd.jsonl
printf '{"id":"utf8","text":"overlong \xc0\xaf and surrogate \xed\xa0\x80 bytes"}\r\n' >> odd.jsonl
printf '{"id":"num","text":42}\n{"id":"null","text":null}\n{"id":"arr","text":["a"]}\n{"id":"obj","text":{"a":1}}\n' >> odd.jsonl
$NEARDUP dedup odd.jsonl -o kept.jsonl --on-error skip; echo "exit=$?"
head -c 3 kept.jsonl | od -An -c | head -1
$NEARDUP dedup odd.jsonl -o kept.jsonl; echo "exit=$?"
echo "--- duplicate ids"
printf '{"id":"a","text":"one two three"}\n{"id":"b","text":"four five six"}\n{"id":"a","text":"seven eight"}\n' > dup.jsonl
$NEARDUP dedup dup.jsonl -o kept.jsonl; echo "exit=$?"
$NEARDUP dedup dup.jsonl -o kept.jsonl --on-duplicate-id keep; echo "exit=$?"
echo "--- a directory with a dangling link (and an unreadable file when not root)"
mkdir dir; printf '{"id":"r","text":"readable words here"}\n' > dir/a.jsonl; ln -s /nonexistent dir/b.jsonl
printf '{"id":"s","text":"secret words here"}\n' > dir/c.jsonl; chmod 000 dir/c.jsonl
$NEARDUP dedup dir -o kept.jsonl 2>&1 | sed 's/^neardup: error: .*b.jsonl:/neardup: error: dir\/b.jsonl:/'; echo "exit=${PIPESTATUS[0]}"
$NEARDUP dedup dir -o kept.jsonl --on-error skip 2>&1 | grep -c "skipped dir/b.jsonl: a symbolic link to nothing"
chmod 644 dir/c.jsonl
echo "--- a full disk (ulimit -f): an I/O error, no output, no temporary file"
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "{\"id\":\"d%d\",\"text\":\"document %d with a few words in it\"}\n", i, i }' > many.jsonl
(ulimit -f 100; $NEARDUP dedup many.jsonl -o full.jsonl --quiet); echo "exit=$?"
ls full.jsonl .full.jsonl.neardup-tmp-* 2>&1 | sed 's/^ls: //'
echo "--- SIGTERM and SIGINT during a run: exit 128+signal, no output, no temporary file"
# A background job of a script starts with SIGINT ignored (and neardup leaves ignored signals
# alone, as nohup expects): it is started with the default action instead.
start() { exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }
# Killed while its outputs are being written: a large input keeps the run going once they exist.
awk 'BEGIN { for (i = 0; i < 1500000; i++) printf "{\"id\":\"d%d\",\"text\":\"document %d with a few more words in it %d\"}\n", i, i, i % 977 }' > big.jsonl
for sig in TERM INT; do
  start $NEARDUP dedup big.jsonl -o out.jsonl --removed removed2.tsv --quiet &
  pid=$!
  # The outputs' temporary files have no name (O_TMPFILE): open as "$PWD/#INODE (deleted)".
  for i in $(seq 1 400); do [ "$(ls -l /proc/$pid/fd 2>/dev/null | grep -c "$PWD/#")" -ge 2 ] && break; sleep 0.01; done
  [ "$(ls -l /proc/$pid/fd 2>/dev/null | grep -c "$PWD/#")" -ge 2 ] && echo "temporary files exist while it runs"
  kill -$sig $pid
  wait $pid; echo "exit=$?"
  ls out.jsonl removed2.tsv .*neardup-tmp* 2>&1 | sed 's/^ls: //'
done
# Runs a command in the background under a Python parent that writes the command's pid to
# child.pid and exits with 128 + the signal that killed it: the script's shell sees an ordinary
# exit, not a job killed by a signal, whose "Killed" notice it would print when it pleases.
start_child() {
  rm -f child.pid
  python3 -c 'import signal, subprocess, sys
p = subprocess.Popen(sys.argv[1:], preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
open("child.pid", "w").write(str(p.pid))
r = p.wait()
sys.exit(128 - r if r < 0 else r)' "$@" &
  parent=$!
  for i in $(seq 1 400); do [ -s child.pid ] && break; sleep 0.01; done
  pid=$(cat child.pid)
}
# The same killed without warning (SIGKILL: no handler runs): nothing is left either.
start_child $NEARDUP dedup big.jsonl -o out.jsonl --removed removed2.tsv --quiet
for i in $(seq 1 400); do [ "$(ls -l /proc/$pid/fd 2>/dev/null | grep -c "$PWD/#")" -ge 2 ] && break; sleep 0.01; done
kill -KILL $pid
wait $parent; echo "exit=$?"
ls out.jsonl removed2.tsv .*neardup-tmp* 2>&1 | sed 's/^ls: //'
rm -f big.jsonl
# Killed while it copies a pipe given as input: its copy, in TMPDIR, has no name (O_TMPFILE: open
# as "TMPDIR/#INODE (deleted)"), and nothing is left of it after a handled signal or SIGKILL.
mkdir -p spool
for sig in TERM INT KILL; do
  mkfifo fifo.jsonl
  start_child env TMPDIR="$PWD/spool" $NEARDUP dedup fifo.jsonl -o out.jsonl --quiet
  exec 3> fifo.jsonl  # a writer that stays open: neardup copies what comes and waits for more
  echo '{"id": "x", "text": "a record"}' >&3
  for i in $(seq 1 400); do ls -l /proc/$pid/fd 2>/dev/null | grep -q "$PWD/spool/#" && break; sleep 0.01; done
  ls -l /proc/$pid/fd 2>/dev/null | grep -q "$PWD/spool/#" && echo "the copy of the pipe exists while it runs, without a name"
  kill -$sig $pid
  wait $parent; echo "exit=$?"
  exec 3>&-
  ls out.jsonl 2>&1 | sed 's/^ls: //'
  echo "left in TMPDIR: $(ls -A spool)"
  rm -f fifo.jsonl
done
