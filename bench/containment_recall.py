#!/usr/bin/env python3
"""Recall of containment and top-k search against brute force, and what each costs.

    containment_recall.py NEARDUP KERNEL_TREE [--files N] [--licences N] [--queries N] [--scale-files N]

  * containment: `neardup pairs --measure containment -t 0.5` on kernel files, once as they are
    and once with passages planted (bench/planted_containment.py); recall per containment bin
    against brute force (every pair's word 5-gram sets, counted through an inverted index), and
    pairs reported below the threshold; `pairs` with Jaccard at 0.5 for how many it finds.
  * top k: `neardup index query --top K --skip-same-id` for sample documents of an index of kernel
    files and of the licence files under /usr/share/doc; recall@k per k: the share of the exact
    top k (by similarity, ties alike) among the answers; the time per query against the index's
    LSH query at its threshold.
Texts are folded to ASCII so that Python's word split is exactly the engine's.
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import planted_containment as pc  # noqa: E402

BINS = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0]


def write_jsonl(path, docs):
    with open(path, "w", encoding="utf-8") as f:
        for i, t in docs:
            f.write(json.dumps({"id": i, "text": t}) + "\n")


def read_pairs(path, pos):
    got = {}
    with open(path) as f:
        for line in f:
            a, b, s = line.rstrip("\n").split("\t")
            x, y = sorted((pos[a], pos[b]))
            got[(x, y)] = float(s)
    return got


def run(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def containment(neardup, name, docs, work):
    path = os.path.join(work, name + ".jsonl")
    write_jsonl(path, docs)
    sets = [pc.shingles(t) for _, t in docs]
    t = time.perf_counter()
    expected = pc.containment_pairs(sets, 0.5)
    brute = time.perf_counter() - t
    out = os.path.join(work, name + ".tsv")
    secs = run([neardup, "pairs", path, "--measure", "containment", "-t", "0.5", "-o", out, "-q"])
    pos = {i: n for n, (i, _) in enumerate(docs)}
    got = read_pairs(out, pos)
    jac = os.path.join(work, name + ".jaccard.tsv")
    run([neardup, "pairs", path, "--method", "exact", "-t", "0.5", "-o", jac, "-q"])
    jaccard = len(read_pairs(jac, pos))
    print(f"\ncontainment, {name}: {len(docs)} documents, {len(expected)} pairs at >= 0.5; neardup {secs:.2f} s, "
          f"brute force (Python) {brute:.1f} s; Jaccard >= 0.5 finds {jaccard} pairs")
    print("  bin          pairs  found  recall")
    for lo, hi, want, found in pc.recall_by_bin(expected, got, BINS):
        print(f"  [{lo:.2f}, {hi:.2f})  {want:6d} {found:6d}  {found / want if want else 1:.3f}")
    wrong = [p for p in got if p not in expected or abs(got[p] - expected[p]) > 1e-6]
    print(f"  reported but not at >= 0.5 (or another score): {len(wrong)}")


def fastest(cmd):
    return min(run(cmd) for _ in range(3))


def top_k(neardup, name, docs, queries, work, ks=(1, 5, 10, 50), brute=True):
    path = os.path.join(work, name + ".jsonl")
    write_jsonl(path, docs)
    idx = os.path.join(work, name + ".ndx")
    subprocess.run([neardup, "index", "create", idx, "-q", "--force"], check=True)
    subprocess.run([neardup, "index", "add", idx, path, "-q"], check=True)
    qpath = os.path.join(work, name + ".queries.jsonl")
    write_jsonl(qpath, queries)
    sets = [pc.shingles(t) for _, t in docs] if brute else []
    index = pc._inverted(sets)
    ids = {i: n for n, (i, _) in enumerate(docs)}
    one = os.path.join(work, name + ".one.jsonl")
    write_jsonl(one, queries[:1])
    # A run of one query: opening the index, and for --top building its inverted index; the
    # difference to a run of all of them is the queries' time.
    lsh = fastest([neardup, "index", "query", idx, qpath, "-q", "-o", os.devnull])
    lsh_one = fastest([neardup, "index", "query", idx, one, "-q", "-o", os.devnull])
    top_one = fastest([neardup, "index", "query", idx, one, "--top", "1", "-q", "-o", os.devnull])
    print(f"\ntop k, {name}: {len(docs)} documents indexed, {len(queries)} queries (each leaving itself out); "
          f"the LSH query at 0.8: {(lsh - lsh_one) / (len(queries) - 1) * 1e3:.3f} ms per query; the first exact "
          f"query builds the inverted index: {top_one - lsh_one:.2f} s (runs: best of 3)")
    print("  k    recall@k  ms per query")
    for k in ks:
        out = os.path.join(work, f"{name}.top{k}.tsv")
        secs = fastest([neardup, "index", "query", idx, qpath, "--top", str(k), "--skip-same-id", "-q", "-o", out])
        secs -= top_one
        answers = {}
        with open(out) as f:
            for line in f:
                q, d, s = line.rstrip("\n").split("\t")
                answers.setdefault(q, []).append(float(s))
        hit = total = 0
        for qid, _ in queries if brute else ():
            best = pc.top_k(sets, index, sets[ids[qid]], k + 1)
            best.remove(1.0)  # the query itself, left out by --skip-same-id
            best = best[:k]
            if not best:
                continue
            kth = best[-1]
            got = answers.get(qid, [])
            total += len(best)
            hit += min(len(best), sum(1 for s in got if s >= kth - 1e-6))
        if brute:
            print(f"  {k:<4d} {hit / total if total else 1:.4f}    {secs / (len(queries) - 1) * 1e3:.2f}")
        else:
            print(f"  {k:<4d} -         {secs / (len(queries) - 1) * 1e3:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("neardup")
    ap.add_argument("kernel_tree")
    ap.add_argument("--files", type=int, default=1500)
    ap.add_argument("--licences", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--scale-files", type=int, default=0,
                    help="also time top-k (no brute force) on an index of this many kernel files")
    a = ap.parse_args()
    rng = random.Random(1)
    kernel = [(i, pc.ascii_text(t)) for i, t in pc.read_source(a.kernel_tree, a.files)]
    kernel = [(i, t) for i, t in kernel if pc.words(t)]
    licences = []
    for p in sorted(glob.glob("/usr/share/doc/*/copyright"))[: a.licences]:
        with open(p, "rb") as f:
            licences.append((p, pc.ascii_text(f.read().decode("utf-8", "replace"))))
    with tempfile.TemporaryDirectory() as work:
        containment(a.neardup, "kernel files", kernel, work)
        containment(a.neardup, "kernel files with planted passages", pc.planted(kernel, 300, seed=2), work)
        for name, docs in (("kernel files", kernel), ("licence files", licences)):
            top_k(a.neardup, name, docs, rng.sample(docs, min(a.queries, len(docs))), work)
        if a.scale_files:
            big = [(i, pc.ascii_text(t)) for i, t in pc.read_source(a.kernel_tree, a.scale_files)]
            top_k(a.neardup, "kernel files (timing only)", big, rng.sample(big, a.queries), work, (1, 10), brute=False)


if __name__ == "__main__":
    main()
