#!/usr/bin/env python3
"""Faults injected into neardup's system calls, one per run, swept over every call.

For each command (dedup with four outputs, pairs, dedup with its band keys spilled, index add
--dedup, index fold; and for its syncs and renames, a dedup whose 40 MB output is synced while it
is written) and each kind of call that reads, writes, syncs or moves files, the Nth call of that
kind is made to fail (EIO, ENOSPC) or to be interrupted (EINTR), for every N the run makes, with
`strace -e inject` (the calls the dynamic loader makes before neardup runs are left alone: they
are counted on `neardup --version`).
After each run:
  * exit 0: every output identical to a clean run's, nothing on stderr (EINTR must end so:
    interrupted calls are retried, never reported);
  * otherwise: a documented exit code (4 for I/O, 1 for out of memory), a single line
    `neardup: error: ...`, every output as it was before the run (new ones absent, existing ones
    unchanged), no temporary file, the inputs unchanged, and the index passing `index verify`
    and equal to its state before or after the change, never between.

With --short-io LIB (tests/faults/short_io.cpp), each command also runs with every read and
write cut short (LD_PRELOAD), and must give the clean run's outputs.

  tests/faults/sweep.py NEARDUP [--every K] [--short-io LIB] [--calls openat,write,...]
  (K > 1: every Kth N only; --calls: those kinds only)
"""
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

from injection import finish, startup_calls
from service import Service

CALLS = ["openat", "read", "pread64", "write", "pwrite64", "copy_file_range", "fsync", "fdatasync", "ftruncate",
         "fallocate", "close", "rename", "renameat2", "linkat", "mmap"]
ERRORS = ["EIO", "ENOSPC", "EINTR"]
NO_EINTR = {"mmap"}  # cannot be interrupted


def corpus(path, seed, n=160, copies=50):
    """JSONL documents of 60-120 words, with near-copies (3 words changed) of some of them."""
    rng = random.Random(seed)
    words = ["w%d" % i for i in range(3000)]
    docs = [[rng.choice(words) for _ in range(rng.randint(60, 120))] for _ in range(n)]
    for _ in range(copies):
        d = list(rng.choice(docs))
        for _ in range(3):
            d[rng.randrange(len(d))] = rng.choice(words)
        docs.insert(rng.randrange(len(docs)), d)
    with open(path, "w") as f:
        for i, d in enumerate(docs):
            f.write('{"id": "%s-%d", "text": "%s"}\n' % (os.path.basename(path), i, " ".join(d)))


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def state(d):
    """Every file of folder d with its digest, but an index's lock file (it names its last
    holder, for messages only, and is made by the first run that takes the lock)."""
    return {n: digest(os.path.join(d, n)) for n in sorted(os.listdir(d)) if not n.endswith(".lock")}


def input_state(d):
    """Every input of folder d with its digest, or for one over 1 MB its size and modification
    time (hashing it after each of a thousand runs would take most of the sweep's time)."""
    def one(p):
        st = os.stat(p)
        return digest(p) if st.st_size <= 1 << 20 else (st.st_size, st.st_mtime_ns)
    return {n: one(os.path.join(d, n)) for n in sorted(os.listdir(d))}


def serve_and_kill(nd, index, docs):
    """Adds the documents of `docs` and deletes one through `neardup serve`, then kills it."""
    s = Service(nd, index)
    body = [{"id": json.loads(l)["id"], "text": json.loads(l)["text"], "dedup": False} for l in open(docs)]
    for method, path, data in [("POST", "/v1/add", b) for b in body] + [("DELETE", "/v1/docs/a.jsonl-3", None)]:
        s.must(method, path, data)
    s.kill()


def large_corpus(path, seed, mb=40):
    """Documents of 20 phrases each, drawn from 2,000 phrases of 50 words: no two alike at J 0.8,
    so that a dedup keeps them all, an output larger than the bytes between two of the syncs made
    while an output is written (src/io/sync_behind.h)."""
    rng = random.Random(seed)
    phrases = [" ".join("w%d" % rng.randrange(20000) for _ in range(50)) for _ in range(2000)]
    with open(path, "w") as f:
        i = 0
        while f.tell() < mb << 20:
            f.write('{"id": "big-%d", "text": "%s"}\n' % (i, " ".join(rng.choice(phrases) for _ in range(20))))
            i += 1


class Case:
    """A command swept over `calls` (every kind when None), which must make each of `must_make`."""
    def __init__(self, name, args, setup, calls=None, must_make=()):
        self.name, self.args, self.setup, self.calls, self.must_make = name, args, setup, calls, must_make


INDEX_FILES = ("idx.ndx", "idx.ndx.wal")


def check(nd, w, r, err, before, after):
    """What is wrong with the run r in folder w (its outputs were `before` it, a clean run leaves
    `after`)."""
    problems = []
    now = state(w)
    lines = r.stderr.strip().split("\n")
    if r.returncode == 0:
        if now != after:
            problems.append("exit 0 but the outputs differ from a clean run's")
        if r.stderr:
            problems.append("exit 0 with a message: " + r.stderr.strip()[:200])
    else:
        if err == "EINTR":
            problems.append("an interrupted call was reported: " + lines[0][:200])
        if r.returncode not in (1, 4) or (r.returncode == 1 and not any(
                m in lines[0] for m in ("out of memory", "cannot start a thread"))):
            problems.append("exit %d: %s" % (r.returncode, r.stderr.strip()[:300]))
        if len(lines) != 1 or not lines[0].startswith("neardup: error: "):
            problems.append("not one error line: " + r.stderr.strip()[:300])
        outputs = {n: d for n, d in now.items() if n not in INDEX_FILES}
        if outputs != {n: d for n, d in before.items() if n not in INDEX_FILES}:
            problems.append("the failed run changed its outputs: %s" % sorted(outputs.items())[:4])
    if "idx.ndx" in now:
        # The index as before the change (with the log it had), or as after it; never between.
        as_before = all(now.get(n) == before.get(n) for n in INDEX_FILES)
        if not as_before and now["idx.ndx"] != after["idx.ndx"]:
            problems.append("the index is neither as before nor as after the change")
        if not as_before or "idx.ndx.wal" not in now:
            v = subprocess.run([nd, "index", "verify", "idx.ndx", "-q"], cwd=w, capture_output=True, text=True)
            if v.returncode != 0:
                problems.append("index verify fails: " + v.stderr.strip()[:200])
    return problems


def main():
    nd = os.path.abspath(sys.argv[1])
    every = int(sys.argv[sys.argv.index("--every") + 1]) if "--every" in sys.argv else 1
    short_io = os.path.abspath(sys.argv[sys.argv.index("--short-io") + 1]) if "--short-io" in sys.argv else None
    calls = sys.argv[sys.argv.index("--calls") + 1].split(",") if "--calls" in sys.argv else CALLS
    if not shutil.which("strace"):
        sys.exit("strace is needed (Debian: strace; scripts/install-deps.sh installs it)")
    top = tempfile.mkdtemp(prefix="neardup-faults-")
    inputs = os.path.join(top, "in")
    os.mkdir(inputs)
    corpus(os.path.join(inputs, "a.jsonl"), 1)
    corpus(os.path.join(inputs, "b.jsonl"), 2, n=60, copies=30)
    large_corpus(os.path.join(inputs, "large.jsonl"), 3)
    ins = input_state(inputs)
    a, b = os.path.join(inputs, "a.jsonl"), os.path.join(inputs, "b.jsonl")

    def dedup_setup(w):  # an old -o and --removed to keep or replace; --clusters and --rejects new
        for n in ("kept.jsonl", "removed.tsv"):
            with open(os.path.join(w, n), "w") as f:
                f.write("old\n")

    def index_setup(w):
        subprocess.run([nd, "index", "create", os.path.join(w, "idx.ndx"), "-q"], check=True)
        subprocess.run([nd, "index", "add", os.path.join(w, "idx.ndx"), a, "-q"], check=True)

    # An index with a service's unfolded log: adds and a delete acknowledged, then the service
    # killed (SIGKILL: no fold on the way out).
    logged = os.path.join(top, "logged")
    os.mkdir(logged)
    index_setup(logged)
    serve_and_kill(nd, os.path.join(logged, "idx.ndx"), b)

    def fold_setup(w):
        for n in ("idx.ndx", "idx.ndx.wal"):
            shutil.copy(os.path.join(logged, n), os.path.join(w, n))

    cases = [
        Case("dedup", ["dedup", a, b, "-o", "kept.jsonl", "--removed", "removed.tsv", "--clusters", "clusters.tsv",
                       "--rejects", "rejects.jsonl", "--on-error", "skip", "-j", "2"], dedup_setup),
        Case("pairs", ["pairs", a, b, "-o", "pairs.tsv", "-j", "2"], lambda w: None),
        # The band keys spilled to nameless files in the temporary folder, written and read back.
        Case("dedup, keys spilled", ["dedup", a, b, "-o", "kept.jsonl", "--memory-limit", "1K", "-j", "2"], lambda w: None),
        Case("index add", ["index", "add", "idx.ndx", b, "--dedup", "-o", "added.tsv", "-j", "2"], index_setup),
        Case("index fold", ["index", "fold", "idx.ndx"], fold_setup),
        # An output synced while it is written: its syncs and moving it into place.
        Case("dedup, large output", ["dedup", os.path.join(inputs, "large.jsonl"), "-o", "kept.jsonl", "-j", "2"], lambda w: None,
             ["fdatasync", "fsync", "renameat2", "rename", "linkat"], must_make=["fdatasync"]),
    ]
    problems = []
    # Calls the loader and the C library make before neardup's own code: left alone.
    startup = startup_calls(nd, CALLS)

    runs = 0
    for case in cases:
        clean = os.path.join(top, "clean")
        shutil.rmtree(clean, ignore_errors=True)
        os.mkdir(clean)
        case.setup(clean)
        before = state(clean)
        r = subprocess.run([nd] + case.args + ["-q"], cwd=clean, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("%s: the clean run failed: %s" % (case.name, r.stderr))
        after = state(clean)
        if short_io:  # every read and write short: the same outputs
            w = os.path.join(top, "w")
            shutil.rmtree(w, ignore_errors=True)
            os.mkdir(w)
            case.setup(w)
            r = subprocess.run([nd] + case.args + ["-q"], cwd=w, capture_output=True, text=True,
                               env=dict(os.environ, LD_PRELOAD=short_io))
            problems += ["%s: short reads and writes: %s" % (case.name, p) for p in check(nd, w, r, "EINTR", before, after)]
        for call in calls:
            if case.calls is not None and call not in case.calls:
                continue
            for err in ERRORS:
                if err == "EINTR" and call in NO_EINTR:
                    continue
                n = startup.get(call, 0) + 1
                while True:
                    w = os.path.join(top, "w")
                    shutil.rmtree(w, ignore_errors=True)
                    os.mkdir(w)
                    case.setup(w)
                    trace = os.path.join(top, "run.trace")
                    r = subprocess.run(["strace", "-f", "-qq", "-o", trace, "-e", "trace=" + call,
                                        "-e", "inject=%s:error=%s:when=%d" % (call, err, n), nd] + case.args + ["-q"],
                                       cwd=w, capture_output=True, text=True, timeout=120)
                    injected = "INJECTED" in open(trace).read()
                    if not injected:
                        break
                    runs += 1
                    what = "%s: %s %s at call %d" % (case.name, call, err, n)
                    problems += [what + ": " + p for p in check(nd, w, r, err, before, after)]
                    if input_state(inputs) != ins:
                        problems.append(what + ": an input changed")
                    n += every
                if err == ERRORS[0] and call in case.must_make and n == startup.get(call, 0) + 1:
                    problems.append("%s: no %s call to fail: the output was not synced while it was written" % (case.name, call))
    finish(top, problems, "%d runs with a fault injected" % runs)


if __name__ == "__main__":
    main()
