#!/usr/bin/env bash
# neardup against the floors of its job on one corpus, medians of REPS alternating runs, 2 cores:
#   pairs  against `zstd -1 -T1` of the same file (a single-threaded pass that reads every byte)
#   dedup  against `cp` + `sync` of the file (a job that must write and sync about as many bytes)
#   one 50 MB record against the same text as 50 records of 1 MB (time per byte; medians of 9)
#   peak memory of dedup against the estimate it prints (--estimate-memory)
# Every neardup output of a run is compared with the first run's (identical results).
#   bench/floors.sh bench/data/crowded.jsonl [REPS=3]      (corpus: bench/make_corpus.sh --crowded)
# With COLD=1 the input is dropped from the page cache before each timed command (as a corpus
# larger than memory is read), instead of read once into it beforehand.
set -euo pipefail
IN=$(realpath "$1") REPS=${2:-3}  # a link resolved: zstd skips links, and the copies go beside the file itself
ND=${NEARDUP:-build/neardup}
OUT=${OUT:-$(mktemp -d -p "$(dirname "$IN")")}  # beside the input: the same file system for cp
trap 'rm -rf "$OUT"' EXIT
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
t() { /usr/bin/time -f "%e %M %U %S" -o "$OUT/time" "$@"; read -r wall rss user sys < "$OUT/time"; cpu=$(python3 -c "print(f'{$user + $sys:.2f}')"); }
bytes=$(stat -c %s "$IN")
echo "corpus: $IN ($(wc -l < "$IN") records, $((bytes / 1000000)) MB); $($ND --version | head -1)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F)"
COLD=${COLD:-0}
# The input's pages dropped from the page cache (posix_fadvise DONTNEED: clean pages, no root).
drop() { if [ "$COLD" = 1 ]; then dd if="$IN" iflag=nocache count=0 status=none; fi; }
if [ "$COLD" = 1 ]; then echo "cache: cold (the input dropped from the page cache before each command)"
else cat "$IN" > /dev/null; echo "cache: warm (the input read into the page cache once, for every command alike)"; fi

declare -A T R U
for rep in $(seq "$REPS"); do
  drop; t zstd -1 -T1 -q -c "$IN" -o /dev/null; T[zstd]+="$wall "
  rm -f "$OUT/pairs.tsv"; drop
  t "$ND" pairs "$IN" -o "$OUT/pairs.tsv" -q; T[pairs]+="$wall "; R[pairs]+="$rss "
  if [ "$rep" = 1 ]; then cp "$OUT/pairs.tsv" "$OUT/pairs.first"; else cmp "$OUT/pairs.tsv" "$OUT/pairs.first"; fi
  # Each write starts on a quiet disk: the files deleted before it synced first (with the
  # `discard` mount option a deleted file's blocks are discarded at the next journal commit,
  # which would otherwise land inside the next timed command).
  # cp puts the copy in the page cache. On a virtual machine that hands free memory back to its
  # host (virtio-balloon free page reporting, here: a page freed more than about 2 s before is
  # given back), that memory costs a host fault when the guest takes it again: cp of this 1.5 GB
  # file took 2.8-2.9 s after a 5 s pause and 0.4 s after 0.2 s, right after the last copy's
  # pages were freed; the sync took 0.4-0.6 s either way. Here cp runs long after any such free,
  # as a user's copy does. The direct write of the same bytes skips the page cache: the floor of
  # the disk alone, whatever the memory (0.8-1.1 s here either way).
  rm -f "$OUT/copy"; sync; drop
  t sh -c "cp '$IN' '$OUT/copy' && sync"; T[cp]+="$wall "
  rm -f "$OUT/copy"; sync; drop
  t sh -c "dd if='$IN' of='$OUT/copy' bs=4M oflag=direct status=none && sync"; T[direct]+="$wall "
  rm -f "$OUT/kept.jsonl" "$OUT/copy"; sync; drop
  t "$ND" dedup "$IN" -o "$OUT/kept.jsonl" --removed "$OUT/removed.tsv" --stats 2> "$OUT/stats"; T[dedup]+="$wall "; R[dedup]+="$rss "; U[dedup]+="$cpu "
  if [ "$rep" = 1 ]; then cp "$OUT/removed.tsv" "$OUT/removed.first"; else cmp "$OUT/removed.tsv" "$OUT/removed.first"; fi
  rm -f "$OUT/kept.jsonl"
  # A copy right after another copy's pages were freed: as fast as this machine's memory lets cp
  # be, which a user's copy meets only when as much was freed just before it. Last in the round,
  # and its pages left 3 s to go back to the host, so that no command above gets freed memory.
  rm -f "$OUT/copy"; sync; cp "$IN" "$OUT/copy"; sync; rm -f "$OUT/copy"
  t sh -c "cp '$IN' '$OUT/copy' && sync"; T[cpfast]+="$wall "
  rm -f "$OUT/copy"; sync; sleep 3
done
z=$(echo ${T[zstd]} | median) p=$(echo ${T[pairs]} | median) c=$(echo ${T[cp]} | median) d=$(echo ${T[dedup]} | median)
echo "pairs: $p s (runs ${T[pairs]}; peak $(( $(echo ${R[pairs]} | median) / 1024 )) MiB) against zstd -1 -T1: $z s (${T[zstd]}): $(python3 -c "print(f'{$p/$z:.2f}')")x (target 0.6x)"
echo "dedup: $d s (runs ${T[dedup]}; peak $(( $(echo ${R[dedup]} | median) / 1024 )) MiB) against cp + sync: $c s (${T[cp]}): $(python3 -c "print(f'{$d/$c:.2f}')")x (target 1.5x)"
f=$(echo ${T[cpfast]} | median)
echo "dedup against cp + sync right after a copy's pages were freed: $f s (${T[cpfast]}): $(python3 -c "print(f'{$d/$f:.2f}')")x"
w=$(echo ${T[direct]} | median)
echo "dedup against a direct write of the file (dd oflag=direct + sync): $w s (${T[direct]}): $(python3 -c "print(f'{$d/$w:.2f}')")x"
# With the input cached, dedup's own work bounds it: its CPU time over the cores is the least wall
# time it can take, whatever the disk (cp + sync of this file took 0.8 s to 3.5 s here, by the memory's state).
u=$(echo ${U[dedup]} | median)
echo "dedup CPU: $u s (runs ${U[dedup]}): at least $(python3 -c "print(f'{$u/$(nproc):.2f}')") s of wall time on $(nproc) cores, $(python3 -c "print(f'{$u/$(nproc)/$c:.2f}')")x that cp + sync"
# The documented estimate of the run: the expected memory printed before it, plus the cost per
# document in a candidate pair times those documents (read again or kept from the first pass).
est_line=$("$ND" dedup "$IN" -o "$OUT/kept.jsonl" --estimate-memory 2>&1 | tail -1)
echo "$est_line"
to_mib() { awk -v v="$1" -v u="$2" 'BEGIN { f = u == "KB" ? 1e3 : u == "MB" ? 1e6 : u == "GB" ? 1e9 : 1; printf "%.6f", v * f / 1048576 }'; }
read -r ev eu < <(sed -E 's/.*expected memory ([0-9.]+) ([KMGT]?B).*/\1 \2/' <<<"$est_line")
read -r pv pu < <(sed -E 's/.*verification then adds ([0-9.]+) ([KMGT]?B) per document.*/\1 \2/' <<<"$est_line")
read -r reread kept < <(sed -nE 's/.*\(([0-9]+) documents re-read, [0-9]+ of them copies of a text read before, ([0-9]+) sets from the first pass.*/\1 \2/p' "$OUT/stats")
est=$(awk -v e="$(to_mib "$ev" "$eu")" -v p="$(to_mib "$pv" "$pu")" -v n=$((reread + kept)) 'BEGIN { printf "%.0f", e + n * p }')
peaks=""; for r in ${R[dedup]}; do peaks+="$((r / 1024)) "; done
echo "dedup peak memory: $peaks MiB against the estimate $est MiB ($ev $eu + $((reread + kept)) candidate documents x $pv $pu)"
"$ND" pairs "$IN" -o "$OUT/pairs.tsv" --stats 2>&1 | grep -E "stages|neardup: [0-9]" | tail -2

# One 50 MB record against 50 records of 1 MB of the same text (the first 50 MB of the corpus's texts).
python3 - "$IN" "$OUT" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
parts, size = [], 0
with open(src) as f:
    for line in f:
        t = json.loads(line)["text"]
        parts.append(t)
        size += len(t.encode())
        if size >= 50_000_000:
            break
text = "".join(parts).encode()[:50_000_000].decode("utf-8", "ignore")
with open(out + "/one.jsonl", "w") as w:
    w.write(json.dumps({"id": "one", "text": text}) + "\n")
with open(out + "/fifty.jsonl", "w") as w:
    b = text.encode()
    for i in range(50):
        w.write(json.dumps({"id": "part%d" % i, "text": b[i * 1_000_000:(i + 1) * 1_000_000].decode("utf-8", "ignore")}) + "\n")
PY
# Runs of about 0.1 s: 9 alternating runs each, timed in milliseconds (GNU time rounds to 10 ms),
# then one more each under GNU time for the peak.
ms() { local s e; s=$(date +%s%N); "$@"; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
for rep in $(seq 9); do
  T[one]+="$(ms "$ND" pairs "$OUT/one.jsonl" -o /dev/null -q) "
  T[fifty]+="$(ms "$ND" pairs "$OUT/fifty.jsonl" -o /dev/null -q) "
done
t "$ND" pairs "$OUT/one.jsonl" -o /dev/null -q; R[one]=$rss
t "$ND" pairs "$OUT/fifty.jsonl" -o /dev/null -q; R[fifty]=$rss
o=$(echo ${T[one]} | median) f=$(echo ${T[fifty]} | median)
echo "one 50 MB record: $o ms (${T[one]}; peak $((R[one] / 1024)) MiB) against 50 x 1 MB: $f ms (${T[fifty]}; peak $((R[fifty] / 1024)) MiB): $(python3 -c "print(f'{$o/$f:.2f}')")x (target 1.5x)"
