"""neardup.datasketch's HyperLogLog against datasketch's definitions (the module's docstring)."""
import hashlib
import math
import pickle
import struct
import warnings

import numpy as np
import pytest

from neardup.datasketch import HyperLogLog, HyperLogLogPlusPlus, sha1_hash32, sha1_hash64


def registers(values, p, hashfunc=sha1_hash32, width=32):
    reg = [0] * (1 << p)
    for v in values:
        h = hashfunc(v)
        rank = width - p - (h >> p).bit_length() + 1
        reg[h & ((1 << p) - 1)] = max(reg[h & ((1 << p) - 1)], rank)
    return np.array(reg, dtype=np.int8)


def estimate(reg, p):
    m = 1 << p
    alpha = {4: 0.673, 5: 0.697, 6: 0.709}.get(p, 0.7213 / (1.0 + 1.079 / m))
    e = alpha * float(m * m) / np.sum(2.0 ** (-reg))
    if e <= 2.5 * m:
        return m * np.log(m / float(m - np.count_nonzero(reg)))
    if e <= (1 << 32) / 30.0:
        return e
    return -(1 << 32) * np.log(1.0 - e / (1 << 32))


def test_hash_functions():
    assert sha1_hash64(b"abc") == struct.unpack("<Q", hashlib.sha1(b"abc").digest()[:8])[0]
    assert sha1_hash32(b"abc") == sha1_hash64(b"abc") & 0xFFFFFFFF


@pytest.mark.parametrize("p", [4, 7, 10, 14, 16])
def test_registers_and_count_equal_the_definition(p):
    rng = np.random.default_rng(p)
    for n in (0, 1, 50, 2000, 60000):
        values = [b"%d" % x for x in rng.integers(0, 10**12, n)]
        one, batch = HyperLogLog(p), HyperLogLog(p)
        for v in values[: n // 2]:
            one.update(v)
        batch.update_batch(values[: n // 2])
        batch.update_batch(iter(values[n // 2:]))  # any iterable
        for v in values[n // 2:]:
            one.update(v)
        want = registers(values, p)
        assert np.array_equal(one.reg, want) and np.array_equal(batch.reg, want) and batch.reg.dtype == np.int8
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert batch.count() == estimate(want, p)
        if n >= 2000:  # the estimate's standard error is 1.04 / sqrt(m)
            assert abs(batch.count() - len(set(values))) < 5 * 1.04 / math.sqrt(1 << p) * len(set(values)) + 5


def test_custom_hash_functions_and_errors():
    h = HyperLogLog(4, hashfunc=lambda v: v)
    h.update_batch([0b00011111, 0xFFFFFFF1, 0x000000F5])
    assert h.reg[0b1111] == 28 and h.reg[1] == 1 and h.reg[5] == 25
    with pytest.raises(ValueError, match="overflow"):
        h.update_batch([1 << 40])
    with pytest.raises(ValueError, match="overflow"):
        h.update(1 << 40)
    with pytest.raises(ValueError):
        HyperLogLog(3)
    with pytest.raises(ValueError):
        HyperLogLog(17)
    with pytest.raises(ValueError):
        HyperLogLog(reg=[0] * 16)
    with pytest.raises(ValueError):
        HyperLogLog(reg=np.zeros(12, dtype=np.int8))
    with pytest.raises(ValueError):
        HyperLogLog(hashfunc=3)
    wide = HyperLogLog(4, hashfunc=lambda v: v)
    with pytest.raises(ValueError):
        wide.update_batch([1 << 70])  # wider than 64 bits: update's own error
    # Values other than bytes with the default hash: hashed in Python, as update does.
    with pytest.raises(TypeError):
        HyperLogLog().update_batch(["text"])


def test_count_ranges_and_warning():
    with pytest.warns(UserWarning, match="close to error correction threshold"):
        HyperLogLog(reg=np.full(16, 2, dtype=np.int8)).count()
    high = HyperLogLog(reg=np.full(16, 27, dtype=np.int8))
    assert high.count() == estimate(high.reg, 4) and high.count() > (1 << 32) / 30.0
    assert HyperLogLog().count() == 0.0


def test_surface_bytes_and_pickle():
    a, b = HyperLogLog(6), HyperLogLog(6)
    a.update_batch([b"x%d" % i for i in range(500)])
    b.update_batch([b"y%d" % i for i in range(300)])
    u = HyperLogLog.union(a, b)
    m = a.copy()
    m.merge(b)
    assert u == m and np.array_equal(u.reg, np.maximum(a.reg, b.reg))
    assert not a.is_empty() and HyperLogLog().is_empty() and len(a) == 64
    c = a.copy()
    c.clear()
    assert c.is_empty() and not a.is_empty()
    with pytest.raises(ValueError):
        a.merge(HyperLogLog(7))
    with pytest.raises(ValueError):
        HyperLogLog.union(a)
    with pytest.raises(ValueError):
        HyperLogLog.union(a, HyperLogLog(7))
    buf = bytearray(a.bytesize())
    a.serialize(buf)
    assert bytes(buf) == struct.pack("B%dB" % a.m, a.p, *a.reg.tolist())
    assert HyperLogLog.deserialize(buf) == a
    with pytest.raises(ValueError):
        a.serialize(bytearray(3))
    again = pickle.loads(pickle.dumps(a))
    assert again == a and again.hashfunc is sha1_hash32
    mine = HyperLogLog(5, hashfunc=lambda v: v)
    assert HyperLogLog.union(mine, HyperLogLog(5)).hashfunc is mine.hashfunc
    # Registers given by the caller are not written by update_batch unless they are int8.
    given = np.zeros(16, dtype=np.int64)
    h = HyperLogLog(reg=given)
    h.update_batch([b"a", b"b"])
    assert not given.any() and h.reg.any()


def plusplus_estimate(reg, p):
    """HyperLogLog++'s count by its definition, from neardup's tables."""
    from neardup.datasketch import _hllpp_tables as t
    m = 1 << p
    zeros = m - np.count_nonzero(reg)
    if zeros > 0 and m * np.log(m / float(zeros)) <= t.THRESHOLDS[p - 4]:
        return m * np.log(m / float(zeros))
    alpha = {4: 0.673, 5: 0.697, 6: 0.709}.get(p, 0.7213 / (1.0 + 1.079 / m))
    e = alpha * float(m * m) / np.sum(2.0 ** (-reg))
    if e > 5 * m:
        return e
    raw, bias = np.array(t.RAW_ESTIMATES[p - 4]), np.array(t.BIASES[p - 4])
    return e - bias[np.argsort((e - raw) ** 2, kind="stable")[:6]].mean()


@pytest.mark.parametrize("p", [4, 8, 12, 16])
def test_plusplus_registers_and_count_equal_the_definition(p):
    rng = np.random.default_rng(100 + p)
    for n in (0, 1, 30, 1000, 40000):
        values = [b"%d" % x for x in rng.integers(0, 10**12, n)]
        one, batch = HyperLogLogPlusPlus(p), HyperLogLogPlusPlus(p)
        for v in values:
            one.update(v)
        batch.update_batch(values)
        want = registers(values, p, sha1_hash64, 64)
        assert np.array_equal(one.reg, want) and np.array_equal(batch.reg, want)
        assert batch.count() == pytest.approx(plusplus_estimate(want, p), rel=1e-12, abs=1e-9)
    h = pickle.loads(pickle.dumps(batch))
    assert type(h) is HyperLogLogPlusPlus and h.hashfunc is sha1_hash64 and h == batch
    assert type(HyperLogLogPlusPlus.union(batch, one)) is HyperLogLogPlusPlus and batch != HyperLogLog(reg=batch.reg)


@pytest.mark.parametrize("p", [6, 10, 14])
def test_plusplus_tables_remove_the_bias(p):
    """Over many streams, the count's mean error is a small part of its spread at every
    cardinality from 1 to 6m (the tables' range and past it), and its spread that of HyperLogLog
    (1.04 / sqrt(m)) or better: the tables are right."""
    m = 1 << p
    rng = np.random.default_rng(7)
    for n in np.unique(np.geomspace(1, 6 * m, 12).astype(int)):
        counts = []
        for _ in range(60 if p < 14 else 20):
            h = HyperLogLogPlusPlus(p, hashfunc=lambda x: int(x))
            h.update_batch([int(x) for x in rng.integers(0, 1 << 64, n, dtype=np.uint64)])
            counts.append(h.count())
        err = (np.array(counts) - n) / n
        spread = 1.04 / math.sqrt(m)
        assert abs(err.mean()) < 0.5 * spread + 1.0 / n, (n, err.mean())
        assert np.sqrt(np.mean(err**2)) < 1.5 * spread + 1.0 / n, (n, np.sqrt(np.mean(err**2)))
