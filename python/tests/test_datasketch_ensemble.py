"""neardup.datasketch's MinHashLSHEnsemble against datasketch's definitions (the module's
docstring): the partitions and the queries computed here directly."""
from collections import Counter

import numpy as np
import pytest

from neardup import _native
from neardup.datasketch import MinHash, MinHashLSHEnsemble


def partitions(sizes, counts, num_part):
    """The dynamic programme, written out, each nfp summed by np.sum."""
    n = len(sizes)
    if num_part < 2:
        return [(sizes[0], sizes[-1])]
    if num_part >= n:
        return [(x, x) for x in sizes]
    nfp = np.zeros((n, n))
    for lo in range(n):
        for u in range(lo, n):
            nfp[lo, u] = np.sum((float(sizes[u]) - sizes[lo:u + 1]) / float(sizes[u]) * counts[lo:u + 1])
    if num_part == 2:
        _, u = min((nfp[0, u1] + nfp[u1 + 1, n - 1], u1) for u1 in range(n - 1))
        return [(sizes[0], sizes[u]), (sizes[u + 1], sizes[-1])]
    cost = {}
    for p in range(2, num_part):
        for u in range(p - 1, n):
            if p == 2:
                cost[u, p] = min(nfp[0, u1] + nfp[u1 + 1, u] for u1 in range(u))
            else:
                cost[u, p] = min(cost[u1, p - 1] + nfp[u1 + 1, u] for u1 in range(p - 2, u))
    p = num_part
    _, u = min((cost[u1, p - 1] + nfp[u1 + 1, n - 1], u1) for u1 in range(p - 2, n - 1))
    out = [(sizes[u + 1], sizes[-1])]
    p -= 1
    while p > 1:  # the cost of p partitions read where p - 1 are left, as datasketch does
        _, u1 = min((cost.get((u1, p), 0.0) + nfp[u1 + 1, u], u1) for u1 in range(p - 2, u))
        out.insert(0, (sizes[u1 + 1], sizes[u]))
        u = u1
        p -= 1
    out.insert(0, (sizes[0], sizes[u]))
    return out


@pytest.mark.parametrize("num_part", [1, 2, 3, 5, 16])
def test_partitions_equal_the_definition(num_part):
    rng = np.random.default_rng(num_part)
    cases = [(np.arange(1, 40), np.ones(39, dtype=np.int64)),  # ties everywhere
             (np.arange(10, 310, 10), np.full(30, 3)),
             (np.array([5]), np.array([2]))]
    for _ in range(6):
        sizes = np.unique(rng.integers(1, 2000, int(rng.integers(2, 80))))
        cases.append((sizes, rng.integers(1, 50, len(sizes))))
    for sizes, counts in cases:
        got = [tuple(map(int, x)) for x in _native.ensemble_partitions(sizes.astype(np.int64), counts.astype(np.int64), num_part)]
        assert got == [tuple(map(int, x)) for x in partitions(sizes, counts, num_part)], (len(sizes), num_part)


def error(threshold, b, r, xq, w):
    """w_fp FP + w_fn FN by Simpson's rule on 20,001 points."""
    def area(f, lo, hi):
        if hi <= lo:
            return 0.0
        t = np.linspace(lo, hi, 20001)
        y = f(t)
        return float((hi - lo) / 60000 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum()))
    jac = lambda t: t / (1 + xq - t)  # noqa: E731
    fp = area(lambda t: 1 - (1 - jac(t) ** r) ** b, 0.0, min(threshold, xq))
    fn = area(lambda t: 1 - (1 - (1 - jac(t) ** r) ** b), threshold, min(1.0, xq)) if xq >= threshold else 0.0
    return w[0] * fp + w[1] * fn


def test_parameters_minimise_the_error():
    e = MinHashLSHEnsemble(threshold=0.6, num_perm=32, num_part=4, m=6, weights=(0.3, 0.7))
    assert np.allclose(e.xqs, np.exp(np.linspace(-5, 5, 10)))
    for xq, (b, r) in zip(e.xqs, e.params):
        assert b * r <= 32 and 1 <= r <= 6
        best = min(error(0.6, bb, rr, xq, (0.3, 0.7)) for bb in range(1, 33) for rr in range(1, 7) if bb * rr <= 32)
        assert error(0.6, b, r, xq, (0.3, 0.7)) <= best + 1e-7
    assert set(e.indexes[0]) == {int(r) for _, r in e.params}
    assert all(lsh.b == 32 // r and lsh.r == r for index in e.indexes for r, lsh in index.items())


def test_index_and_query_equal_the_definition():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**32, (30, 64), dtype=np.uint64)
    entries = []
    for i in range(300):
        hv = base[i % 30].copy()
        changed = rng.random(64) < rng.random()
        hv[changed] = rng.integers(0, 2**32, int(changed.sum()), dtype=np.uint64)
        entries.append((f"k{i}", MinHash(hashvalues=hv), int(rng.integers(1, 120))))
    e = MinHashLSHEnsemble(threshold=0.5, num_perm=64, num_part=5)
    e.index(iter(entries))
    sizes, counts = np.array(sorted(Counter(s for _, _, s in entries).most_common())).T
    want = partitions(sizes, counts, 5)
    assert [(int(lo), int(hi)) for lo, hi in zip(e.lowers, e.uppers)] == [(int(lo), int(hi)) for lo, hi in want]
    part = {key: next(i for i, (lo, hi) in enumerate(want) if lo <= s <= hi) for key, _, s in entries}
    for key, m, size in entries[:40]:
        expect = set()
        for i, (lo, hi) in enumerate(want):
            b, r = e.params[min(np.searchsorted(e.xqs, float(hi) / float(size), side="left"), len(e.params) - 1)]
            bands = [m.hashvalues[j * r:(j + 1) * r].tolist() for j in range(b)]
            for other_key, other, _ in entries:
                if part[other_key] == i and any(other.hashvalues[j * r:(j + 1) * r].tolist() == bands[j] for j in range(b)):
                    expect.add(other_key)
        got = list(e.query(m, size))
        assert len(got) == len(set(got))  # a key is in one partition, found once there
        assert set(got) == expect and key in got
    assert "k0" in e and "zz" not in e and not e.is_empty()
    with pytest.raises(ValueError):
        e.index(entries)


def test_arguments():
    for kwargs in ({"threshold": 1.5}, {"num_perm": 1}, {"num_part": 0}, {"m": 1}, {"m": 200}, {"weights": (0.7, 0.7)},
                   {"weights": (-0.5, 1.5)}, {"storage_config": {"type": "redis"}}):
        with pytest.raises(ValueError):
            MinHashLSHEnsemble(**kwargs)
    e = MinHashLSHEnsemble(threshold=0.5, num_perm=16, num_part=2, m=4)
    assert e.is_empty() and list(e.query(MinHash(num_perm=16), 3)) == []
    with pytest.raises(ValueError):
        e.index([])
    with pytest.raises(ValueError):
        e.index(iter([("a", MinHash(num_perm=16), 0)]))
