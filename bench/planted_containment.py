#!/usr/bin/env python3
"""A planted containment corpus, and the brute-force answers to check a search against.

From real documents (a JSONL file, .zst allowed, or a folder of text files such as a kernel
tree) it writes, as JSONL: the source documents, then for each planted passage
  * the passage alone: 50-500 consecutive words of a source document (documents joined in
    order when one is too short), with word edits (replaced, dropped or inserted words at a
    rate of 0-5%), as a quotation would be;
  * one to three hosts: other source documents with the passage inserted at a random word.
Texts are folded to ASCII (other characters become spaces), so that the word 5-gram sets this
script computes are exactly the engine's (runs of letters and digits, lowercased).

    planted_containment.py SOURCE OUT.jsonl [--passages N] [--max-docs M] [--seed S]

As a module: planted(), shingles(), containment_pairs() (brute force through an inverted index),
top_k() and recall_by_bin(), for the tests and bench/containment_recall.py.
"""
import argparse
import heapq
import json
import os
import random
import re
import subprocess
import sys
from collections import defaultdict

_WORD = re.compile(r"[a-z0-9]+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def ascii_text(text):
    return _NON_ASCII.sub(" ", text)


def words(text):
    return _WORD.findall(text.lower())


def shingles(text, k=5):
    """The distinct word k-grams of a text (a shorter text: its words as one shingle)."""
    w = words(text)
    if len(w) < k:
        return {tuple(w)} if w else set()
    return {tuple(w[i:i + k]) for i in range(len(w) - k + 1)}


def read_source(path, max_docs):
    """[(id, text)] of a JSONL file (.zst decompressed with the zstd tool) or a folder of files."""
    docs = []
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for f in sorted(files):
                p = os.path.join(root, f)
                try:
                    with open(p, "rb") as fh:
                        data = fh.read(1 << 20)
                except OSError:
                    continue
                if b"\0" in data:
                    continue
                docs.append((os.path.relpath(p, path), data.decode("utf-8", "replace")))
                if len(docs) >= max_docs:
                    return docs
        return docs
    if path.endswith(".zst"):
        lines = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout.decode().splitlines()
    else:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    for i, line in enumerate(lines[:max_docs]):
        r = json.loads(line)
        docs.append((str(r.get("id", i)), r["text"]))
    return docs


def _edit(ws, rate, vocab, rng):
    out = []
    for w in ws:
        x = rng.random()
        if x < rate / 3:
            continue  # dropped
        if x < 2 * rate / 3:
            out.append(rng.choice(vocab))  # replaced
            continue
        out.append(w)
        if x < rate:
            out.append(rng.choice(vocab))  # a word inserted after it
    return out


def planted(source, passages, seed=1):
    """The source documents (ASCII, 50 words or more) and the planted passages and hosts:
    [(id, text)]."""
    rng = random.Random(seed)
    docs = [(i, ascii_text(t)) for i, t in source if len(words(t)) >= 50]
    if len(docs) < 4:
        raise SystemExit("planted_containment: the source needs 4 documents of 50 words or more")
    split = [t.split() for _, t in docs]
    vocab = sorted({w for ws in split[:200] for w in ws})
    out = list(docs)
    for p in range(passages):
        length = rng.randint(50, 500)
        at = rng.randrange(len(docs))
        ws = []
        for j in range(at, at + len(docs)):  # documents joined in order when one is too short
            ws += split[j % len(docs)]
            if len(ws) >= length:
                break
        start = rng.randrange(len(ws) - min(length, len(ws)) + 1)
        passage = _edit(ws[start:start + length], rng.choice([0.0, 0.0, 0.01, 0.02, 0.05]), vocab, rng)
        out.append((f"passage{p}", " ".join(passage)))
        for h in range(rng.randint(1, 3)):
            host = split[rng.randrange(len(docs))]
            cut = rng.randrange(len(host) + 1)
            out.append((f"host{p}.{h}", " ".join(host[:cut] + passage + host[cut:])))
    return out


def _inverted(sets):
    index = defaultdict(list)
    for d, s in enumerate(sets):
        for x in s:
            index[x].append(d)
    return index


def containment_pairs(sets, t):
    """{(a, b): share} for every pair a < b whose smaller set shares at least t of itself (exactly:
    common >= ceil(t |smaller|) - 1e-9 slack for the float), by counting through an inverted index."""
    index = _inverted(sets)
    pairs = {}
    for a, s in enumerate(sets):
        counts = defaultdict(int)
        for x in s:
            for b in index[x]:
                if b > a:
                    counts[b] += 1
        for b, c in counts.items():
            small = min(len(s), len(sets[b]))
            if small and c >= t * small - 1e-9:
                pairs[(a, b)] = c / small
    return pairs


def top_k(sets, index, q, k):
    """The k best Jaccard similarities (above 0) of q with the sets, best first."""
    counts = defaultdict(int)
    for x in q:
        for d in index.get(x, ()):
            counts[d] += 1
    sims = (c / (len(q) + len(sets[d]) - c) for d, c in counts.items())
    return heapq.nlargest(k, sims)


def recall_by_bin(expected, found, edges):
    """[(lo, hi, expected pairs, found of them)] over the bins [edges[i], edges[i+1])."""
    rows = []
    for lo, hi in zip(edges, edges[1:]):
        want = [p for p, s in expected.items() if lo <= s < hi or (hi >= 1.0 and s == 1.0)]
        rows.append((lo, hi, len(want), sum(1 for p in want if p in found)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--passages", type=int, default=300)
    ap.add_argument("--max-docs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    docs = planted(read_source(a.source, a.max_docs), a.passages, a.seed)
    with open(a.out, "w", encoding="utf-8") as f:
        for i, t in docs:
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    print(f"planted_containment: {len(docs)} documents, {a.passages} passages, in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
