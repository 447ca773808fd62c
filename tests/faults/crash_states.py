#!/usr/bin/env python3
"""Power loss for the index and the service's log: every state a crash could leave reopens to a
valid index that holds every acknowledged change.

The method of Pillai et al., "All File Systems Are Not Created Equal" (OSDI 2014): record what a
run writes and syncs, then build the file states a crash could leave (cut at a sync, unsynced
writes dropped, torn, or reordered as POSIX allows) and open each.

1. The order of syncs and renames (`strace -y` of `index fold` of a service's log, of
   `index add` and of a `dedup` with three outputs): every file moved into place was synced
   before the move, and the directory is synced after it (for the index, before any later move).
   So a crash leaves each file old or new, and a later move of the index's never persists
   without an earlier one (the folded index before its new log).
2. The log: a service is sent adds and deletes one at a time, each acknowledged only after the
   log was synced (its size then is a sync point). For every acknowledged change k, and for cuts
   between sync point k and k + 1 (the torn write of change k + 1, the rest dropped, or left as
   zeros or as garbage, as a file system may show unsynced appended blocks), the index folded
   (`neardup index fold`) must hold changes 1..k exactly (1..k + 1 when the record is whole).
3. A fold's three crash states (old index and old log; new index and old log; new index and new
   log) all open to the same documents.

  tests/faults/crash_states.py NEARDUP [--every-byte]   (every cut, not a few per record)
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

from injection import finish, words
from service import Service

LOG_HEADER, RECORD_HEADER = 64, 16


def run(nd, *args, cwd=None, check=True):
    r = subprocess.run([nd, *args], cwd=cwd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("neardup %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


def documents(nd, index, probes):
    """The ids of `probes` (a JSONL file of every document ever added) that the index holds: each
    finds itself at similarity 1."""
    out = run(nd, "index", "query", index, probes, "-q", "--threshold", "0.99").stdout
    return {line.split("\t")[1] for line in out.splitlines() if line.split("\t")[0] == line.split("\t")[1]}


def check_order(nd, top):
    """Part 1: each move into place follows a sync of the file and is followed by a sync of its
    directory before the next move."""
    problems = []
    d = os.path.join(top, "order")
    os.mkdir(d)
    rng = random.Random(3)
    with open(os.path.join(d, "a.jsonl"), "w") as f:
        for i in range(50):
            f.write(json.dumps({"id": "a%d" % i, "text": words(rng, 80)}) + "\n")
    run(nd, "index", "create", "idx.ndx", "-q", cwd=d)
    s = Service(nd, os.path.join(d, "idx.ndx"))
    s.must("POST", "/v1/add", {"id": "s1", "text": words(rng, 80)})
    s.kill()
    with open(os.path.join(d, "kept.jsonl"), "w") as f:
        f.write("old\n")  # replaced (exchanged); --removed and --clusters are new
    # The index's moves are ordered (the folded index persists before its new log); a dedup's
    # outputs are independent files, each old or new after a crash, moved one after the other
    # and their directory synced once after the last.
    commands = [(["index", "fold", "idx.ndx", "-q"], True), (["index", "add", "idx.ndx", "a.jsonl", "-q"], True),
                (["dedup", "a.jsonl", "-o", "kept.jsonl", "--removed", "removed.tsv", "--clusters", "clusters.tsv", "-q"], False)]
    for args, ordered in commands:
        trace = os.path.join(top, "order.trace")
        subprocess.run(["strace", "-f", "-y", "-qq", "-o", trace, "-e",
                        "trace=fsync,fdatasync,rename,renameat2,linkat,write,pwrite64,ftruncate", nd, *args],
                       cwd=d, check=True, capture_output=True)
        found = order_problems(open(trace).read().splitlines(), d, ordered)
        problems += ["%s: %s" % (" ".join(args[:2]), p) for p in found]
    return problems


def order_problems(lines, cwd, ordered=True):
    """Problems in the order of an strace -y trace's writes, syncs, links and moves (of a command
    run in `cwd`): each file moved is synced before; with `ordered`, each move's directory is
    synced before the next move, else once after the last."""
    synced = {}        # a file (the path strace gives its descriptor) -> whether its writes were synced
    fd_file = {}       # descriptor -> that path
    named = {}         # a name given by linkat -> the file it names
    unsynced_dir = None  # the directory of a move, until it is synced
    problems = []
    for line in lines:
        m = re.search(r"(\w+)\((.*)\) += (-?\d+)", line)
        if not m or int(m.group(3)) < 0:
            continue
        call, args = m.group(1), m.group(2)
        fd = re.match(r"(\d+)<(.*?)>(\(deleted\))?,?", args)
        if fd:
            fd_file[fd.group(1)] = fd.group(2)
        if call in ("write", "pwrite64", "ftruncate") and fd:
            synced[fd.group(2)] = False
        elif call in ("fsync", "fdatasync") and fd:
            synced[fd.group(2)] = True
            if fd.group(2) == unsynced_dir:
                unsynced_dir = None
        elif call == "linkat":
            link = re.search(r'"/proc/self/fd/(\d+)", AT_FDCWD<([^>]*)>, "([^"]+)"', args)
            if link:
                named[os.path.join(link.group(2), link.group(3))] = fd_file.get(link.group(1))
        elif call in ("rename", "renameat2"):
            moves = re.findall(r'AT_FDCWD<([^>]*)>, "([^"]+)"', args) or [(cwd, p) for p in re.findall(r'"([^"]+)"', args)]
            if len(moves) != 2:
                problems.append("a move not understood: " + line)
                continue
            source, target = (os.path.normpath(os.path.join(at, p)) for at, p in moves)
            if unsynced_dir and ordered:
                problems.append("%s moved before the directory of the move before it was synced" % target)
            if not synced.get(named.get(source, source), False):
                problems.append("%s moved into place before it was synced" % target)
            unsynced_dir = os.path.dirname(target)
    if unsynced_dir:
        problems.append("the last move's directory was never synced")
    return problems


def check_log(nd, top, every_byte):
    """Parts 2 and 3."""
    problems = []
    d = os.path.join(top, "log")
    os.mkdir(d)
    rng = random.Random(7)
    base = [{"id": "b%d" % i, "text": words(rng, 90)} for i in range(20)]
    added = [{"id": "s%d" % i, "text": words(rng, 90)} for i in range(10)]
    with open(os.path.join(d, "base.jsonl"), "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in base)
    with open(os.path.join(d, "probes.jsonl"), "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in base + added)
    run(nd, "index", "create", "idx.ndx", "-q", cwd=d)
    run(nd, "index", "add", "idx.ndx", "base.jsonl", "-q", cwd=d)
    shutil.copy(os.path.join(d, "idx.ndx"), os.path.join(top, "index.before"))
    # Changes one at a time; the log's size after each acknowledgement is a sync point.
    changes = [("add", x) for x in added[:6]] + [("delete", base[2]), ("add", added[6]), ("delete", added[0])] + \
              [("add", x) for x in added[7:]]
    s = Service(nd, os.path.join(d, "idx.ndx"))
    log = os.path.join(d, "idx.ndx.wal")
    sizes = [os.path.getsize(log)]
    expected = [{x["id"] for x in base}]
    for kind, x in changes:
        if kind == "add":
            s.must("POST", "/v1/add", {"id": x["id"], "text": x["text"], "dedup": False})
            expected.append(expected[-1] | {x["id"]})
        else:
            s.must("DELETE", "/v1/docs/" + x["id"])
            expected.append(expected[-1] - {x["id"]})
        sizes.append(os.path.getsize(log))
    s.kill()  # power loss: nothing folded, the log as synced
    data = open(log, "rb").read()
    trial = os.path.join(top, "trial")
    garbage = bytes(random.Random(1).randrange(256) for _ in range(1 << 16))
    states = 0
    for k in range(len(changes)):
        lo, hi = sizes[k], sizes[k + 1]
        cuts = range(lo, hi + 1) if every_byte else sorted({lo, lo + 1, lo + RECORD_HEADER - 1, lo + RECORD_HEADER,
                                                           (lo + hi) // 2, hi - 1, hi})
        for cut in cuts:
            for tail in ("dropped", "zeros", "garbage"):
                if tail != "dropped" and cut == hi:
                    continue
                body = data[:cut] + {"dropped": b"", "zeros": bytes(hi - cut), "garbage": garbage[:hi - cut]}[tail]
                shutil.rmtree(trial, ignore_errors=True)
                os.mkdir(trial)
                shutil.copy(os.path.join(top, "index.before"), os.path.join(trial, "idx.ndx"))
                with open(os.path.join(trial, "idx.ndx.wal"), "wb") as f:
                    f.write(body)
                states += 1
                what = "log cut at %d (change %d of %d, bytes %d-%d), tail %s" % (cut, k + 1, len(changes), lo, hi, tail)
                r = run(nd, "index", "fold", "idx.ndx", "-q", cwd=trial, check=False)
                if r.returncode != 0:
                    problems.append(what + ": fold refused it: " + r.stderr.strip()[:200])
                    continue
                got = documents(nd, os.path.join(trial, "idx.ndx"), os.path.join(d, "probes.jsonl"))
                want = expected[k + 1] if cut == hi else expected[k]
                if got != want:
                    problems.append(what + ": holds %s, not %s" % (sorted(got ^ want)[:5], "the acknowledged changes"))
                run(nd, "index", "verify", "idx.ndx", "-q", cwd=trial)
    # Part 3: the fold's crash states, from the whole log.
    fold = os.path.join(top, "fold")
    os.mkdir(fold)
    shutil.copy(os.path.join(top, "index.before"), os.path.join(fold, "idx.ndx"))
    shutil.copy(log, os.path.join(fold, "idx.ndx.wal"))
    old_log = open(log, "rb").read()
    run(nd, "index", "fold", "idx.ndx", "-q", cwd=fold)
    for name, index, wal in (("before the fold", os.path.join(top, "index.before"), old_log),
                             ("index moved, log not", os.path.join(fold, "idx.ndx"), old_log),
                             ("after the fold", os.path.join(fold, "idx.ndx"), open(os.path.join(fold, "idx.ndx.wal"), "rb").read())):
        shutil.rmtree(trial, ignore_errors=True)
        os.mkdir(trial)
        shutil.copy(index, os.path.join(trial, "idx.ndx"))
        with open(os.path.join(trial, "idx.ndx.wal"), "wb") as f:
            f.write(wal)
        states += 1
        run(nd, "index", "fold", "idx.ndx", "-q", cwd=trial)
        got = documents(nd, os.path.join(trial, "idx.ndx"), os.path.join(d, "probes.jsonl"))
        if got != expected[-1]:
            problems.append("fold crash state '%s': holds %s" % (name, sorted(got ^ expected[-1])[:5]))
    return problems, states


def main():
    nd = os.path.abspath(sys.argv[1])
    top = tempfile.mkdtemp(prefix="neardup-crash-")
    problems = check_order(nd, top)
    more, states = check_log(nd, top, "--every-byte" in sys.argv)
    problems += more
    finish(top, problems, "%d crash states opened" % states)


if __name__ == "__main__":
    main()
