"""datasketch's MinHash and LeanMinHash (see the package's docstring for the definitions)."""
from __future__ import annotations

import copy as _copy
import functools
import gc
import hashlib
import struct
import warnings
from collections.abc import Generator, Iterable
from typing import Callable, Optional

import numpy as np

from .. import _native

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


# The C++ LSH stores read the length of these from their values instead of calling __len__.
_native.sketch_length_types((MinHash, LeanMinHash))
