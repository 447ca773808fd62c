"""datasketch's MinHashLSHEnsemble: which indexed sets contain most of a query set (containment
|Q & X| / |Q| >= t), by LSH Ensemble (Zhu, Nargesian, Pu and Miller, VLDB 2016): the sets are
split into partitions by size, and each partition is queried with the bands and rows best for
its largest size.

The definitions are datasketch's:

* containment t of Q in X is Jaccard t / (1 + x/q - t) for |X| = x, |Q| = q; for each of ten
  ratios x/q = exp(linspace(-5, 5, 10)) the (b, r), r <= m and b r <= num_perm, minimise
  w_fp FP + w_fn FN, the S-curve's areas below and above t under that mapping (integrated as
  the MinHashLSH parameters are, lsh.py);
* each partition holds a MinHashLSH of (num_perm // r, r) for every r chosen;
* ``index`` takes all ``(key, minhash, size)`` once: the partitions of the sizes minimise the
  expected false positives, each set's as if it had its partition's largest size (the dynamic
  programme in C++, sums rounded as NumPy's; datasketch reads the cost of one partition more
  than is left when it walks back, and so does this);
* ``query(m, size)`` yields, partition by partition, the keys of the first b bands of that
  partition's LSH for the (b, r) of the ratio just at or above upper/size.
"""
from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Generator, Hashable, Iterable
from typing import Optional

import numpy as np

from .. import _native
from .lsh import MinHashLSH, _best_bands, _integrate


def _false_positive_probability(threshold, b, r, xq):
    def probability(t):
        return 1 - (1 - (t / (1 + xq - t)) ** float(r)) ** float(b)
    return _integrate(probability, 0.0, threshold if xq >= threshold else xq)


def _false_negative_probability(threshold, b, r, xq):
    def probability(t):
        return 1 - (1 - (1 - (t / (1 + xq - t)) ** float(r)) ** float(b))
    if xq >= 1.0:
        return _integrate(probability, threshold, 1.0)
    if xq >= threshold:
        return _integrate(probability, threshold, xq)
    return 0.0


def _optimal_param(threshold, num_perm, max_r, xq, false_positive_weight, false_negative_weight):
    return _best_bands(num_perm, max_r, lambda b, r: _false_positive_probability(threshold, b, r, xq) * false_positive_weight
                       + _false_negative_probability(threshold, b, r, xq) * false_negative_weight)


class MinHashLSHEnsemble:
    """LSH Ensemble for containment queries at ``threshold``: datasketch's arguments
    (``num_perm``, ``num_part`` partitions, ``m`` the largest r, ``weights``), attributes
    (``indexes``, ``lowers``, ``uppers``, ``xqs``, ``params``) and results. Storage is in memory
    (``storage_config={"type": "dict"}``)."""

    def __init__(self, threshold: float = 0.9, num_perm: int = 128, num_part: int = 16, m: int = 8, weights=(0.5, 0.5),
                 storage_config: Optional[dict] = None, prepickle: Optional[bool] = None) -> None:
        if threshold > 1.0 or threshold < 0.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if num_part < 1:
            raise ValueError("num_part must be at least 1")
        if m < 2 or m > num_perm:
            raise ValueError("m must be in the range of [2, num_perm]")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        if storage_config is not None and storage_config.get("type", "dict") != "dict":
            raise ValueError("neardup.datasketch keeps its indexes in memory: storage_config type %r is not supported; "
                             "use {'type': 'dict'}" % storage_config.get("type"))
        self.threshold = threshold
        self.h = num_perm
        self.m = m
        rs = self._init_optimal_params(weights)
        self.indexes = [{r: MinHashLSH(num_perm=self.h, params=(int(self.h / r), r), prepickle=prepickle) for r in rs}
                        for _ in range(num_part)]
        self.lowers = [None for _ in self.indexes]
        self.uppers = [None for _ in self.indexes]

    def _init_optimal_params(self, weights):
        false_positive_weight, false_negative_weight = weights
        self.xqs = np.exp(np.linspace(-5, 5, 10))
        self.params = np.array([_optimal_param(self.threshold, self.h, self.m, xq, false_positive_weight, false_negative_weight)
                                for xq in self.xqs], dtype=int)
        return {int(r) for _, r in self.params}

    def _get_optimal_param(self, x, q):
        i = np.searchsorted(self.xqs, float(x) / float(q), side="left")
        if i == len(self.params):
            i = i - 1
        return self.params[i]

    def index(self, entries: Iterable) -> None:
        """Indexes every ``(key, minhash, size)`` at once (an index is made once)."""
        if not self.is_empty():
            raise ValueError("Cannot call index again on a non-empty index")
        if not isinstance(entries, list):
            queue = []
            for key, minhash, size in entries:
                if size <= 0:
                    raise ValueError("Set size must be positive")
                queue.append((key, minhash, size))
            entries = queue
        if len(entries) == 0:
            raise ValueError("entries is empty")
        sizes, counts = np.array(sorted(Counter(e[2] for e in entries).most_common())).T
        partitions = _native.ensemble_partitions(np.asarray(sizes, dtype=np.int64), np.asarray(counts, dtype=np.int64), len(self.indexes))
        for i, (lower, upper) in enumerate(partitions):
            self.lowers[i], self.uppers[i] = type(sizes[0])(lower), type(sizes[0])(upper)
        entries.sort(key=lambda e: e[2])
        # Each partition's entries in order, inserted into each of its indexes at once (one C++
        # call per index: MinHashLSH._insert_many) rather than a call per entry and index.
        parts = [([], []) for _ in self.indexes]
        curr_part = 0
        for key, minhash, size in entries:
            if size > self.uppers[curr_part]:
                curr_part += 1
            parts[curr_part][0].append(key)
            parts[curr_part][1].append(minhash)
        for index, (keys, minhashes) in zip(self.indexes, parts):
            for r in index:
                index[r]._insert_many(keys, minhashes)

    def query(self, minhash, size: int) -> Generator[Hashable, None, None]:
        """The keys of the indexed sets that may contain the query set (of ``size`` distinct
        items) at the threshold, partition by partition."""
        # _get_optimal_param's search, on lists (np.searchsorted cost more than the query of a
        # partition's index), and the sketch's length checked once rather than per partition.
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        xqs, params = self.xqs.tolist(), self.params.tolist()
        parts = []
        for i, index in enumerate(self.indexes):
            u = self.uppers[i]
            if u is None:
                continue
            b, r = params[min(bisect.bisect_left(xqs, float(u) / float(size)), len(params) - 1)]
            parts.append((index[int(r)], int(b)))
        stores = [lsh._fast for lsh, _ in parts]
        if None not in stores:  # every partition's index in a store of 64-bit bands: one C++ call
            found = _native.band_stores_query(stores, [b for _, b in parts], minhash, self.h)
            if found is not None:
                yield from found
                return
        for lsh, b in parts:
            yield from (lsh._query_b(minhash, b) if lsh.prepickle else lsh._buckets_of(minhash, b))

    def __contains__(self, key: Hashable) -> bool:
        return any(any(key in index[r] for r in index) for index in self.indexes)

    def is_empty(self) -> bool:
        return all(all(index[r].is_empty() for r in index) for index in self.indexes)
