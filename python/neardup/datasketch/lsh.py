"""datasketch's MinHashLSH with in-memory storage, and its batch insertion and deletion
contexts (``insertion_session``, ``deletion_session``)."""
from __future__ import annotations

import functools
import pickle
from collections.abc import Hashable
from typing import Callable, Optional

import numpy as np

from .. import _native

_store_insert, _store_query = _native.band_store_insert, _native.band_store_query

# Gauss-Legendre nodes and weights on [-1, 1], 20 points: exact for polynomials of degree 39.
_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)


def _integrate(f, lo: float, hi: float, tol: float = 1e-13, depth: int = 0) -> float:
    """Adaptive Gauss-Legendre quadrature: the S-curve integrals to ~1e-13, so that the choice
    of (b, r) agrees with an accurate integrator (QUADPACK's, as scipy's quad)."""
    def gl(a, b):
        m, h = 0.5 * (a + b), 0.5 * (b - a)
        return h * float(np.dot(_GL_W, f(m + h * _GL_X)))
    whole = gl(lo, hi)
    mid = 0.5 * (lo + hi)
    halves = gl(lo, mid) + gl(mid, hi)
    if abs(whole - halves) <= tol or depth >= 30:
        return halves
    return _integrate(f, lo, mid, tol / 2, depth + 1) + _integrate(f, mid, hi, tol / 2, depth + 1)


def _false_positive_probability(threshold: float, b: int, r: int) -> float:
    return _integrate(lambda s: 1 - (1 - s ** float(r)) ** float(b), 0.0, threshold)


def _false_negative_probability(threshold: float, b: int, r: int) -> float:
    return _integrate(lambda s: 1 - (1 - (1 - s ** float(r)) ** float(b)), threshold, 1.0)


def _best_bands(num_perm: int, max_r: int, error) -> tuple:
    """The (b, r) with b * r <= num_perm and r <= max_r of least error(b, r), the first in the
    order b, then r, ascending (datasketch's search, which MinHashLSHEnsemble shares)."""
    min_error = float("inf")
    opt = (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, min(max_r, num_perm // b) + 1):
            e = error(b, r)
            if e < min_error:
                min_error = e
                opt = (b, r)
    return opt


@functools.lru_cache(maxsize=256)
def _optimal_param(threshold: float, num_perm: int, false_positive_weight: float, false_negative_weight: float):
    """The (b, r) with b * r <= num_perm that minimises the weighted sum of the false positive
    and false negative areas of the S-curve 1 - (1 - s^r)^b (Leskovec et al., MMDS ch. 3)."""
    return _best_bands(num_perm, num_perm, lambda b, r: _false_positive_probability(threshold, b, r) * false_positive_weight
                       + _false_negative_probability(threshold, b, r) * false_negative_weight)


def _bands_of(threshold: float, num_perm: int, weights, params) -> tuple:
    """(b, r) of an LSH index, its arguments checked as datasketch checks them: ``params`` if
    given, else the best for ``threshold`` and ``weights``."""
    if threshold > 1.0 or threshold < 0.0:
        raise ValueError("threshold must be in [0.0, 1.0]")
    if num_perm < 2:
        raise ValueError("Too few permutation functions")
    if any(w < 0.0 or w > 1.0 for w in weights):
        raise ValueError("Weight must be in [0.0, 1.0]")
    if sum(weights) != 1.0:
        raise ValueError("Weights must sum to 1.0")
    if params is not None:
        b, r = params
        if b * r > num_perm:
            raise ValueError(f"The product of b and r in params is {b} * {r} = {b * r} -- "
                             f"it must be less than num_perm {num_perm}. Did you forget to specify num_perm?")
    else:
        b, r = _optimal_param(float(threshold), int(num_perm), float(weights[0]), float(weights[1]))
    if b < 2:
        raise ValueError("The number of bands are too small (b < 2)")
    return b, r


_U64 = np.dtype(np.uint64)


def plain_u64(values) -> bool:
    """Whether a sketch's values are a one-dimensional NumPy array of native unsigned 64-bit
    integers, which the band store reads directly (BandStore.insert_values, query_values)."""
    return type(values) is np.ndarray and values.dtype is _U64 and values.ndim == 1


def big_endian(values, count: int):
    """The first `count` values of a sketch (a weighted MinHash's rows of two words each) as
    big-endian bytes, swapped once for all its bands or trees, and the bytes of one value; (None,
    0) for values that are not 64-bit integers, whose keys are then made a band at a time."""
    hv = np.asarray(values)
    if hv.dtype.itemsize != 8 or hv.dtype.kind not in "iu":
        return None, 0
    return hv[:count].astype(hv.dtype.newbyteorder(">")).tobytes(), 8 * (hv.size // max(1, len(hv)))


class MinHashLSH:
    """The MinHash LSH index with in-memory storage, as datasketch's ``MinHashLSH`` with
    ``storage_config={"type": "dict"}``. ``hashtables[i]`` maps band i's keys to the keys in that
    bucket; ``keys`` maps each key to its band keys (made from the C++ store when first read)."""

    # The store while it takes insert and query whole (bands of 64-bit values, keys not pickled):
    # one C++ call each (band_store_insert, band_store_query); None otherwise.
    _fast = None

    def __init__(self, threshold: float = 0.9, num_perm: int = 128, weights=(0.5, 0.5), params=None,
                 storage_config: Optional[dict] = None, prepickle: Optional[bool] = None,
                 hashfunc: Optional[Callable[[bytes], bytes]] = None) -> None:
        storage_config = {"type": "dict"} if not storage_config else storage_config
        if storage_config.get("type", "dict") != "dict":
            raise ValueError('neardup.datasketch.MinHashLSH keeps its tables in memory: storage_config type "dict" only')
        self._buffer_size = 50000
        self.h = num_perm
        self.b, self.r = _bands_of(threshold, num_perm, weights, params)
        self.prepickle = bool(prepickle) if prepickle is not None else False
        self.hashfunc = hashfunc
        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]
        self._query_buffer = []
        # Without a hashfunc the bands live in C++ (a BandStore, made at the first insert, when the
        # width of a value is known) until ``hashtables`` or ``keys`` is asked for: then they become
        # datasketch's dicts for good (__getattr__, _to_dicts).
        self._store = None
        # key -> the store's row for it, or the list of its rows once added twice: an int is not
        # tracked by Python's garbage collector, where a list per key made every collection
        # walk them all (inserts took 2.5x as long beside another large index).
        self._rows = {}
        if hashfunc is not None:
            self._to_dicts()

    def _stored(self) -> bool:
        return "hashtables" not in self.__dict__

    def _dict_tables(self) -> tuple:
        """(hashtables, keys) as datasketch's dicts, made from the store."""
        if self._store is None:
            return [dict() for _ in range(self.b)], dict()
        return self._store.materialize(self._rows)

    def _to_dicts(self) -> None:
        """The tables as datasketch's dicts, from here on."""
        tables, keys = self._dict_tables()
        self.__dict__.update(hashtables=tables, keys=keys, _store=None, _rows=None, _fast=None)

    def __getattr__(self, name):
        # Only for names not found otherwise: datasketch's tables, made when first asked for.
        if name in ("hashtables", "keys") and "_rows" in self.__dict__:
            self._to_dicts()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self):
        """datasketch's state: the tables as dicts (made for the pickle, the index keeps its own)."""
        state = dict(self.__dict__)
        if self._stored():
            state["hashtables"], state["keys"] = self._dict_tables()
        state.update(_store=None, _rows=None)
        state.pop("_fast", None)
        return state

    @property
    def buffer_size(self) -> int:
        return self._buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self._buffer_size = value

    def _H(self, hs) -> bytes:
        key = bytes(np.asarray(hs, dtype=np.uint64).byteswap().data)
        return self.hashfunc(key) if self.hashfunc else key

    def _whole(self, minhash, bands: int):
        """The sketch's first `bands` bands as big-endian bytes, and a band's bytes (big_endian)."""
        whole, value = big_endian(minhash.hashvalues, bands * self.r)
        return whole, self.r * value

    def _band_keys(self, minhash, bands: Optional[int] = None):
        """The first `bands` (all) band keys of a sketch: its values' big-endian bytes, swapped
        once for every band, then cut."""
        n = self.b if bands is None else min(bands, self.b)
        whole, band = self._whole(minhash, n)
        if whole is None:
            return [self._H(minhash.hashvalues[start:end]) for start, end in self.hashranges[:n]]
        keys = [whole[i * band:(i + 1) * band] for i in range(n)]
        return [self.hashfunc(k) for k in keys] if self.hashfunc else keys

    def _buckets_of(self, minhash, bands: int) -> set:
        """The keys in the buckets of the sketch's first `bands` bands."""
        store = self.__dict__.get("_store")
        if store is not None and plain_u64(minhash.hashvalues) and store.band_bytes == 8 * self.r:
            return store.query_values(minhash.hashvalues, bands)
        whole, band = self._whole(minhash, bands)
        if self._stored():  # no band of another width is in the store: nothing found
            return self._store.query(whole, bands) if self._store is not None and band == self._store.band_bytes else set()
        if whole is not None and not self.hashfunc:  # the loop in C++ (datasketch_native.cpp)
            return _native.lsh_query(self.hashtables, whole, band, bands)
        candidates = set()
        for H, table in zip(self._band_keys(minhash, bands), self.hashtables):
            candidates.update(table.get(H, ()))
        return candidates

    def insert(self, key: Hashable, minhash, check_duplication: bool = True) -> None:
        self._insert(key, minhash, check_duplication)

    def _insert(self, key, minhash, check_duplication=True) -> None:
        fast = self._fast
        if fast is not None and _store_insert(fast, self._rows, key, minhash, self.h, check_duplication):
            return
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        if self.prepickle:
            key = pickle.dumps(key)
        stored = self._stored()
        if check_duplication and key in (self._rows if stored else self.keys):
            raise ValueError("The given key already exists")
        hv = minhash.hashvalues
        store = self._u64_store() if stored and plain_u64(hv) else None
        if store is not None:
            self._add_row(key, store.insert_values(key, hv))
            return
        whole, band = self._whole(minhash, self.b)
        if stored:
            if whole is None or (self._store is not None and band != self._store.band_bytes):
                self._to_dicts()  # values of another width: datasketch's dicts hold any
            else:
                if self._store is None:
                    self._store = _native.BandStore(self.b, band)
                self._add_row(key, self._store.insert(key, whole))
                return
        if whole is not None and not self.hashfunc:  # the loop in C++ (datasketch_native.cpp)
            hs = _native.lsh_insert(self.hashtables, whole, band, key)
            known = self.keys.get(key)
            if known is None:
                self.keys[key] = hs
            else:
                known.extend(hs)
            return
        Hs = self._band_keys(minhash)
        self.keys.setdefault(key, []).extend(Hs)
        for H, table in zip(Hs, self.hashtables):
            bucket = table.get(H)  # not setdefault(H, []), which makes a list for every band
            if bucket is None:
                table[H] = [key]
            else:
                bucket.append(key)

    def _insert_many(self, keys: list, minhashes: list) -> None:
        """insert(key, minhash) for each pair, in order: in C++ while the store takes them (keys
        not pickled, sketches of uint64 values; MinHashLSHEnsemble.index's inserts)."""
        i = 0
        while i < len(keys):
            store = self._u64_store() if self._stored() and not self.prepickle else None
            if store is not None:
                i = store.insert_many(self._rows, keys, minhashes, self.h, i)
                if i == len(keys):
                    return
            self.insert(keys[i], minhashes[i])
            i += 1

    def _u64_store(self):
        """The store, made at the first insert, if it takes sketches of 64-bit values (its bands
        8 * r bytes); None if it holds values of another width."""
        if self._store is None:
            self._store = _native.BandStore(self.b, 8 * self.r)
            if not self.prepickle:
                self._fast = self._store
        return self._store if self._store.band_bytes == 8 * self.r else None

    def _add_row(self, key, row: int) -> None:
        rows = self._rows.get(key)
        if rows is None:
            self._rows[key] = row
            return
        self._store.key_repeated()
        if type(rows) is list:
            rows.append(row)
        else:
            self._rows[key] = [rows, row]

    def insertion_session(self, buffer_size: int = 50000) -> "MinHashLSHInsertionSession":
        return MinHashLSHInsertionSession(self, buffer_size)

    def deletion_session(self, buffer_size: int = 50000) -> "MinHashLSHDeletionSession":
        return MinHashLSHDeletionSession(self, buffer_size)

    def merge(self, other: "MinHashLSH", check_overlap: bool = False) -> None:
        if type(self) is type(other) and self.h == other.h and self.b == other.b and self.r == other.r:
            if check_overlap and set(self.keys).intersection(set(other.keys)):
                raise ValueError("The keys are overlapping, duplicate key exists.")
            for key, Hs in other.keys.items():
                self.keys.setdefault(key, []).extend(Hs)
                for H, table in zip(Hs, self.hashtables):
                    table.setdefault(H, []).append(key)
        else:
            if type(self) is not type(other):
                raise ValueError(f"Cannot merge type MinHashLSH and type {type(other).__name__}.")
            raise ValueError("Cannot merge MinHashLSH with different initialization parameters.")

    def query(self, minhash) -> list:
        fast = self._fast
        if fast is not None:
            found = _store_query(fast, minhash, self.h)
            if found is not None:
                return found
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        candidates = self._buckets_of(minhash, self.b)
        if self.prepickle:
            return [pickle.loads(k) for k in candidates]
        return list(candidates)

    def _query_b(self, minhash, b: int) -> set:
        """The keys of the first b bands' buckets of the sketch (MinHashLSHEnsemble's query)."""
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        if b > self.b:
            raise ValueError("b must be less or equal to the number of hash tables")
        candidates = self._buckets_of(minhash, b)
        if self.prepickle:
            return {pickle.loads(k) for k in candidates}
        return candidates

    def add_to_query_buffer(self, minhash) -> None:
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        self._query_buffer.append(self._band_keys(minhash))

    def collect_query_buffer(self) -> list:
        """The keys that every buffered query finds: each query's keys are those of its bands'
        buckets together (what ``query`` returns), and the result is what all the queries have
        in common."""
        per_query = [set().union(*(table.get(H, ()) for H, table in zip(Hs, self.hashtables))) for Hs in self._query_buffer]
        self._query_buffer = []
        if not per_query:
            return []
        result = set.intersection(*per_query)
        if self.prepickle:
            return [pickle.loads(k) for k in result]
        return list(result)

    def __contains__(self, key) -> bool:
        if self.prepickle:
            key = pickle.dumps(key)
        return key in (self._rows if self._stored() else self.keys)

    def remove(self, key) -> None:
        if self.prepickle:
            key = pickle.dumps(key)
        if self._stored():
            if key not in self._rows:
                raise ValueError("The given key does not exist")
            # As datasketch's dicts do: the key leaves the buckets of its first sketch's bands once.
            rows = self._rows.pop(key)
            self._store.remove(rows[0] if type(rows) is list else rows)
            return
        if key not in self.keys:
            raise ValueError("The given key does not exist")
        for H, table in zip(self.keys[key], self.hashtables):
            bucket = table.get(H)
            if bucket is not None:
                try:
                    bucket.remove(key)
                except ValueError:
                    pass
                if not bucket:
                    del table[H]
        del self.keys[key]

    def is_empty(self) -> bool:
        if self._stored():  # a band's table is empty when no row is left
            return self._store is None or len(self._store) == 0
        return any(len(t) == 0 for t in self.hashtables)

    def get_counts(self) -> list:
        return [{H: len(keys) for H, keys in t.items()} for t in self.hashtables]

    def get_subset_counts(self, *keys) -> list:
        key_set = [pickle.dumps(k) for k in set(keys)] if self.prepickle else list(set(keys))
        tables = [dict() for _ in range(self.b)]
        for key in key_set:
            for H, t in zip(self.keys[key], tables):
                t.setdefault(H, []).append(key)
        return [{H: len(v) for H, v in t.items()} for t in tables]


class _BatchContext:
    """What the batch insertion and deletion contexts share: the tables are in memory, so changes
    are immediate and closing has nothing to flush."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int):
        self.lsh = lsh
        self.lsh.buffer_size = buffer_size

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

    def close(self) -> None:
        pass


class MinHashLSHInsertionSession(_BatchContext):
    """Context manager for inserting many keys."""

    def insert(self, key, minhash, check_duplication: bool = True) -> None:
        self.lsh._insert(key, minhash, check_duplication)


class MinHashLSHDeletionSession(_BatchContext):
    """Context manager for removing many keys."""

    def remove(self, key) -> None:
        self.lsh.remove(key)
