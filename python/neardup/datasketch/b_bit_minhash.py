"""datasketch's bBitMinHash: a MinHash that keeps only the lowest b bits of each hash value (Li
and König 2010, "b-Bit Minwise Hashing"), with the estimator's correction for the collisions of
b bits.

The definitions are datasketch's:

* hash value i is ``minhash.hashvalues[i] & (2^b - 1)`` as uint32; b in [0, 32], r <= 1;
* ``jaccard`` is ``(E - C1) / (1 - C2)`` with E the share of equal values,
  ``A(r, b) = 2^-b`` for r = 0, else ``r (1 - r)^(2^b - 1) / (1 - (1 - r)^(2 b))``, and
  ``C1, C2 = A1, A2`` when both r are 0, else ``(A1 r2 + A2 r1) d`` and ``(A1 r1 + A2 r2) d``
  with ``d = 1 / (r1 + r2)`` (for b = 0 the estimate divides by zero, as datasketch's does). The paper's denominator has ``(1 - r)^(2^b)``, not
  ``2 b``: the two agree for b <= 2, and datasketch's is kept so that the values are its;
* the pickled bytes are ``<qBdi`` (seed, b, r, the number of values), then the values packed
  into little-endian 64-bit blocks of slots of 1, 2, 4, 8, 16 or 32 bits (the smallest that
  holds b bits, 4 for b = 0), the first value in a block's highest slot.

The packing runs in C++, where datasketch loops in Python per value.
"""
from __future__ import annotations

import struct

import numpy as np

from .. import _native

_PARAMS = struct.Struct("<qBdi")
_BLOCK_BITS = 64
_U64 = np.dtype(np.uint64)


def _slot_bits(b: int) -> int:
    for bits in (1, 2, 4, 8, 16, 32):
        if b <= bits and not (b == 0 and bits < 4):
            return bits
    raise ValueError("Incorrect value of b")


class bBitMinHash:  # noqa: N801 (datasketch's name)
    """The b-bit MinHash of a MinHash (``minhash``), keeping ``b`` bits of each value; ``r`` is
    the ratio of the set's size to the universe's, for the estimator's correction (0: tiny)."""

    __slots__ = ("b", "hashvalues", "r", "seed")

    def __init__(self, minhash, b: int = 1, r: float = 0.0):
        b = int(b)
        r = float(r)
        if b > 32 or b < 0:
            raise ValueError("b must be an integer in [0, 32]")
        if r > 1.0:
            raise ValueError("r must be a float in [0.0, 1.0]")
        hv = minhash.hashvalues
        if isinstance(hv, np.ndarray) and hv.dtype == _U64:  # a dtype against a dtype: a type would be converted first
            self.hashvalues = _native.bbit_values(hv, b)  # one pass, no temporary
        else:
            self.hashvalues = np.bitwise_and(hv, (1 << b) - 1).astype(np.uint32)
        self.seed = minhash.seed
        self.b = b
        self.r = r

    def __eq__(self, other) -> bool:
        return (type(self) is type(other) and self.seed == other.seed and self.b == other.b and self.r == other.r
                and np.array_equal(self.hashvalues, other.hashvalues))

    __hash__ = None

    def jaccard(self, other: "bBitMinHash") -> float:
        """The corrected estimate of the Jaccard similarity of the two sets."""
        if self.b != other.b:
            raise ValueError("Cannot compare two b-bit MinHashes with different b values")
        if self.seed != other.seed:
            raise ValueError("Cannot compare two b-bit MinHashes with different set of permutations")
        raw = float(np.count_nonzero(self.hashvalues == other.hashvalues)) / float(self.hashvalues.size)
        a1, a2 = self._calc_a(self.r, self.b), self._calc_a(other.r, other.b)
        c1, c2 = self._calc_c(a1, a2, self.r, other.r)
        return (raw - c1) / (1 - c2)

    @staticmethod
    def _calc_a(r: float, b: int) -> float:
        if r == 0.0:
            return 1.0 / (1 << b)
        return r * (1 - r) ** (2**b - 1) / (1 - (1 - r) ** (2 * b))

    @staticmethod
    def _calc_c(a1: float, a2: float, r1: float, r2: float):
        if r1 == 0.0 and r2 == 0.0:
            return a1, a2
        div = 1 / (r1 + r2)
        return (a1 * r2 + a2 * r1) * div, (a1 * r1 + a2 * r2) * div

    def bytesize(self) -> int:
        """The bytes of the serialized form: the parameters, then the 64-bit blocks."""
        per_block = _BLOCK_BITS // _slot_bits(self.b)
        return _PARAMS.size + 8 * -(-self.hashvalues.size // per_block)

    def __reduce__(self):
        # Unpickled by one call (_restore), not by pickle's object creation and __setstate__:
        # half the time of a round trip. The state is __getstate__'s bytes.
        return (_restore, (self._state(),))

    def _state(self) -> bytes:
        state = _native.bbit_state(self.seed, self.b, self.r, self.hashvalues)  # one C++ call for a uint32 array
        if state is None:
            state = _PARAMS.pack(self.seed, self.b, self.r, self.hashvalues.size) + _native.bbit_pack(self.hashvalues, _slot_bits(self.b))
        return state

    def __getstate__(self):
        return bytearray(self._state())

    def __setstate__(self, buf):
        self.seed, self.b, self.r, self.hashvalues = _native.bbit_restore(buf)


def _restore(state: bytes) -> bBitMinHash:
    """A bBitMinHash from its pickled bytes (bBitMinHash.__reduce__)."""
    m = bBitMinHash.__new__(bBitMinHash)
    m.__setstate__(state)
    return m
