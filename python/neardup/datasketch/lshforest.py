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

Sketches of native 64-bit values are kept in C++ (a ForestArena: a row of values per sketch,
python/src/forest.cpp) until ``hashtables``, ``keys`` or ``sorted_hashtables`` is read, when they
become datasketch's dicts and lists for good; a pickle holds those. A query runs in C++ over the
sorted keys as arrays of words (32-bit while every value fits, as datasketch's MinHash values
do) and each tree key's list of keys, where datasketch calls a Python function per step of each
binary search.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Hashable

import numpy as np

from .. import _native
from ._derived import DerivedState
from .lsh import big_endian, plain_u64

_TABLES = ("hashtables", "keys", "sorted_hashtables")
_arena_add = _native.forest_arena_add


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
        self.hashranges = [(i * self.k, (i + 1) * self.k) for i in range(self.l)]
        # The sketches in C++ (made at the first add) and each key's row there, until a table is
        # asked for (__getattr__, _to_dicts); _indexed_keys: the rows index() made searchable.
        self._arena = None
        self._rows = {}
        self._indexed_keys = 0

    _derived = ("_trees",)
    # The arena while it takes add whole (forest_arena_add): None until the first add of
    # a sketch of 64-bit values, and once the tables are dicts.
    _fast = None

    def _stored(self) -> bool:
        return "_rows" in self.__dict__

    def _to_dicts(self) -> None:
        """datasketch's tables (``hashtables``, ``keys``, ``sorted_hashtables``) from the rows, from
        here on: each tree key as big-endian bytes, each table's lists in the order added, the
        sorted tables of the rows index() made searchable."""
        hashtables = [defaultdict(list) for _ in range(self.l)]
        keys = dict()
        indexed = [set() for _ in range(self.l)]
        rows = self._arena.rows().astype(">u8") if self._arena is not None else None
        for row, key in enumerate(self._rows):
            hs = [rows[row, start:end].tobytes() for start, end in self.hashranges]
            keys[key] = hs
            for t, h in enumerate(hs):
                hashtables[t][h].append(key)
                if row < self._indexed_keys:
                    indexed[t].add(h)
        state = self.__dict__
        for name in ("_arena", "_rows", "_fast"):
            state.pop(name, None)
        state.update(hashtables=hashtables, keys=keys, sorted_hashtables=[sorted(h) for h in indexed])

    def __getattr__(self, name):
        # Only for names not found otherwise: datasketch's tables, made when first asked for.
        if name in _TABLES and "_rows" in self.__dict__:
            self._to_dicts()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self):
        """datasketch's state: the tables as dicts (made for the pickle; the forest keeps its rows)."""
        if not self._stored():
            return super().__getstate__()
        keep = dict(self.__dict__)
        self._to_dicts()
        state = super().__getstate__()
        self.__dict__.clear()
        self.__dict__.update(keep)
        return state

    @staticmethod
    def _H(hs) -> bytes:
        return bytes(np.ascontiguousarray(hs).byteswap().data)

    def add(self, key: Hashable, minhash) -> None:
        """Adds a key with its sketch; searchable after the next ``index()``."""
        fast = self._fast
        if fast is not None and _arena_add(fast, self._rows, key, minhash):
            return
        if len(minhash) < self.k * self.l:
            raise ValueError("The num_perm of MinHash out of range")
        stored = self._stored()
        if key in (self._rows if stored else self.keys):
            raise ValueError("The given key has already been added")
        if stored:
            if plain_u64(minhash.hashvalues):
                if self._arena is None:
                    self._arena = self._fast = _native.ForestArena(self.k * self.l)
                self._rows[key] = self._arena.add(minhash.hashvalues)
                return
            self._to_dicts()  # values of another width: datasketch's dicts hold any
        whole, value = big_endian(minhash.hashvalues, self.k * self.l)
        if whole is None:  # values of another width: the tree keys a tree at a time
            values = np.asarray(minhash.hashvalues)
            whole, value = self._H(values[: self.k * self.l]), values.itemsize * (values.size // max(1, len(values)))
        self.keys[key] = _native.lsh_insert(self.hashtables, whole, self.k * value, key)  # the loop in C++

    def index(self) -> None:
        """Makes every key added so far searchable."""
        if self._stored():
            n = len(self._rows)
            self.__dict__["_indexed_keys"] = n
            trees = self._arena.trees(n, self.l, self.k) if self._arena is not None else _native.ForestTrees(
                [np.zeros((0, self.k), np.uint64) for _ in range(self.l)], self.k, 1)
            self.__dict__["_trees"] = (trees, list(self._rows))
            return
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
        if self._stored():
            if self._indexed_keys == len(self._rows) and "_trees" in self.__dict__:
                return self.__dict__["_trees"]
            # Keys added since index() may have joined an indexed tree key's list: datasketch's walk.
            self._to_dicts()
        if self.__dict__.get("_indexed_keys") != len(self.keys):
            return None
        trees = self.__dict__.get("_trees")
        if trees is None:
            hs = list(self.keys.values())
            if len({len(h[0]) for h in hs}) > 1:
                return None  # sketches of different widths: datasketch's walk compares their bytes
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
        values = np.asarray(minhash.hashvalues)[: self.k * self.l]
        return np.ascontiguousarray(values.astype(np.uint64, copy=False)).reshape(self.l, -1)

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
        if self._stored() and self._indexed_keys == 0:
            return []  # nothing searchable before index()
        trees = self._search_trees()
        words = self._query_words(minhash) if trees is not None else None
        if words is not None and self._stored() and words.shape[1] != self.k:
            self._to_dicts()  # values of another width than the rows': datasketch's walk
            trees = self._search_trees()
            words = self._query_words(minhash) if trees is not None else None
        if trees is not None:
            searcher, keys = trees
            for i in searcher.query(words, k):
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
        if self._stored():
            if key not in self._rows:
                raise KeyError(f"The provided key does not exist in the LSHForest: {key}")
            return self._arena.row(self._rows[key])
        byteslist = self.keys.get(key, None)
        if byteslist is None:
            raise KeyError(f"The provided key does not exist in the LSHForest: {key}")
        return np.frombuffer(b"".join(byteslist), dtype=">u8").astype(np.uint64)

    def is_empty(self) -> bool:
        """Whether some tree has no searchable key (none is searchable before ``index()``)."""
        if self._stored():  # every indexed sketch has a key in every tree
            return self._indexed_keys == 0
        return any(len(t) == 0 for t in self.sorted_hashtables)

    def __contains__(self, key: Hashable) -> bool:
        return key in (self._rows if self._stored() else self.keys)

