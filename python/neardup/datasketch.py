"""A drop-in for datasketch's MinHash, LeanMinHash and MinHashLSH (datasketch 1.10's public
surface) that gives the same values, with the batch paths in C++.

    from neardup.datasketch import MinHash, MinHashLSH   # instead of: from datasketch import ...

The definitions are datasketch's, written again here:

* a value is hashed to 32 bits by ``hashfunc`` (by default the first four bytes of its SHA-1
  digest, read little-endian);
* permutation i maps a hash x to ``((a_i * x + b_i) mod (2^61 - 1)) & (2^32 - 1)``, the product
  and the sum wrapping at 64 bits as NumPy's uint64 arithmetic does; the a_i and b_i are drawn
  with NumPy's legacy ``RandomState(seed)``: for each permutation, ``randint(1, 2^61 - 1)``
  then ``randint(0, 2^61 - 1)``;
* hash value i is the minimum of permutation i over the values, ``2^32 - 1`` when there are none;
* the LSH bands (b, r) minimise ``w_fp * FP + w_fn * FN`` over b * r <= num_perm, FP and FN
  the integrals of the S-curve below and above the threshold; a band's key is its hash values
  as big-endian 64-bit words.

With the default hash function, ``update_batch``, ``bulk`` and ``generator`` hash and permute in
C++ (``bulk`` in parallel over documents): SHA-1 reads the bytes values in place with the GIL
held, the permutations run without it. Any other ``hashfunc`` is called from Python for each
value, as datasketch does, and only the permutations run in C++.
"""
from __future__ import annotations

import copy as _copy
import functools
import gc
import hashlib
import math
import pickle
import struct
import warnings
from collections.abc import Generator, Hashable, Iterable
from typing import Callable, Optional

import numpy as np

from . import _native

__all__ = ["MinHash", "LeanMinHash", "MinHashLSH", "sha1_hash32", "MinHashLSHInsertionSession",
           "MinHashLSHDeletionSession"]

_mersenne_prime = np.uint64((1 << 61) - 1)
_max_hash = np.uint64((1 << 32) - 1)
_hash_range = 1 << 32


def sha1_hash32(data) -> int:
    """The first four bytes of SHA-1(data), little-endian (datasketch's default hashfunc)."""
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


@functools.lru_cache(maxsize=64)
def _permutations(seed: int, num_perm: int) -> np.ndarray:
    gen = np.random.RandomState(seed)
    ab = np.empty((num_perm, 2), dtype=np.uint64)
    for i in range(num_perm):
        ab[i, 0] = gen.randint(1, _mersenne_prime, dtype=np.uint64)
        ab[i, 1] = gen.randint(0, _mersenne_prime, dtype=np.uint64)
    out = np.ascontiguousarray(ab.T)
    out.setflags(write=False)
    return out


def _without_collection(make):
    """make(), the cyclic garbage collector paused. Making thousands of objects triggers full
    collections, each of which walks every container alive, such as the caller's lists of
    hundreds of thousands of shingles: a third of bulk's time on 2,000 kernel files. Nothing made
    here forms a cycle; the collector runs again afterwards as it would have."""
    if not gc.isenabled():
        return make()
    gc.disable()
    try:
        return make()
    finally:
        gc.enable()


class MinHash:
    """MinHash of a set (Broder 1997), with datasketch's definition and values.

    Args are datasketch's: ``num_perm``, ``seed``, ``gpu_mode`` (kept, and passed on by ``copy``
    and ``union``; the work is done on the CPU, so "always" fails in ``update_batch`` as
    datasketch's does on a machine without a GPU), ``hashfunc``, ``hashobj`` (deprecated, ignored
    with a warning), ``hashvalues`` and ``permutations`` (NumPy uint64 arrays).
    """

    def __init__(self, num_perm: int = 128, seed: int = 1, gpu_mode: str = "disable",
                 hashfunc: Callable = sha1_hash32, hashobj: Optional[object] = None,
                 hashvalues: Optional[Iterable] = None, permutations=None) -> None:
        if hashvalues is not None:
            num_perm = len(hashvalues)
        if num_perm > _hash_range:
            raise ValueError("Cannot have more than %d number of permutation functions" % _hash_range)
        self.seed = seed
        self.num_perm = num_perm
        if not callable(hashfunc):
            raise ValueError("The hashfunc must be a callable.")
        self.hashfunc = hashfunc
        if hashobj is not None:
            warnings.warn("hashobj is deprecated, use hashfunc instead.", DeprecationWarning, stacklevel=2)
        self._gpu_mode = gpu_mode
        if hashvalues is not None:
            self.hashvalues = self._parse_hashvalues(hashvalues)
        else:
            self.hashvalues = self._init_hashvalues(num_perm)
        if permutations is not None:
            self.permutations = permutations
        else:
            self.permutations = _permutations(seed, num_perm)
        if len(self) != len(self.permutations[0]):
            raise ValueError("Numbers of hash values and permutations mismatch")

    def _init_hashvalues(self, num_perm: int) -> np.ndarray:
        return np.ones(num_perm, dtype=np.uint64) * _max_hash

    def _parse_hashvalues(self, hashvalues) -> np.ndarray:
        return np.array(hashvalues, dtype=np.uint64)

    def _ab(self):
        a, b = self.permutations
        return (np.ascontiguousarray(a, dtype=np.uint64), np.ascontiguousarray(b, dtype=np.uint64))

    def _apply(self, hv) -> None:
        a, b = self._ab()
        # A new array, as datasketch's update_batch leaves one: a reference to the old one held
        # elsewhere does not change.
        values = np.array(self.hashvalues, dtype=np.uint64, copy=True)
        _native.update_hashvalues(values, a, b, np.asarray(hv, dtype=np.uint32))
        self.hashvalues = values

    def update(self, b) -> None:
        """Adds one value (bytes, with the default hashfunc)."""
        hv = self.hashfunc(b)
        a, bb = self.permutations
        phv = np.bitwise_and((a * np.uint64(hv) + bb) % _mersenne_prime, _max_hash)
        self.hashvalues = np.minimum(phv, self.hashvalues)

    @property
    def gpu_mode(self) -> str:
        """The gpu_mode given (datasketch keeps it as ``_gpu_mode``)."""
        return self._gpu_mode

    def update_batch(self, b: Iterable, **kwargs) -> None:
        """Adds many values; in C++ with the default hashfunc and bytes values."""
        values = b if type(b) in (list, tuple) else list(b)
        if not values:
            return
        if self._gpu_mode == "always":
            raise RuntimeError("GPU mode 'always' requested, but neardup.datasketch runs on the CPU; "
                               "use gpu_mode='disable' or 'detect'")
        hv = None
        if self.hashfunc is sha1_hash32:
            try:
                hv = _native.sha1_hash32_all(values)
            except TypeError:  # values other than bytes: hashed in Python, as datasketch does
                hv = None
        if hv is None:
            hv = np.array([self.hashfunc(v) for v in values], dtype=np.uint64)
            if hv.size and int(hv.max()) > 0xFFFFFFFF:
                # Wider hashes: datasketch's NumPy arithmetic, as it is.
                a, bb = self.permutations
                phv = ((hv.reshape(-1, 1) * a + bb) % _mersenne_prime) & _max_hash
                self.hashvalues = np.minimum(self.hashvalues, phv.min(axis=0))
                return
        self._apply(hv)

    def jaccard(self, other: "MinHash") -> float:
        if other.seed != self.seed:
            raise ValueError("Cannot compute Jaccard given MinHash with different seeds")
        if len(self) != len(other):
            raise ValueError("Cannot compute Jaccard given MinHash with different numbers of permutation functions")
        return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / float(len(self))

    def count(self) -> float:
        k = len(self)
        return float(k) / np.sum(self.hashvalues / float(_max_hash)) - 1.0

    def merge(self, other: "MinHash") -> None:
        if other.seed != self.seed:
            raise ValueError("Cannot merge MinHash with different seeds")
        if len(self) != len(other):
            raise ValueError("Cannot merge MinHash with different numbers of permutation functions")
        self.hashvalues = np.minimum(other.hashvalues, self.hashvalues)

    def digest(self) -> np.ndarray:
        return _copy.copy(self.hashvalues)

    def is_empty(self) -> bool:
        return not np.any(self.hashvalues != _max_hash)

    def clear(self) -> None:
        self.hashvalues = self._init_hashvalues(len(self))

    def copy(self) -> "MinHash":
        return MinHash(seed=self.seed, hashfunc=self.hashfunc, hashvalues=self.digest(),
                       permutations=self.permutations, gpu_mode=self._gpu_mode)

    def _with_hashvalues(self, hashvalues: np.ndarray) -> "MinHash":
        """A MinHash like this one with these hash values, without the constructor's checks
        (bulk makes thousands)."""
        m = object.__new__(type(self))
        m.__dict__.update(self.__dict__)
        m.hashvalues = hashvalues
        return m

    def __len__(self) -> int:
        return len(self.hashvalues)

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.seed == other.seed and np.array_equal(self.hashvalues, other.hashvalues)

    __hash__ = None  # mutable, as datasketch's

    @staticmethod
    def _union_values(mhs, mismatch: str) -> np.ndarray:
        """The element-wise minimum of two or more sketches of one seed and length; datasketch's
        errors (each class words the mismatch its own way)."""
        if len(mhs) < 2:
            raise ValueError("Cannot union less than 2 MinHash")
        seed, num_perm = mhs[0].seed, len(mhs[0])
        if any((seed != m.seed or num_perm != len(m)) for m in mhs):
            raise ValueError(mismatch)
        return np.minimum.reduce([m.hashvalues for m in mhs])

    @classmethod
    def union(cls, *mhs: "MinHash") -> "MinHash":
        hashvalues = cls._union_values(mhs, "The unioning MinHash must have the same seed and number of permutation functions")
        return cls(num_perm=len(mhs[0]), seed=mhs[0].seed, hashfunc=mhs[0].hashfunc, hashvalues=hashvalues,
                   permutations=mhs[0].permutations, gpu_mode=mhs[0]._gpu_mode)

    @classmethod
    def bulk(cls, b: Iterable, **minhash_kwargs) -> list:
        """MinHashes of many documents (each an iterable of values), in C++ and in parallel with
        the default hashfunc and bytes values."""
        # Lists and tuples are read where they are (C++ reads them holding the GIL); any other
        # iterable is made a list once, so that the Python way can read it again.
        docs = [d if type(d) in (list, tuple) else list(d) for d in b]
        proto = cls(**minhash_kwargs)
        if proto.hashfunc is sha1_hash32 and proto._gpu_mode != "always":
            a, bb = proto._ab()
            try:
                rows = _native.bulk_sha1(docs, a, bb)
            except TypeError:  # values other than bytes: the Python way
                rows = None
            if rows is not None:
                return _without_collection(lambda: [proto._with_hashvalues(row) for row in rows.copy()])
        return list(cls._generate(proto, docs))

    @classmethod
    def generator(cls, b: Iterable, **minhash_kwargs) -> Generator:
        proto = cls(**minhash_kwargs)
        return cls._generate(proto, b)

    @staticmethod
    def _generate(proto, docs):
        for d in docs:
            m = proto.copy()
            m.update_batch(d)
            yield m

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        if "gpu_mode" in state:  # pickled by an earlier neardup
            state = dict(state)
            state["_gpu_mode"] = state.pop("gpu_mode")
        self.__dict__.update(state)


class LeanMinHash(MinHash):
    """A frozen MinHash without its permutations: smaller, serialisable to bytes."""

    __slots__ = ("seed", "hashvalues")

    def _initialize_slots(self, seed, hashvalues) -> None:
        self.seed = seed
        self.hashvalues = self._parse_hashvalues(hashvalues)

    def __init__(self, minhash: Optional[MinHash] = None, seed: Optional[int] = None, hashvalues=None):
        if minhash is not None:
            self._initialize_slots(minhash.seed, minhash.hashvalues)
        else:
            self._initialize_slots(seed, hashvalues)

    def update(self, b) -> None:
        raise TypeError("Cannot update a LeanMinHash")

    def update_batch(self, b, **kwargs) -> None:
        raise TypeError("Cannot update a LeanMinHash")

    def copy(self) -> "LeanMinHash":
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(self.seed, self.hashvalues.copy())
        return lmh

    def bytesize(self, byteorder: str = "@") -> int:
        return struct.calcsize(byteorder + "q") + struct.calcsize(byteorder + "i") + len(self) * struct.calcsize(byteorder + "I")

    def serialize(self, buf, byteorder: str = "@") -> None:
        if len(buf) < self.bytesize():
            raise ValueError("The buffer does not have enough space for holding this MinHash.")
        fmt = "%sqi%dI" % (byteorder, len(self))
        struct.pack_into(fmt, buf, 0, self.seed, len(self), *self.hashvalues.tolist())

    @classmethod
    def deserialize(cls, buf, byteorder: str = "@") -> "LeanMinHash":
        fmt_seed_size = "%sqi" % byteorder
        seed, num_perm = struct.unpack_from(fmt_seed_size, buf, 0)
        offset = struct.calcsize(fmt_seed_size)
        hashvalues = struct.unpack_from(byteorder + "%dI" % num_perm, buf, offset)
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(seed, hashvalues)
        return lmh

    def __getstate__(self):
        buf = bytearray(self.bytesize())
        struct.pack_into("qi%dI" % len(self), buf, 0, self.seed, len(self), *self.hashvalues.tolist())
        return buf

    def __setstate__(self, buf):
        seed, num_perm = struct.unpack_from("qi", buf, 0)
        hashvalues = struct.unpack_from("%dI" % num_perm, buf, struct.calcsize("qi"))
        self._initialize_slots(seed, hashvalues)

    def __hash__(self):
        return hash((self.seed, tuple(self.hashvalues)))

    @classmethod
    def union(cls, *lmhs) -> "LeanMinHash":
        hashvalues = cls._union_values(lmhs, "The unioning MinHash must have the same seed, number of permutation functions and hashobj")
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(lmhs[0].seed, hashvalues)
        return lmh


# ---- LSH ----

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


@functools.lru_cache(maxsize=256)
def _optimal_param(threshold: float, num_perm: int, false_positive_weight: float, false_negative_weight: float):
    """The (b, r) with b * r <= num_perm that minimises the weighted sum of the false positive
    and false negative areas of the S-curve 1 - (1 - s^r)^b (Leskovec et al., MMDS ch. 3)."""
    min_error = float("inf")
    opt = (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = _false_positive_probability(threshold, b, r)
            fn = _false_negative_probability(threshold, b, r)
            error = fp * false_positive_weight + fn * false_negative_weight
            if error < min_error:
                min_error = error
                opt = (b, r)
    return opt


class MinHashLSH:
    """The MinHash LSH index with in-memory storage, as datasketch's ``MinHashLSH`` with
    ``storage_config={"type": "dict"}``. ``hashtables[i]`` maps band i's keys to the keys in that
    bucket; ``keys`` maps each key to its band keys."""

    def __init__(self, threshold: float = 0.9, num_perm: int = 128, weights=(0.5, 0.5), params=None,
                 storage_config: Optional[dict] = None, prepickle: Optional[bool] = None,
                 hashfunc: Optional[Callable[[bytes], bytes]] = None) -> None:
        storage_config = {"type": "dict"} if not storage_config else storage_config
        if storage_config.get("type", "dict") != "dict":
            raise ValueError('neardup.datasketch.MinHashLSH keeps its tables in memory: storage_config type "dict" only')
        self._buffer_size = 50000
        if threshold > 1.0 or threshold < 0.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        self.h = num_perm
        if params is not None:
            self.b, self.r = params
            if self.b * self.r > num_perm:
                raise ValueError(f"The product of b and r in params is {self.b} * {self.r} = {self.b * self.r} -- "
                                 f"it must be less than num_perm {num_perm}. Did you forget to specify num_perm?")
        else:
            self.b, self.r = _optimal_param(float(threshold), int(num_perm), float(weights[0]), float(weights[1]))
        if self.b < 2:
            raise ValueError("The number of bands are too small (b < 2)")
        self.prepickle = bool(prepickle) if prepickle is not None else False
        self.hashfunc = hashfunc
        self.hashtables = [dict() for _ in range(self.b)]
        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]
        self.keys = dict()
        self._query_buffer = []

    @property
    def buffer_size(self) -> int:
        return self._buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self._buffer_size = value

    def _H(self, hs) -> bytes:
        key = bytes(np.asarray(hs, dtype=np.uint64).byteswap().data)
        return self.hashfunc(key) if self.hashfunc else key

    def _band_keys(self, minhash):
        hv = minhash.hashvalues
        return [self._H(hv[start:end]) for start, end in self.hashranges]

    def insert(self, key: Hashable, minhash, check_duplication: bool = True) -> None:
        self._insert(key, minhash, check_duplication)

    def _insert(self, key, minhash, check_duplication=True) -> None:
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        if self.prepickle:
            key = pickle.dumps(key)
        if check_duplication and key in self.keys:
            raise ValueError("The given key already exists")
        Hs = self._band_keys(minhash)
        self.keys.setdefault(key, []).extend(Hs)
        for H, table in zip(Hs, self.hashtables):
            table.setdefault(H, []).append(key)

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
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        candidates = set()
        for H, table in zip(self._band_keys(minhash), self.hashtables):
            candidates.update(table.get(H, ()))
        if self.prepickle:
            return [pickle.loads(k) for k in candidates]
        return list(candidates)

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
        return key in self.keys

    def remove(self, key) -> None:
        if self.prepickle:
            key = pickle.dumps(key)
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


class _Session:
    """What both sessions share: the tables are in memory, so changes are immediate and closing
    has nothing to flush."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int):
        self.lsh = lsh
        self.lsh.buffer_size = buffer_size

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

    def close(self) -> None:
        pass


class MinHashLSHInsertionSession(_Session):
    """Context manager for inserting many keys."""

    def insert(self, key, minhash, check_duplication: bool = True) -> None:
        self.lsh._insert(key, minhash, check_duplication)


class MinHashLSHDeletionSession(_Session):
    """Context manager for removing many keys."""

    def remove(self, key) -> None:
        self.lsh.remove(key)
