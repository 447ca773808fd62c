"""datasketch's HyperLogLog (Flajolet, Fusy, Gandouet and Meunier 2007): the number of distinct
values of a stream, estimated from 2^p registers of a byte each.

The definitions are datasketch's:

* a value is hashed to 32 bits by ``hashfunc`` (``sha1_hash32`` by default); its lowest p bits
  pick a register, and the register keeps the largest rank ``32 - p - bit_length(h >> p) + 1``
  seen (a rank of 0 or less is a hash too wide: ValueError);
* ``count`` is ``E = alpha m^2 / sum(2^-reg)`` (alpha 0.673, 0.697, 0.709 for p = 4, 5, 6, else
  0.7213 / (1 + 1.079 / m)), linear counting ``m log(m / V)`` when E <= 5m/2 (V registers at 0),
  ``-2^32 log(1 - E / 2^32)`` when E > 2^32 / 30, with a warning when E is within 15% of 5m/2;
  the sums are NumPy's, so the counts are datasketch's to the last bit;
* the serialized form is p, then the m registers, a byte each; a pickle is that form (and, as in
  datasketch, comes back with the default hash function).

``update_batch`` (neardup's own: datasketch has ``update`` only) hashes and updates in C++ with
the default hash function.

``HyperLogLogPlusPlus`` (Heule, Nunkesser and Hall, EDBT 2013) is datasketch's too: 64-bit
hashes (``sha1_hash64``), no large-range correction, linear counting below a threshold per p,
and below 5m the raw estimate less the mean bias of the 6 nearest rows of an empirical table.
The tables are neardup's own (``_hllpp_tables.py``, computed by ``tools/hllpp_tables.py`` with
the paper's procedure), not the paper's, so counts in that range differ from datasketch's within
the estimator's error; registers, bytes and pickles are the same.
"""
from __future__ import annotations

import copy as _copy
import hashlib
import struct
import warnings
from collections.abc import Iterable
from typing import Callable, Optional

import numpy as np

from .. import _native
from . import _hllpp_tables
from .minhash import sha1_hash32


def sha1_hash64(data) -> int:
    """The first eight bytes of SHA-1(data), little-endian (datasketch's 64-bit hashfunc)."""
    return struct.unpack("<Q", hashlib.sha1(data).digest()[:8])[0]


class HyperLogLog:
    """HyperLogLog with ``p`` in [4, 16] (2^p registers), or the registers ``reg`` of another (a
    NumPy array of a power-of-two size), and ``hashfunc`` (values to 32-bit integers)."""

    __slots__ = ("alpha", "hashfunc", "m", "max_rank", "p", "reg")
    _hash_range_bit = 32
    _hash_range_byte = 4

    def _get_alpha(self, p: int) -> float:
        if not (4 <= p <= 16):
            raise ValueError("p=%d should be in range [4 : 16]" % p)
        if p == 4:
            return 0.673
        if p == 5:
            return 0.697
        if p == 6:
            return 0.709
        return 0.7213 / (1.0 + 1.079 / (1 << p))

    def __init__(self, p: int = 8, reg: Optional[np.ndarray] = None, hashfunc: Callable = sha1_hash32,
                 hashobj: Optional[object] = None):
        if reg is None:
            self.p = p
            self.m = 1 << p
            self.reg = np.zeros((self.m,), dtype=np.int8)
        else:
            if not isinstance(reg, np.ndarray):
                raise ValueError("The imported register must be a numpy.ndarray.")
            self.m = reg.size
            self.p = self.m.bit_length() - 1
            if 1 << self.p != self.m:
                raise ValueError("The imported register has incorrect size. Expect a power of 2.")
            self.reg = reg
        if not callable(hashfunc):
            raise ValueError("The hashfunc must be a callable.")
        if hashobj is not None:
            warnings.warn("hashobj is deprecated, use hashfunc instead.", DeprecationWarning, stacklevel=2)
        self.hashfunc = hashfunc
        self.alpha = self._get_alpha(self.p)
        self.max_rank = self._hash_range_bit - self.p

    def update(self, b) -> None:
        hv = self.hashfunc(b)
        reg_index = hv & (self.m - 1)
        bits = hv >> self.p
        self.reg[reg_index] = max(self.reg[reg_index], self._get_rank(bits))

    def update_batch(self, b: Iterable) -> None:
        """Adds many values: as ``update`` on each, in C++ with the default hash function and
        bytes values."""
        values = b if type(b) in (list, tuple) else list(b)
        if not values:
            return
        hv = None
        native = {sha1_hash32: _native.sha1_hash32_all, sha1_hash64: _native.sha1_hash64_all}.get(self.hashfunc)
        if native is not None:
            try:
                hv = native(values).astype(np.uint64)
            except TypeError:  # values other than bytes
                hv = None
        if hv is None:
            hashes = [self.hashfunc(v) for v in values]
            if any(h < 0 or h >= 1 << 64 for h in hashes):  # wider than 64 bits: as update does
                for v in values:
                    self.update(v)
                return
            hv = np.array(hashes, dtype=np.uint64)
        self._ensure_own_registers()
        _native.hll_update(self.reg, hv, self.p, self.max_rank)

    def _ensure_own_registers(self) -> None:
        """The registers as C++ updates them: a writable, contiguous int8 array."""
        if not (isinstance(self.reg, np.ndarray) and self.reg.dtype == np.int8 and self.reg.flags.c_contiguous and self.reg.flags.writeable):
            self.reg = np.ascontiguousarray(self.reg, dtype=np.int8).copy()

    def count(self) -> float:
        e = self.alpha * float(self.m**2) / np.sum(2.0 ** (-self.reg))
        small_range_threshold = (5.0 / 2.0) * self.m
        if abs(e - small_range_threshold) / small_range_threshold < 0.15:
            warnings.warn("Warning: estimate is close to error correction threshold. "
                          "Output may not satisfy HyperLogLog accuracy guarantee.", stacklevel=2)
        if e <= small_range_threshold:
            num_zero = self.m - np.count_nonzero(self.reg)
            return self._linearcounting(num_zero)
        if e <= (1.0 / 30.0) * (1 << 32):
            return e
        return self._largerange_correction(e)

    def merge(self, other: "HyperLogLog") -> None:
        if self.m != other.m or self.p != other.p:
            raise ValueError("Cannot merge HyperLogLog with different precisions.")
        self.reg = np.maximum(self.reg, other.reg)

    def digest(self) -> np.ndarray:
        return _copy.copy(self.reg)

    def copy(self) -> "HyperLogLog":
        return self.__class__(reg=self.digest(), hashfunc=self.hashfunc)

    def is_empty(self) -> bool:
        return not np.any(self.reg)

    def clear(self) -> None:
        self.reg = np.zeros((self.m,), dtype=np.int8)

    def __len__(self) -> int:
        return len(self.reg)

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.p == other.p and self.m == other.m and np.array_equal(self.reg, other.reg)

    __hash__ = None

    def _get_rank(self, bits: int) -> int:
        rank = self.max_rank - bits.bit_length() + 1
        if rank <= 0:
            raise ValueError("Hash value overflow, maximum size is %d bits" % self.max_rank)
        return rank

    def _linearcounting(self, num_zero):
        return self.m * np.log(self.m / float(num_zero))

    def _largerange_correction(self, e):
        return -(1 << 32) * np.log(1.0 - e / (1 << 32))

    @classmethod
    def union(cls, *hyperloglogs: "HyperLogLog") -> "HyperLogLog":
        if len(hyperloglogs) < 2:
            raise ValueError("Cannot union less than 2 HyperLogLog sketches")
        m = hyperloglogs[0].m
        if not all(h.m == m for h in hyperloglogs):
            raise ValueError("Cannot union HyperLogLog sketches with different precisions")
        reg = np.maximum.reduce([h.reg for h in hyperloglogs])
        return cls(reg=reg, hashfunc=hyperloglogs[0].hashfunc)

    def bytesize(self) -> int:
        return 1 + self.m

    def serialize(self, buf) -> None:
        if len(buf) < self.bytesize():
            raise ValueError("The buffer does not have enough space for holding this HyperLogLog.")
        struct.pack_into("B", buf, 0, self.p)
        memoryview(buf)[1:1 + self.m] = np.asarray(self.reg, dtype=np.int8).astype(np.uint8).tobytes()

    @classmethod
    def deserialize(cls, buf) -> "HyperLogLog":
        p = struct.unpack_from("B", memoryview(buf), 0)[0]
        h = cls(p)
        h.reg = np.frombuffer(bytes(memoryview(buf)[1:1 + h.m]), dtype=np.uint8).astype(np.int8)
        return h

    def __getstate__(self):
        buf = bytearray(self.bytesize())
        self.serialize(buf)
        return buf

    def __setstate__(self, buf):
        p = struct.unpack_from("B", memoryview(buf), 0)[0]
        self.__init__(p=p)
        self.reg = np.frombuffer(bytes(memoryview(buf)[1:1 + self.m]), dtype=np.uint8).astype(np.int8)


# The tables as arrays once, not at every count.
_PLUSPLUS_RAW = [np.asarray(t) for t in _hllpp_tables.RAW_ESTIMATES]
_PLUSPLUS_BIAS = [np.asarray(t) for t in _hllpp_tables.BIASES]


class HyperLogLogPlusPlus(HyperLogLog):
    """HyperLogLog++ with ``p`` in [4, 16], or the registers ``reg`` of another, and ``hashfunc``
    (values to 64-bit integers, ``sha1_hash64`` by default)."""

    __slots__ = ()
    _hash_range_bit = 64
    _hash_range_byte = 8

    def __init__(self, p: int = 8, reg: Optional[np.ndarray] = None, hashfunc: Callable = sha1_hash64,
                 hashobj: Optional[object] = None):
        super().__init__(p=p, reg=reg, hashfunc=hashfunc, hashobj=hashobj)

    def _get_threshold(self, p: int) -> float:
        return _hllpp_tables.THRESHOLDS[p - 4]

    def _estimate_bias(self, e: float, p: int) -> float:
        raw, bias = _PLUSPLUS_RAW[p - 4], _PLUSPLUS_BIAS[p - 4]
        nearest = np.argsort((e - raw) ** 2, kind="stable")[:6]
        return float(np.mean(bias[nearest]))

    def count(self) -> float:
        num_zero = self.m - np.count_nonzero(self.reg)
        if num_zero > 0:
            lc = self._linearcounting(num_zero)
            if lc <= self._get_threshold(self.p):
                return lc
        e = self.alpha * float(self.m**2) / np.sum(2.0 ** (-self.reg))
        if e <= 5 * self.m:
            return e - self._estimate_bias(e, self.p)
        return e
