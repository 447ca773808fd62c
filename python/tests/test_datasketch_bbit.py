"""neardup.datasketch's bBitMinHash against datasketch's definitions (the module's docstring)."""
import copy
import pickle
import struct

import numpy as np
import pytest

from neardup.datasketch import MinHash, bBitMinHash


def estimate(e, b1, r1, b2, r2):
    def a(r, b):
        return 1.0 / (1 << b) if r == 0.0 else r * (1 - r) ** (2**b - 1) / (1 - (1 - r) ** (2 * b))
    a1, a2 = a(r1, b1), a(r2, b2)
    if r1 == 0.0 and r2 == 0.0:
        c1, c2 = a1, a2
    else:
        div = 1 / (r1 + r2)
        c1, c2 = (a1 * r2 + a2 * r1) * div, (a1 * r1 + a2 * r2) * div
    return (e - c1) / (1 - c2)


def packed(values, b, seed, r):
    """The pickled bytes, a value at a time: slots of the smallest of 1, 2, 4, ... 32 bits that
    holds b (4 for 0), 64 bits a block, the first value highest."""
    bits = next(s for s in (1, 2, 4, 8, 16, 32) if b <= s and not (b == 0 and s < 4))
    per = 64 // bits
    blocks = []
    for start in range(0, len(values), per):
        x = 0
        for j, v in enumerate(values[start:start + per]):
            x |= int(v) << (per - 1 - j) * bits
        blocks.append(x)
    return struct.pack("<qBdi%dQ" % len(blocks), seed, b, r, len(values), *blocks)


@pytest.mark.parametrize("b", [0, 1, 2, 3, 4, 5, 8, 12, 16, 27, 32])
def test_values_estimate_and_bytes(b):
    rng = np.random.default_rng(b)
    for k in (1, 7, 64, 128, 333):
        hv = rng.integers(0, 2**32, k, dtype=np.uint64)
        other = hv.copy()
        other[rng.random(k) < 0.4] = rng.integers(0, 2**32)
        m1, m2 = MinHash(hashvalues=hv, seed=3), MinHash(hashvalues=other, seed=3)
        for r1, r2 in ((0.0, 0.0), (0.3, 0.0), (0.25, 0.7)):
            x, y = bBitMinHash(m1, b, r1), bBitMinHash(m2, b, r2)
            assert x.hashvalues.dtype == np.uint32 and np.array_equal(x.hashvalues, hv & ((1 << b) - 1))
            e = np.count_nonzero(x.hashvalues == y.hashvalues) / k
            if b == 0:  # A(0, 0) = C2 = 1, and A(r, 0) divides by 1 - (1 - r)^0: datasketch divides by zero
                with pytest.raises(ZeroDivisionError):
                    x.jaccard(y)
            else:
                assert x.jaccard(y) == estimate(e, b, r1, b, r2)
            state = bytes(x.__getstate__())
            assert state == packed(x.hashvalues, b, 3, r1) and x.bytesize() == len(state)
            again = pickle.loads(pickle.dumps(x))
            assert again == x and type(again) is bBitMinHash
            # Values that are not a uint32 array are packed by the general path, to the same bytes.
            wide = copy.copy(x)
            wide.hashvalues = x.hashvalues.astype(np.int64)
            assert bytes(wide.__getstate__()) == state


def test_errors_and_equality():
    m = MinHash(num_perm=16)
    m.update(b"a")
    with pytest.raises(ValueError):
        bBitMinHash(m, 33)
    with pytest.raises(ValueError):
        bBitMinHash(m, -1)
    with pytest.raises(ValueError):
        bBitMinHash(m, 1, 1.5)
    other = MinHash(num_perm=16, seed=2)
    with pytest.raises(ValueError):
        bBitMinHash(m, 1).jaccard(bBitMinHash(m, 2))
    with pytest.raises(ValueError):
        bBitMinHash(m, 1).jaccard(bBitMinHash(other, 1))
    assert bBitMinHash(m, 2) == bBitMinHash(m.copy(), 2)
    assert bBitMinHash(m, 2) != bBitMinHash(m, 3) and bBitMinHash(m, 2) != bBitMinHash(m, 2, 0.5)
    # Hash values of another type (a sketch-like object) take NumPy's way, to the same values.
    class Like:
        seed = m.seed
        hashvalues = m.hashvalues.astype(np.int64)
    assert bBitMinHash(Like(), 5) == bBitMinHash(m, 5)
    # With b = 32 nothing is lost, and the correction of 2^-32 is tiny: about the MinHash's estimate.
    n = MinHash(num_perm=16)
    n.update(b"a")
    n.update(b"b")
    assert abs(bBitMinHash(m, 32).jaccard(bBitMinHash(n, 32)) - m.jaccard(n)) < 1e-9
