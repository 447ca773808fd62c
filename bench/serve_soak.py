#!/usr/bin/env python3
"""A soak of `neardup serve`: queries, adds, deletes and folds for a long time, then every
acknowledged change checked.

    PYTHONPATH=build/python /usr/bin/python3 bench/serve_soak.py CORPUS.jsonl [SECONDS=600] [INDEXED=20000]

INDEXED documents of CORPUS are indexed first; the service then runs with --fold-mb 8 (so that it
folds every few seconds) under two query clients and two change clients (adds of the corpus's
later documents under new ids, and deletes of some they added, which keep each client near 3,000
documents). Every 30 seconds: the rates, the service's own resident memory (RssAnon), the index
file, its documents and folds; at the end, RssAnon again after malloc_trim(0) (through gdb, if
installed). Then the service is stopped (it folds),
`neardup index verify` runs, and the index must hold exactly what the change clients' own record
of acknowledged changes says: every acknowledged add not deleted since, no deleted one, and the
documents indexed first. Exit 1 if anything is missing, extra, or any request failed (a 503 with
Retry-After is honoured, not a failure)."""
import http.client
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import neardup

CLI = os.environ.get("NEARDUP_CLI", "build/neardup")


def trimmed_rss_mib(pid):
    """RssAnon once glibc has given back the free memory of every heap (malloc_trim(0), called in
    the service through gdb): the samples between folds include free blocks that glibc keeps, up
    to its trim threshold per thread's heap, and a growth that survives the trim is a leak."""
    if not shutil.which("gdb"):
        return None
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int)malloc_trim(0)"], capture_output=True)
    return rss_mib(pid)


def rss_mib(pid, kind="RssAnon:"):
    """The service's resident memory of its own (RssAnon: heap, stacks), without the index file's
    mapped pages (RssFile), which come and go with folds and queries."""
    with open("/proc/%d/status" % pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith(kind)) / 1024


class Client:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None):
        """The status and answer; 503 retried after its Retry-After."""
        while True:
            try:
                self.c.request(method, path, body=json.dumps(body) if body is not None else None)
                r = self.c.getresponse()
                data = r.read()
            except (ConnectionError, http.client.HTTPException):
                self.c.close()  # the service closed a kept-alive connection: a new one
                continue
            if r.status == 503 and r.getheader("Retry-After"):
                time.sleep(1)
                continue
            return r.status, json.loads(data) if data else None


def main():
    corpus, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 600
    indexed = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    docs = []
    with open(corpus) as f:
        for line in f:
            docs.append(json.loads(line)["text"][:20000])
            if len(docs) >= indexed + 200000:
                break
    top = tempfile.mkdtemp(prefix="neardup-soak-")
    index = os.path.join(top, "soak.ndx")
    with open(os.path.join(top, "first.jsonl"), "w") as f:
        for i in range(indexed):
            f.write(json.dumps({"id": "first-%d" % i, "text": docs[i]}) + "\n")
    subprocess.run([CLI, "index", "create", index, "-q"], check=True)
    subprocess.run([CLI, "index", "add", index, os.path.join(top, "first.jsonl"), "-q"], check=True)
    proc = subprocess.Popen([CLI, "serve", index, "--listen", "127.0.0.1:0", "--fold-mb", "8", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = int(re.search(r":(\d+)$", proc.stdout.readline().strip()).group(1))
    stop = threading.Event()
    counts = {"query": 0, "add": 0, "delete": 0}
    failures, lock = [], threading.Lock()
    live = [set(), set()]  # per change client: the ids it added and did not delete since

    def count(kind):
        with lock:
            counts[kind] += 1

    def querier(seed):
        c, rng = Client(port), random.Random(seed)
        while not stop.is_set():
            status, r = c.call("POST", "/v1/query", {"text": docs[rng.randrange(len(docs))]})
            if status != 200:
                failures.append(("query", status, r))
            count("query")

    def changer(k):
        c, rng, n = Client(port), random.Random(100 + k), 0
        mine = live[k]
        while not stop.is_set():
            # Deletes keep each client's documents near 3,000 once it has them: the index stays
            # about the same size, so that memory growth would show.
            if mine and rng.random() < (0.5 if len(mine) >= 3000 else 0.2):
                doc_id = rng.choice(sorted(mine)) if len(mine) < 64 else next(iter(mine))
                status, r = c.call("DELETE", "/v1/docs/" + doc_id)
                if status != 200:
                    failures.append(("delete", status, r))
                mine.discard(doc_id)
                count("delete")
            else:
                doc_id = "soak-%d-%d" % (k, n)
                text = docs[indexed + (n * 2 + k) % (len(docs) - indexed)] + " soak %d %d" % (k, n)
                status, r = c.call("POST", "/v1/add", {"id": doc_id, "text": text, "dedup": False})
                if status != 201:
                    failures.append(("add", status, r))
                else:
                    mine.add(doc_id)
                n += 1
                count("add")

    threads = [threading.Thread(target=querier, args=(i,)) for i in range(2)] + \
              [threading.Thread(target=changer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    start = time.time()
    rss_start = rss_mib(proc.pid)
    print("| seconds | queries/s | adds/s | deletes/s | service memory (RssAnon) MiB | index file MiB | documents | folds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    last = dict(counts)
    while time.time() - start < seconds:
        period = min(30, max(0.0, seconds - (time.time() - start)))
        time.sleep(period)
        now = dict(counts)
        _, st = Client(port).call("GET", "/v1/stats")
        print("| %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %d |" % (
            time.time() - start, (now["query"] - last["query"]) / period, (now["add"] - last["add"]) / period,
            (now["delete"] - last["delete"]) / period, rss_mib(proc.pid), os.path.getsize(index) / 2**20,
            st["documents"], st["folds"]), flush=True)
        last = now
    stop.set()
    for t in threads:
        t.join()
    rss_end = rss_mib(proc.pid)
    rss_trimmed = trimmed_rss_mib(proc.pid)
    _, st = Client(port).call("GET", "/v1/stats")
    unfolded = st["log_bytes"] / 2**20  # the changes since the last fold, held in memory too
    proc.send_signal(15)
    rc = proc.wait(timeout=600)
    verify = subprocess.run([CLI, "index", "verify", index, "-q"], capture_output=True, text=True)
    idx = neardup.Index.open(index)
    expected = {"first-%d" % i for i in range(indexed)} | live[0] | live[1]
    missing = [d for d in expected if d not in idx]
    extra = len(idx) - (len(expected) - len(missing))
    print("\n%d queries, %d adds, %d deletes in %.0f s; %d failed requests; service exit %d; index verify exit %d; "
          "memory (RssAnon) %.0f -> %.0f MiB, %s after malloc_trim(0); %d documents expected, %d missing, %d extra" % (
              counts["query"], counts["add"], counts["delete"], time.time() - start, len(failures), rc, verify.returncode,
              rss_start, rss_end, "%.0f MiB (%.0f MiB of changes not yet folded)" % (rss_trimmed, unfolded) if rss_trimmed is not None else "(no gdb)", len(expected),
              len(missing), extra))
    for f in failures[:5]:
        print("failed:", f)
    shutil.rmtree(top, ignore_errors=True)
    sys.exit(1 if failures or rc or verify.returncode or missing or extra else 0)


if __name__ == "__main__":
    main()
