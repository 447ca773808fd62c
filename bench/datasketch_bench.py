#!/usr/bin/env python3
"""neardup.datasketch against datasketch itself, side by side in one process, on the same
inputs, every value compared: the speed ratio of each class's hot path.

    PYTHONPATH=build/python python3 bench/datasketch_bench.py DATASKETCH_CHECKOUT [REPS]

DATASKETCH_CHECKOUT is a clone of https://github.com/ekzhu/datasketch made for the measurement
(its code is imported from there, not copied here); SciPy (python3-scipy) for its
WeightedMinHashGenerator. Medians of REPS runs (default 5), alternating the two.
1. WeightedMinHashGenerator.minhash, dim 10,000, 128 samples: 200 bag-of-words vectors of 100
   nonzero counts, and 10 dense vectors.
2. WeightedMinHashGenerator.minhash_many: 2,000 rows of dim 10,000 with 1% nonzero, as a SciPy
   CSR matrix; 40 dense rows as a NumPy array.
3. bBitMinHash of 1,000 MinHashes (num_perm 128), b = 1 and 8: made, pickled and unpickled.
4. HyperLogLog and HyperLogLogPlusPlus (p = 12) of 200,000 short bytes values: datasketch's
   update per value against neardup's update_batch (datasketch has no batch form).
5. MinHashLSHForest (num_perm 128, l 8) of 50,000 MinHashes in clusters of near-copies: add
   and index them, then 1,000 top-10 queries.
6. MinHashLSHEnsemble (t 0.5, 16 partitions): index 20,000 MinHashes of sets of 1-500 items,
   then 1,000 queries.
7. MinHashLSH (t 0.5, num_perm 128: 25 bands of 5): insert the 50,000 MinHashes of 5, then 5,000
   queries.
8. MinHashLSHBloom (t 0.5, num_perm 128, n 50,000, fp 0.001): insert the first 25,000 of those
   MinHashes, then query 5,000 others (near-copies of inserted ones, and not). datasketch's needs
   pybloomfiltermmap3, which Debian does not ship: it runs with bench/standin/pybloomfilter.py, a
   Python set, whose calls do less than the real filter's, so the ratio is at most the real one.
"""
import gc
import os
import pickle
import statistics
import sys
import time
import warnings

import numpy as np


def timed(fn):
    # The objects alive so far (both libraries' indexes, kept for the queries) frozen out of the
    # garbage collector's way: otherwise whichever side allocates more containers pays for
    # walking the other's.
    gc.collect()
    gc.freeze()
    t = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - t
    gc.unfreeze()
    return elapsed, out


def side_by_side(name, theirs, ours, same, reps):
    t_theirs, t_ours = [], []
    for _ in range(reps):
        a, ra = timed(theirs)
        b, rb = timed(ours)
        if not same(ra, rb):
            sys.exit(f"datasketch_bench: {name}: the values differ")
        t_theirs.append(a)
        t_ours.append(b)
    mt, mo = statistics.median(t_theirs), statistics.median(t_ours)
    print(f"{name}: datasketch {mt * 1e3:.1f} ms, neardup {mo * 1e3:.2f} ms: {mt / mo:.0f}x")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, sys.argv[1])
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin"))  # pybloomfilter, for lsh_bloom
    import datasketch
    del sys.path[:2]
    from neardup import datasketch as nd

    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print(f"datasketch from {datasketch.__file__}; {reps} runs each")
    import scipy.sparse

    rng = np.random.default_rng(1)
    dim, samples = 10_000, 128
    theirs, ours = datasketch.WeightedMinHashGenerator(dim, samples, 1), nd.WeightedMinHashGenerator(dim, samples, 1)
    bags = []
    for _ in range(200):
        v = np.zeros(dim)
        v[rng.choice(dim, 100, replace=False)] = rng.integers(1, 20, 100)
        bags.append(v)
    dense = [rng.exponential(1, dim) for _ in range(10)]

    def same_lists(x, y):
        return all(np.array_equal(p.hashvalues, q.hashvalues) if p is not None else q is None for p, q in zip(x, y))

    for label, vs in (("minhash, 200 vectors of 100 nonzero weights", bags), ("minhash, 10 dense vectors", dense)):
        side_by_side(label, lambda: [theirs.minhash(v) for v in vs], lambda: [ours.minhash(v) for v in vs], same_lists, reps)
    X = scipy.sparse.random(2000, dim, density=0.01, format="csr", random_state=2, data_rvs=lambda n: rng.integers(1, 20, n))
    side_by_side("minhash_many, 2,000 x 10,000 CSR, 1% nonzero", lambda: theirs.minhash_many(X), lambda: ours.minhash_many(X),
                 same_lists, reps)
    D = np.array(dense * 4, dtype=np.float32)  # datasketch gathers (samples x nonzeros) arrays: 40 rows take 1 GB
    side_by_side("minhash_many, 40 x 10,000 dense", lambda: theirs.minhash_many(D), lambda: ours.minhash_many(D), same_lists, reps)

    mhs = [nd.MinHash(hashvalues=rng.integers(0, 2**32, 128, dtype=np.uint64)) for _ in range(1000)]
    for b in (1, 8):
        def round_trip(cls):
            return [pickle.loads(pickle.dumps(cls(m, b))) for m in mhs]

        side_by_side(f"bBitMinHash b={b}, made and pickled both ways, 1,000 of 128 values", lambda: round_trip(datasketch.bBitMinHash),
                     lambda: round_trip(nd.bBitMinHash),
                     lambda x, y: all(np.array_equal(p.hashvalues, q.hashvalues) for p, q in zip(x, y)), reps)

    values = [b"value-%d" % x for x in rng.integers(0, 10**9, 200_000)]

    def hll(cls, batch):
        def run():
            h = cls(12)
            if batch:
                h.update_batch(values)
            else:
                for v in values:
                    h.update(v)
            return h
        return run

    # HyperLogLogPlusPlus: the registers are the same; the counts differ within the estimator's
    # error where the bias tables apply (neardup's are its own), and agree above 5m, as here.
    for name in ("HyperLogLog", "HyperLogLogPlusPlus"):
        side_by_side(f"{name} p=12, 200,000 values", hll(getattr(datasketch, name), False), hll(getattr(nd, name), True),
                     lambda x, y: np.array_equal(x.reg, y.reg) and x.count() == y.count(), reps)

    base = rng.integers(0, 2**32, (5000, 128), dtype=np.uint64)
    sketches = []
    for i in range(50_000):
        hv = base[i % 5000].copy()
        changed = rng.random(128) < 0.3
        hv[changed] = rng.integers(0, 2**32, int(changed.sum()), dtype=np.uint64)
        sketches.append(nd.MinHash(hashvalues=hv))

    def build(cls):
        f = cls(128, 8)
        for i, m in enumerate(sketches):
            f.add(i, m)
        f.index()
        return f

    forests = {}
    # Compared through a pickle of ours, as the LSH's below: reading its tables would turn the
    # forest kept for the queries into datasketch's dicts.
    side_by_side("MinHashLSHForest, add and index 50,000", lambda: forests.setdefault("theirs", build(datasketch.MinHashLSHForest)),
                 lambda: forests.setdefault("ours", build(nd.MinHashLSHForest)),
                 lambda x, y: x.sorted_hashtables == pickle.loads(pickle.dumps(y)).sorted_hashtables, reps)
    queries = [sketches[int(i)] for i in rng.integers(0, len(sketches), 1000)]
    side_by_side("MinHashLSHForest, 1,000 top-10 queries", lambda: [forests["theirs"].query(m, 10) for m in queries],
                 lambda: [forests["ours"].query(m, 10) for m in queries], lambda x, y: x == y, reps)

    indexes = {}

    def lsh(cls, name):
        index = cls(threshold=0.5, num_perm=128)
        for i, m in enumerate(sketches):
            index.insert(i, m)
        return indexes.setdefault(name, index)

    # Compared through a pickle of ours, which holds datasketch's dicts: reading ``keys`` of the
    # index itself would turn its C++ tables into those dicts for the queries after.
    side_by_side("MinHashLSH, insert 50,000", lambda: lsh(datasketch.MinHashLSH, "theirs"), lambda: lsh(nd.MinHashLSH, "ours"),
                 lambda x, y: (lambda c: all(list(x.keys[k]) == list(c.keys[k]) for k in range(0, len(sketches), 997)))(pickle.loads(pickle.dumps(y))), reps)
    side_by_side("MinHashLSH, 5,000 queries", lambda: [set(indexes["theirs"].query(m)) for m in sketches[:5000]],
                 lambda: [set(indexes["ours"].query(m)) for m in sketches[:5000]], lambda x, y: x == y, reps)
    indexes.clear()

    blooms = {}

    def bloom(cls, name):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an index without a save_dir
            index = cls(threshold=0.5, num_perm=128, n=50_000, fp=0.001)
        for m in sketches[:25_000]:
            index.insert(m)
        return blooms.setdefault(name, index)

    # datasketch's answers with an exact set; neardup's may add the filters' false positives.
    side_by_side("MinHashLSHBloom, insert 25,000", lambda: bloom(datasketch.MinHashLSHBloom, "theirs"),
                 lambda: bloom(nd.MinHashLSHBloom, "ours"), lambda x, y: (x.b, x.r) == (y.b, y.r), reps)
    side_by_side("MinHashLSHBloom, 5,000 queries", lambda: [blooms["theirs"].query(m) for m in sketches[25_000:30_000]],
                 lambda: [blooms["ours"].query(m) for m in sketches[25_000:30_000]],
                 lambda x, y: all(a <= b for a, b in zip(x, y)) and sum(y) - sum(x) <= 0.01 * len(x), reps)
    blooms.clear()

    entries = [(i, sketches[i], int(rng.integers(1, 501))) for i in range(20_000)]
    ensembles = {}

    def ensemble(cls, name):
        e = cls(threshold=0.5, num_perm=128, num_part=16)
        e.index(list(entries))
        return ensembles.setdefault(name, e)

    side_by_side("MinHashLSHEnsemble, index 20,000 of 500 sizes", lambda: ensemble(datasketch.MinHashLSHEnsemble, "theirs"),
                 lambda: ensemble(nd.MinHashLSHEnsemble, "ours"), lambda x, y: list(x.uppers) == list(y.uppers), reps)
    side_by_side("MinHashLSHEnsemble, 1,000 queries", lambda: [set(ensembles["theirs"].query(m, s)) for _, m, s in entries[:1000]],
                 lambda: [set(ensembles["ours"].query(m, s)) for _, m, s in entries[:1000]], lambda x, y: x == y, reps)


if __name__ == "__main__":
    main()
