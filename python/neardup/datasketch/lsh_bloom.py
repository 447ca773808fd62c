"""datasketch's MinHashLSHBloom (LSHBloom: Khan et al. 2024): an LSH index that answers only
"has a near-duplicate of this been inserted?", keeping one Bloom filter per band instead of the
bands' keys, so that its memory does not grow with the documents.

The definitions are datasketch's: the bands (b, r) as MinHashLSH chooses them (or ``params``); a
band's key is the sum of its r hash values modulo 2^61 - 1; ``insert`` adds each band's key to
that band's filter; ``query`` is true when any band's key is in its filter.

The Bloom filter (``BloomTable``) is neardup's own, since datasketch's comes from
pybloomfiltermmap3, which Debian does not ship: m = ceil(-n ln(fp) / ln(2)^2) bits and
k = max(1, round(m / n ln 2)) bit positions per key by double hashing (Kirsch and Mitzenmacher,
2006) of two 64-bit mixes of the key, so that at most n keys it reports a key it never saw
with probability about fp, and never misses one it saw. With a file name the bits live in that
file (a 32-byte header, then the bits), memory-mapped and written back by ``sync``; a file that
exists is opened with the size and k it was made with. Its format is neardup's, not
pybloomfiltermmap3's. An insert or a query of a sketch of uint64 values sets or tests every
band's bits in one C++ call (``python/src/bloom.cpp``), on the same arrays.
"""
from __future__ import annotations

import math
import os
import struct
import warnings
from typing import Optional

import numpy as np

from .. import _native
from ._derived import DerivedState
from .lsh import _bands_of

_bloom_insert, _bloom_query = _native.bloom_insert, _native.bloom_query

_MERSENNE = np.uint64((1 << 61) - 1)
_MAGIC = b"NDBLOOM1"
_HEADER = struct.Struct("<8sQQQ")  # magic, bits, k, reserved
_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64's finaliser: a 64-bit key to a well-spread 64-bit hash."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _M64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _M64
    return x ^ (x >> 31)


class BloomTable:
    """A Bloom filter for one band: ``item_count`` keys at a false positive rate ``fp``, keys
    made from ``band_size`` hash values; in memory, or in the file ``fname``."""

    def __init__(self, item_count: int, fp: float, band_size: int, fname: Optional[str] = None):
        self.r = band_size
        self.fname = fname
        if fname is not None and os.path.exists(fname):
            with open(fname, "rb") as f:
                magic, bits, k, _ = _HEADER.unpack(f.read(_HEADER.size).ljust(_HEADER.size, b"\0"))
            if magic != _MAGIC or bits == 0 or k == 0 or os.path.getsize(fname) != _HEADER.size + (bits + 7) // 8:
                raise ValueError(f"{fname}: not a Bloom filter of neardup.datasketch (or cut short); remove it to start anew")
            self.bits, self.k = bits, k
        else:
            if item_count <= 0 or not 0 < fp < 1:
                raise ValueError("a Bloom filter needs item_count > 0 and fp in (0, 1)")
            self.bits = max(8, math.ceil(-item_count * math.log(fp) / math.log(2) ** 2))
            self.k = max(1, round(self.bits / item_count * math.log(2)))
        nbytes = (self.bits + 7) // 8
        if fname is None:
            self._array = np.zeros(nbytes, dtype=np.uint8)
        else:
            if not os.path.exists(fname):
                with open(fname, "wb") as f:
                    f.write(_HEADER.pack(_MAGIC, self.bits, self.k, 0))
                    f.truncate(_HEADER.size + nbytes)
            self._array = np.memmap(fname, dtype=np.uint8, mode="r+", offset=_HEADER.size, shape=(nbytes,))

    def _positions(self, hashvalues) -> np.ndarray:
        if len(hashvalues) != self.r:
            raise RuntimeError(f"Invalid length for indices, {len(hashvalues)}, expected {self.r} hashvalues in band")
        key = int(np.asarray(hashvalues, dtype=np.uint64).sum() % _MERSENNE)
        h1, h2 = _mix(key), _mix(key ^ 0x9E3779B97F4A7C15) | 1
        return np.array([(h1 + i * h2) % self.bits for i in range(self.k)], dtype=np.uint64)

    def insert(self, hashvalues) -> None:
        p = self._positions(hashvalues)
        np.bitwise_or.at(self._array, (p >> np.uint64(3)).astype(np.intp), (1 << (p & np.uint64(7))).astype(np.uint8))

    def query(self, hashvalues) -> bool:
        p = self._positions(hashvalues)
        return bool(np.all(self._array[(p >> np.uint64(3)).astype(np.intp)] & (1 << (p & np.uint64(7))).astype(np.uint8)))

    def sync(self) -> None:
        """Writes the bits back to the file (a no-op with a warning in memory)."""
        if self.fname is None:
            warnings.warn("Attempting to save in-memory Bloom filter, this is a no-op.", RuntimeWarning, stacklevel=2)
            return
        self._array.flush()
        fd = os.open(self.fname, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class MinHashLSHBloom(DerivedState):
    """LSH with a Bloom filter per band: ``n`` the most documents expected, ``fp`` each filter's
    false positive rate, ``save_dir`` the folder of the filters' files (band-I.bf), or None to
    keep them in memory (with a warning: nothing is saved)."""

    def __init__(self, threshold: float = 0.9, num_perm: int = 128, n: Optional[int] = None, fp: Optional[float] = None,
                 save_dir: Optional[str] = None, weights: tuple = (0.5, 0.5), params: Optional[tuple] = None) -> None:
        if n is None or n <= 0:
            raise ValueError("n for LSHBloom must be >= 0")
        if fp is None or fp >= 1.0 or fp <= 0.0:
            raise ValueError("fp must be in (0.0, 1.0)")
        self.h = num_perm
        self.b, self.r = _bands_of(threshold, num_perm, weights, params)
        if save_dir is None:
            warnings.warn("Creating LSHBloom index without save directory, this index will not be persisted.",
                          RuntimeWarning, stacklevel=2)
        if save_dir is not None:
            os.makedirs(save_dir, exist_ok=True)
        self.hashtables = [BloomTable(item_count=n, fp=fp, band_size=self.r,
                                      fname=os.path.join(save_dir, f"band-{i}.bf") if save_dir is not None else None)
                           for i in range(self.b)]
        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]

    def _check(self, minhash) -> None:
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))

    # The filters' bits as one C++ object (_native.BloomBands), so that an insert or a query of a
    # sketch of uint64 values is one C++ call. Each call hands it ``hashtables``, and it declines
    # (None) when they are not the tables it was made from; it is then made again, or left
    # None while a table is not this module's BloomTable.
    _derived = ("_fast",)

    def _fast_bands(self):
        tables = self.hashtables
        ours = isinstance(tables, list) and len(tables) == self.b and all(type(t) is BloomTable and t.r == self.r for t in tables)
        bands = _native.BloomBands(tables, [t._array for t in tables], [t.bits for t in tables], [t.k for t in tables], self.r,
                                   self.h) if ours else None
        self.__dict__["_fast"] = bands
        return bands

    def _one_call(self, fn, minhash):
        """fn(bands, hashtables, minhash) (_bloom_insert or _bloom_query) through the filters' C++
        object, made again when the tables changed; NotImplemented where the Python path answers."""
        bands = self.__dict__.get("_fast")
        out = fn(bands, self.hashtables, minhash) if bands is not None else None
        if out is None:
            bands = self._fast_bands()
            out = fn(bands, self.hashtables, minhash) if bands is not None else NotImplemented
        return out

    def insert(self, minhash) -> None:
        if self._one_call(_bloom_insert, minhash) is not NotImplemented:
            return
        self._check(minhash)
        for (start, end), table in zip(self.hashranges, self.hashtables):
            table.insert(minhash.hashvalues[start:end])

    def query(self, minhash) -> bool:
        """Whether a band of ``minhash`` collides with an inserted one's (or a filter's false
        positive): likely a near-duplicate at the threshold."""
        found = self._one_call(_bloom_query, minhash)
        if found is not NotImplemented:
            return found
        self._check(minhash)
        return any(table.query(minhash.hashvalues[start:end]) for (start, end), table in zip(self.hashranges, self.hashtables))

    def sync(self) -> None:
        for table in self.hashtables:
            table.sync()
