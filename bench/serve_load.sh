#!/usr/bin/env bash
# Load test of `neardup serve` on loopback with wrk: an index of DOCS kernel-source documents
# (files of the kernel tree, those over 16 KB cut into 16 KB pieces at line ends: kernel-file-
# sized), then CONNS concurrent keep-alive clients for SECONDS per run, bounded in count and time:
#   queries only   POST /v1/query with documents held out of the index and near-copies of indexed ones
#   adds only      POST /v1/add of held-out documents under fresh ids (dedup off: each one logged and synced)
#   mixed          9 queries to 1 add
# wrk runs on the same 2 cores as the service, so the figures include its cost. Throughput and
# p50/p99/p99.9 latency per run, and the service's own per-endpoint histogram from /metrics.
#   bench/serve_load.sh bench/data/kernel-1100mb.jsonl [DOCS=100000] [CONNS=16] [SECONDS=15]
# RUNS="mixed:10" chooses the runs (name:percent of adds); WORK=DIR keeps the index between calls.
set -euo pipefail
IN=$1 DOCS=${2:-100000} CONNS=${3:-16} SECS=${4:-15}
BUILD=${BUILD:-build}
ND=$(realpath "$BUILD/neardup")
HERE=$(cd "$(dirname "$0")" && pwd)
export WORK=${WORK:-$(mktemp -d)}
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
command -v wrk >/dev/null || { echo "serve_load: needs wrk (apt-get install wrk)" >&2; exit 2; }

# Documents: DOCS to index, 4,000 held out (new texts), 4,000 near-copies of indexed ones.
[ -f "$WORK/add.bodies" ] || python3 - "$IN" "$WORK" "$DOCS" <<'PY'
import json, random, sys
src, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
pieces = []
with open(src) as f:
    for line in f:
        r = json.loads(line)
        t = r["text"]
        k = 0
        while t:
            cut = len(t) if len(t) <= 16384 else (t.rfind("\n", 0, 16384) + 1 or 16384)
            pieces.append((r["id"] + ("#%d" % k if k or len(t) > cut else ""), t[:cut]))
            t, k = t[cut:], k + 1
        if len(pieces) >= n + 4000:
            break
random.Random(7).shuffle(pieces)
indexed, held = pieces[:n], pieces[n:n + 4000]
with open(work + "/index.jsonl", "w") as f:
    for i, t in indexed:
        f.write(json.dumps({"id": i, "text": t}) + "\n")
rnd = random.Random(8)
def near_copy(t):
    w = t.split(" ")
    for _ in range(max(1, len(w) // 100)):
        w[rnd.randrange(len(w))] = "edited"
    return " ".join(w)
with open(work + "/query.bodies", "w") as f:
    for i, t in held + [(i, near_copy(t)) for i, t in indexed[:4000]]:
        f.write(json.dumps({"text": t}) + "\n")
with open(work + "/add.bodies", "w") as f:  # dedup off: every add is logged and synced
    for i, t in held:
        f.write(json.dumps({"dedup": False, "text": t}) + "\n")
sizes = sorted(len(t) for _, t in indexed)
print("documents: %d indexed (median %d bytes, mean %d), %d held out" % (len(indexed), sizes[len(sizes) // 2], sum(sizes) // len(sizes), len(held)))
PY

IDX=$WORK/kernel.ndx
if [ ! -f "$IDX" ]; then
  "$ND" index create "$IDX" -q
  /usr/bin/time -f "index add: %e s, %M KB peak" "$ND" index add "$IDX" "$WORK/index.jsonl" -q
fi
"$ND" index stats "$IDX" | sed -n '3,4p'

run() {  # run NAME MIX: MIX = share of adds in percent
  rm -f "$IDX.wal"
  "$ND" serve "$IDX" --listen 127.0.0.1:0 --fold-mb 100000 2> "$WORK/serve.err" &
  local pid=$!
  for _ in $(seq 100); do grep -q "on http" "$WORK/serve.err" 2>/dev/null && break; sleep 0.1; done
  local url
  url=$(grep -o 'http://[^ ]*' "$WORK/serve.err")
  ADD_SHARE=$2 RUN_TAG=$1 wrk -t2 -c"$CONNS" -d"${SECS}s" --timeout 10s -s "$HERE/serve_load.lua" "$url" > "$WORK/wrk.$1" 2>&1 || true
  echo "== $1 ($2% adds), $CONNS connections, ${SECS} s"
  grep -E "Requests/sec|Non-2xx|Socket errors" "$WORK/wrk.$1" || true
  grep "^latency" "$WORK/wrk.$1" || true
  # The service's own view per endpoint: p50/p99/p99.9 from its histogram (the bucket bound
  # at or above each quantile), the mean, and the syncs per change.
  curl -s "$url/metrics" | python3 -c '
import re, sys
b, n, s, g = {}, {}, {}, {}
for line in sys.stdin:
    m = re.match(r"neardup_request_seconds_bucket\{endpoint=\"(\w+)\",le=\"([^\"]+)\"\} (\d+)", line)
    if m: b.setdefault(m[1], []).append((float(m[2]), int(m[3])))
    m = re.match(r"neardup_request_seconds_(sum|count)\{endpoint=\"(\w+)\"\} ([\d.]+)", line)
    if m: (s if m[1] == "sum" else n)[m[2]] = float(m[3])
    m = re.match(r"(neardup_log_syncs_total|neardup_changes_total) ([\d.e+]+)", line)
    if m: g[m[1]] = float(m[2])
def q(ep, f):
    total = b[ep][-1][1]
    return next(le for le, c in b[ep] if c >= f * total)
for ep in ("query", "add"):
    if ep in b:
        print("service %-5s: %d requests, mean %.2f ms, p50 <= %g ms, p99 <= %g ms, p99.9 <= %g ms" % (ep, n[ep], 1e3 * s[ep] / n[ep],
              1e3 * q(ep, .5), 1e3 * q(ep, .99), 1e3 * q(ep, .999)))
if g.get("neardup_changes_total"):
    print("log: %d changes in %d syncs" % (g["neardup_changes_total"], g["neardup_log_syncs_total"]))
' || true
  kill -TERM "$pid"; wait "$pid" || true
  # The adds of a run are removed again for the next one: the index is rebuilt only when missing.
  "$ND" index verify "$IDX" -q
}
# Each run adds documents; restore the index between runs from a copy.
cp "$IDX" "$WORK/kernel.ndx.orig"
for r in ${RUNS:-queries:0 adds:100 mixed:10}; do
  sync  # the copy's dirty pages would otherwise be written back during the run, stalling its log syncs
  run "${r%%:*}" "${r##*:}"
  cp "$WORK/kernel.ndx.orig" "$IDX"
  rm -f "$IDX.wal"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%Y-%m-%d)"
