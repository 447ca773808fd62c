#!/usr/bin/env python3
"""A synthetic corpus of short documents (chat and forum messages, titles, instructions): DOCS
JSONL records of MIN-MAX words drawn from a Zipf vocabulary, of which a share of originals get
near-copies (a few words changed, some exact copies), in clusters whose sizes follow a power law.

    bench/short_docs.py OUT.jsonl [--docs 1000000] [--words 30-60] [--vocab 50000]
        [--duplicated 0.10] [--copies 1-199] [--exponent 1.65] [--edits 0.0-0.04]
        [--exact 0.3] [--seed 7]

--duplicated 0 gives a copy-free corpus. Otherwise that share of the originals gets near-copies:
a count from --copies with P(k) proportional to k^-exponent (1.65: about 7.5 copies on average,
so with 10% of originals duplicated about 43% of the documents are removable), each a copy with a
share of its words (uniform in --edits) replaced by other words, or, with probability --exact,
the same text. Copies are placed at random among the originals, as a crawl or a shard holds them.
Prints the counts (documents, originals, copies, the removable share) on stderr. Memory: about
60 bytes per document (50 million: 3 GB); 10 million take 2 minutes.
"""
import argparse
import json
import sys

import numpy as np


def span(text, kind):
    lo, _, hi = text.partition("-")
    return kind(lo), kind(hi or lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--words", default="30-60")
    ap.add_argument("--vocab", type=int, default=50_000)
    ap.add_argument("--duplicated", type=float, default=0.10)
    ap.add_argument("--copies", default="1-199")
    ap.add_argument("--exponent", type=float, default=1.65)
    ap.add_argument("--edits", default="0.0-0.04")
    ap.add_argument("--exact", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    wmin, wmax = span(a.words, int)
    cmin, cmax = span(a.copies, int)
    emin, emax = span(a.edits, float)

    # Copies per duplicated original: a truncated power law; the originals so many that the
    # total is DOCS.
    ks = np.arange(cmin, cmax + 1)
    pk = ks ** -a.exponent
    pk /= pk.sum()
    mean_copies = float((ks * pk).sum())
    originals = int(round(a.docs / (1 + a.duplicated * mean_copies)))
    copies = np.zeros(originals, dtype=np.int64)
    dup = rng.random(originals) < a.duplicated
    copies[dup] = rng.choice(ks, size=int(dup.sum()), p=pk)
    excess = int(copies.sum()) + originals - a.docs  # trim or pad to exactly DOCS
    while excess > 0:
        i = rng.choice(np.flatnonzero(copies))
        take = min(excess, int(copies[i]))
        copies[i] -= take
        excess -= take
    if excess < 0 and a.duplicated > 0:
        copies[rng.choice(np.flatnonzero(dup) if dup.any() else np.arange(originals))] += -excess
    elif excess < 0:
        originals += -excess
        copies = np.concatenate([copies, np.zeros(-excess, dtype=np.int64)])

    # Words: Zipf-distributed ranks over the vocabulary, as natural text has them.
    vocab = np.array(["w%d" % i for i in range(a.vocab)])
    zipf = 1.0 / np.arange(1, a.vocab + 1)
    zipf /= zipf.sum()
    cdf = np.cumsum(zipf)
    cdf[-1] = 1.0
    lengths = rng.integers(wmin, wmax + 1, size=originals)
    # In chunks, each word in the smallest type that holds the vocabulary: 50 million documents
    # take about 3 GB instead of 10 (the draws are those of one call).
    total_words = int(lengths.sum())
    words = np.empty(total_words, dtype=np.uint16 if a.vocab <= 1 << 16 else np.uint32)
    for at in range(0, total_words, 1 << 24):
        n = min(1 << 24, total_words - at)
        words[at:at + n] = rng.choice(a.vocab, size=n, p=zipf)
    starts = np.concatenate([[0], np.cumsum(lengths)])

    # Every document: (original, copy number or -1); shuffled so copies land among the others.
    order = np.repeat(np.arange(originals), copies + 1)
    rng.shuffle(order)
    seen = np.zeros(originals, dtype=np.int64)
    with open(a.out, "w") as out:
        for n, o in enumerate(order):
            w = words[starts[o]:starts[o + 1]]
            k = seen[o]
            seen[o] += 1
            if k > 0 and rng.random() >= a.exact:  # a near-copy: some words replaced
                w = w.copy()
                m = int(round(len(w) * rng.uniform(emin, emax)))
                if m:
                    w[rng.permutation(len(w))[:m]] = np.searchsorted(cdf, rng.random(m), side="right")
            out.write(json.dumps({"id": "s%d" % n, "text": " ".join(vocab[w])}) + "\n")
    total = int(originals + copies.sum())
    print("%s: %d documents, %d originals, %d copies (%.1f%% removable at most), %d-%d words" % (
        a.out, total, originals, int(copies.sum()), 100.0 * copies.sum() / total, wmin, wmax), file=sys.stderr)


if __name__ == "__main__":
    main()
