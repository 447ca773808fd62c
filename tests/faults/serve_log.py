#!/usr/bin/env python3
"""Faults injected into `neardup serve`'s write-ahead log and folds, one per run, swept over every
call (strace -e inject, as tests/faults/sweep.py does for the commands).

Each run starts a service on an index of 20 documents under strace, whose Nth call of one kind
(openat, write, pwrite64, fsync, fdatasync, ftruncate, rename, renameat2, linkat) fails with EIO
or ENOSPC, or is interrupted (EINTR); sends six adds and a delete one at a time, then one more
add; and stops it with SIGTERM (the service folds its log). Then, without faults, the index is
folded and read. Every run must hold to:
  * answers are 201/200 (done) or 500 naming the cause (not done), never a broken connection;
    an interrupted call is retried, never reported;
  * the service either starts, or exits 4 with one line; it stops with exit 0, or 4 and one line
    when the last fold fails;
  * the index (`neardup index fold`, then `index verify`) holds every acknowledged change and
    none of the refused ones;
  * after a fault, the next change is taken again unless the service said it needs a restart.

  tests/faults/serve_log.py NEARDUP [--every K]
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

from injection import finish, startup_calls, words
from service import Service

CALLS = ["openat", "write", "pwrite64", "fsync", "fdatasync", "ftruncate", "rename", "renameat2", "linkat"]
ERRORS = ["EIO", "ENOSPC", "EINTR"]


def present(nd, d, probes):
    out = subprocess.run([nd, "index", "query", "idx.ndx", probes, "-q", "--threshold", "0.99"], cwd=d,
                         capture_output=True, text=True, check=True).stdout
    return {l.split("\t")[1] for l in out.splitlines() if l.split("\t")[0] == l.split("\t")[1]}


def one_run(nd, w, under, docs, probes, eintr):
    """The problems of one run in folder w."""
    problems = []
    s = Service(nd, os.path.join(w, "idx.ndx"), under=under, cwd=w)
    if s.port is None:  # the service could not start: exit 4, one line, the index unharmed
        rc, err = s.stop()
        if rc != 4 or len(err.strip().splitlines()) != 1 or eintr:
            problems.append("did not start, exit %d: %s" % (rc, err.strip()[:300]))
        acked, refused = set(), set()
    else:
        acked, refused, needs_restart = set(), set(), False
        for i, (doc_id, text) in enumerate(docs):
            if i == 6:  # a delete of the first add, then the last add
                status, r = s.call("DELETE", "/v1/docs/" + docs[0][0])
                if status == 200:
                    acked.discard(docs[0][0])
                elif status == 500 or (status == 404 and docs[0][0] in refused):
                    pass
                else:
                    problems.append("delete answered %s: %s" % (status, r))
            status, r = s.call("POST", "/v1/add", {"id": doc_id, "text": text, "dedup": False})
            if status == 201:
                acked.add(doc_id)
            elif status == 500 and r and "log" in r.get("error", ""):
                refused.add(doc_id)
                needs_restart = needs_restart or "restart" in r["error"]
            else:
                problems.append("add %s answered %s: %s" % (doc_id, status, r))
        order = [d for d, _ in docs]
        if refused and not needs_restart:  # the one fault over, a later add is taken again
            first = min(order.index(d) for d in refused)
            if first < len(order) - 1 and not any(d in acked for d in order[first + 1:]):
                problems.append("no change was taken after the fault, and no restart was asked for")
        if eintr and refused:
            problems.append("an interrupted call refused a change")
        rc, err = s.stop()
        if rc not in (0, 4) or (rc == 4 and len(err.strip().splitlines()) != 1) or (eintr and rc != 0):
            problems.append("stopped with exit %d: %s" % (rc, err.strip()[:300]))
    fold = subprocess.run([nd, "index", "fold", "idx.ndx", "-q"], cwd=w, capture_output=True, text=True)
    if fold.returncode != 0:
        return problems + ["the index cannot be folded after the run: " + fold.stderr.strip()[:300]]
    verify = subprocess.run([nd, "index", "verify", "idx.ndx", "-q"], cwd=w, capture_output=True, text=True)
    if verify.returncode != 0:
        problems.append("index verify fails: " + verify.stderr.strip()[:300])
    got = present(nd, w, probes)
    if not acked <= got:
        problems.append("acknowledged changes missing: %s" % sorted(acked - got)[:4])
    if got & refused:
        problems.append("refused changes present: %s" % sorted(got & refused)[:4])
    return problems


def main():
    nd = os.path.abspath(sys.argv[1])
    every = int(sys.argv[sys.argv.index("--every") + 1]) if "--every" in sys.argv else 1
    top = tempfile.mkdtemp(prefix="neardup-serve-faults-")
    rng = random.Random(5)
    base = [{"id": "b%d" % i, "text": words(rng, 80)} for i in range(20)]
    docs = [("s%d" % i, words(rng, 80)) for i in range(7)]
    probes = os.path.join(top, "probes.jsonl")
    with open(probes, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in base + [{"id": i, "text": t} for i, t in docs])
    template = os.path.join(top, "template")
    os.mkdir(template)
    with open(os.path.join(template, "base.jsonl"), "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in base)
    subprocess.run([nd, "index", "create", "idx.ndx", "-q"], cwd=template, check=True)
    subprocess.run([nd, "index", "add", "idx.ndx", "base.jsonl", "-q"], cwd=template, check=True)
    startup = startup_calls(nd, CALLS)
    problems, runs = [], 0
    for call in CALLS:
        for err in ERRORS:
            n = startup.get(call, 0) + 1
            while True:
                w = os.path.join(top, "w")
                shutil.rmtree(w, ignore_errors=True)
                shutil.copytree(template, w)
                trace = os.path.join(top, "run.trace")
                under = ["strace", "-f", "-qq", "-o", trace, "-e", "trace=" + call, "-e",
                         "inject=%s:error=%s:when=%d" % (call, err, n)]
                found = one_run(nd, w, under, docs, probes, err == "EINTR")
                if "INJECTED" not in open(trace).read():
                    break
                runs += 1
                problems += ["%s %s at call %d: %s" % (call, err, n, p) for p in found]
                n += every
    finish(top, problems, "%d runs with a fault injected" % runs)


if __name__ == "__main__":
    main()
