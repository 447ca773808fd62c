"""datasketch's MinHashLSHForest: top-k search by Jaccard similarity (Bawa, Condie and Ganesan,
"LSH Forest: Self-Tuning Indexes for Similarity Search", WWW 2005), each prefix tree kept as a
sorted array, as datasketch keeps it.

The definitions are datasketch's: ``num_perm`` values in ``l`` trees of ``k = num_perm // l``
values each; a tree's key of a sketch is its k values (a weighted MinHash's k rows) as big-endian
64-bit words; ``query(m, K)`` walks r = k, k - 1, ..., 1 and, for each r, the trees in order, and
takes the keys of every indexed key whose first r values equal the query's, tree by tree in the
order of the sorted keys and each key's list in the order added, until K distinct keys are found.
Only the keys ``index()`` has sorted are searched (a key added after it is found only where its
tree key was indexed already, as in datasketch).

A query runs in C++ over the sorted keys as arrays of 64-bit words and each tree key's list of
keys, where datasketch calls a Python function per step of each binary search.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Hashable

import numpy as np

from .. import _native
from ._derived import DerivedState
from .lsh import big_endian


class MinHashLSHForest(DerivedState):
    """The LSH Forest of MinHashes (or weighted MinHashes) of ``num_perm`` values in ``l`` trees:
    datasketch's arguments, attributes (``hashtables``, ``keys``, ``sorted_hashtables``,
    ``hashranges``) and results."""

    def __init__(self, num_perm: int = 128, l: int = 8) -> None:  # noqa: E741 (datasketch's name)
        if l <= 0 or num_perm <= 0:
            raise ValueError("num_perm and l must be positive")
        if l > num_perm:
            raise ValueError("l cannot be greater than num_perm")
        self.l = l
        self.k = int(num_perm / l)
        self.hashtables = [defaultdict(list) for _ in range(self.l)]
        self.hashranges = [(i * self.k, (i + 1) * self.k) for i in range(self.l)]
        self.keys = dict()
        self.sorted_hashtables = [[] for _ in range(self.l)]

    _derived = ("_trees",)

    @staticmethod
    def _H(hs) -> bytes:
        return bytes(np.ascontiguousarray(hs).byteswap().data)

    def add(self, key: Hashable, minhash) -> None:
        """Adds a key with its sketch; searchable after the next ``index()``."""
        if len(minhash) < self.k * self.l:
            raise ValueError("The num_perm of MinHash out of range")
        if key in self.keys:
            raise ValueError("The given key has already been added")
        whole, value = big_endian(minhash.hashvalues, self.k * self.l)
        if whole is None:  # values of another width: the tree keys a tree at a time
            values = np.asarray(minhash.hashvalues)
            whole, value = self._H(values[: self.k * self.l]), values.itemsize * (values.size // max(1, len(values)))
        self.keys[key] = _native.lsh_insert(self.hashtables, whole, self.k * value, key)  # the loop in C++

    def index(self) -> None:
        """Makes every key added so far searchable."""
        for i, hashtable in enumerate(self.hashtables):
            self.sorted_hashtables[i] = sorted(hashtable)
        self.__dict__.pop("_trees", None)
        self.__dict__["_indexed_keys"] = len(self.keys)
        self._search_trees()

    def _search_trees(self):
        """The trees as C++ searches them (made by index(), or after unpickling by the first
        query, from every key's tree keys in the order added). None while a key added since
        index() may have joined an indexed tree key's list: the query then walks the lists
        themselves, as datasketch's does."""
        if self.__dict__.get("_indexed_keys") != len(self.keys):
            return None
        trees = self.__dict__.get("_trees")
        if trees is None:
            hs = list(self.keys.values())
            if hs:
                keys = [np.frombuffer(b"".join(h[t] for h in hs), dtype=">u8").astype(np.uint64).reshape(len(hs), -1) for t in range(self.l)]
            else:
                keys = [np.zeros((0, self.k), np.uint64) for _ in range(self.l)]
            width = keys[0].shape[1] // self.k
            trees = (_native.ForestTrees(keys, self.k, width), list(self.keys))
            self.__dict__["_trees"] = trees
        return trees

    def _query_words(self, minhash):
        """The query's key for each tree as a row of 64-bit words: its values as unsigned
        integers, which order as their big-endian bytes do."""
        values = np.ascontiguousarray(np.asarray(minhash.hashvalues)[: self.k * self.l])
        return values.view(np.uint64).reshape(self.l, -1) if values.itemsize == 8 else values.astype(np.uint64).reshape(self.l, -1)

    def _walk(self, minhash, r, b):
        """datasketch's walk of the trees for prefixes of r values: the keys in order."""
        if r > self.k or r <= 0 or b > self.l or b <= 0:
            raise ValueError("parameter outside range")
        hps = [self._H(np.asarray(minhash.hashvalues)[start:start + r]) for start, _ in self.hashranges]
        size = len(hps[0])
        for ht, hp, hashtable in zip(self.sorted_hashtables, hps, self.hashtables):
            i = bisect.bisect_left(ht, hp, key=lambda H: H[:size])
            while i < len(ht) and ht[i][:size] == hp:
                yield from hashtable[ht[i]]
                i += 1

    def query(self, minhash, k: int) -> list:
        """At most k keys, those with the longest shared prefixes first (an approximate top-k by
        Jaccard similarity)."""
        if k <= 0:
            raise ValueError("k must be positive")
        if len(minhash) < self.k * self.l:
            raise ValueError("The num_perm of MinHash out of range")
        results = set()
        trees = self._search_trees()
        if trees is not None:
            searcher, keys = trees
            for i in searcher.query(self._query_words(minhash), k):
                results.add(keys[i])
            return list(results)
        for r in range(self.k, 0, -1):
            for key in self._walk(minhash, r, self.l):
                results.add(key)
                if len(results) >= k:
                    return list(results)
        return list(results)

    def get_minhash_hashvalues(self, key: Hashable) -> np.ndarray:
        """The hash values of ``key``'s sketch, from its trees' keys."""
        byteslist = self.keys.get(key, None)
        if byteslist is None:
            raise KeyError(f"The provided key does not exist in the LSHForest: {key}")
        return np.frombuffer(b"".join(byteslist), dtype=">u8").astype(np.uint64)

    def is_empty(self) -> bool:
        """Whether some tree has no searchable key (none is searchable before ``index()``)."""
        return any(len(t) == 0 for t in self.sorted_hashtables)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.keys

