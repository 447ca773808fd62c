#!/usr/bin/env python3
"""Python speeds: neardup.datasketch against datasketch's definition, and neardup.pairs on a
Python list against the CLI on the same documents.

    PYTHONPATH=build/python python3 bench/python_bench.py bench/data/kernel-16k.jsonl [REPS]

1. MinHash of word 3-shingles (UTF-8 bytes) of the first 2,000 documents, num_perm=128:
   neardup.datasketch.MinHash.bulk and update_batch, against datasketch's update_batch
   definition run here in NumPy (hashlib.sha1 per value, then the permutations over all values),
   which is what datasketch 1.10's CPU path does; same hash values checked.
2. neardup.pairs on a list of the first 64k texts against `neardup pairs` on the same JSONL.
Medians of REPS runs (default 3), one process, this machine.
"""
import hashlib
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

import neardup
from neardup.datasketch import MinHash

PRIME = np.uint64((1 << 61) - 1)
MAX32 = np.uint64((1 << 32) - 1)


def shingles(text, k=3):
    w = text.split()
    return [" ".join(w[i:i + k]).encode() for i in range(max(0, len(w) - k + 1))]


def reference_update_batch(values, a, b):
    """datasketch's CPU update_batch: hash each value in Python, then NumPy over all values."""
    hv = np.array([struct.unpack("<I", hashlib.sha1(v).digest()[:4])[0] for v in values], dtype=np.uint64).reshape(-1, 1)
    phv = ((hv * a + b) % PRIME) & MAX32
    return np.minimum(np.ones(len(a), dtype=np.uint64) * MAX32, phv.min(axis=0))


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def main():
    corpus = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with open(corpus) as f:
        records = [json.loads(line) for line in f]
    print(f"corpus {corpus}: {len(records)} documents; {os.cpu_count()} cores; neardup {neardup.__version__}")

    docs = [shingles(r["text"]) for r in records[:2000]]
    n = sum(len(d) for d in docs)
    proto = MinHash(num_perm=128)
    a, b = proto.permutations
    ref_t, _ = median_time(lambda: [reference_update_batch(d, a, b) for d in docs], reps)
    bulk_t, _ = median_time(lambda: MinHash.bulk(docs, num_perm=128), reps)

    def loop():
        out = []
        for d in docs:
            m = MinHash(num_perm=128)
            m.update_batch(d)
            out.append(m)
        return out
    loop_t, _ = median_time(loop, reps)
    got = MinHash.bulk(docs[:50], num_perm=128)
    assert all(np.array_equal(m.hashvalues, reference_update_batch(d, a, b)) for m, d in zip(got, docs[:50]))
    print(f"MinHash of {n:,} shingles of {len(docs)} documents, num_perm=128 (same hash values):")
    print(f"  datasketch's definition (hashlib + NumPy): {ref_t:.2f} s = {n / ref_t / 1e6:.2f} M shingles/s")
    print(f"  neardup.datasketch MinHash.bulk:           {bulk_t:.3f} s = {n / bulk_t / 1e6:.2f} M shingles/s "
          f"({ref_t / bulk_t:.1f}x)")
    print(f"  neardup.datasketch update_batch loop:      {loop_t:.3f} s = {n / loop_t / 1e6:.2f} M shingles/s "
          f"({ref_t / loop_t:.1f}x)")

    texts = [(str(r.get("id", i)), r["text"]) for i, r in enumerate(records[:64000])]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "docs.jsonl")
        with open(path, "w") as f:
            for i, t in texts:
                f.write(json.dumps({"id": i, "text": t}) + "\n")
        cli = os.environ.get("NEARDUP_CLI", "build/neardup")
        out = os.path.join(tmp, "p.tsv")
        cli_t, _ = median_time(lambda: subprocess.run([cli, "pairs", path, "-o", out, "-q"], check=True), reps)
        py_t, _ = median_time(lambda: neardup.pairs(texts), reps)
        with open(out) as f:
            same = neardup.pairs(texts).pairs_tsv() == f.read()
    mb = sum(len(t.encode()) for _, t in texts) / 1e6
    print(f"pairs on {len(texts):,} texts ({mb:.0f} MB): CLI on the JSONL {cli_t:.2f} s; "
          f"neardup.pairs on the list {py_t:.2f} s ({py_t / cli_t:.2f}x the CLI); same pairs: {same}")


if __name__ == "__main__":
    main()
