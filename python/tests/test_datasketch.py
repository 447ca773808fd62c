"""neardup.datasketch against datasketch's published definitions.

The reference values below were computed from datasketch's definitions (minhash.py, lsh.py,
lean_minhash.py of datasketch 1.10), written out in this file with NumPy and hashlib, and for the
LSH parameters with scipy's quad as datasketch calls it (the pins in LSH_PARAMS); the module under
test shares none of that code.
"""
import hashlib
import json
import os
import pickle
import random
import struct
import subprocess
import sys

import numpy as np
import pytest

from neardup import _native
from neardup.datasketch import LeanMinHash, MinHash, MinHashLSH, sha1_hash32

PRIME = np.uint64((1 << 61) - 1)
MAX32 = np.uint64((1 << 32) - 1)


def ref_hash32(b: bytes) -> int:
    return struct.unpack("<I", hashlib.sha1(b).digest()[:4])[0]


def ref_permutations(seed, n):
    gen = np.random.RandomState(seed)
    return np.array([(gen.randint(1, PRIME, dtype=np.uint64), gen.randint(0, PRIME, dtype=np.uint64)) for _ in range(n)],
                    dtype=np.uint64).T


def ref_minhash(values, seed=1, num_perm=128):
    a, b = ref_permutations(seed, num_perm)
    hv = np.ones(num_perm, dtype=np.uint64) * MAX32
    for v in values:
        phv = np.bitwise_and((a * np.uint64(ref_hash32(v)) + b) % PRIME, MAX32)
        hv = np.minimum(phv, hv)
    return hv


def words(n, seed):
    rng = random.Random(seed)
    return [("w%d" % rng.randrange(300)).encode() for _ in range(n)]


def test_sha1_hash32_equals_hashlib():
    rng = random.Random(1)
    for n in [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 200, 1000]:
        data = bytes(rng.randrange(256) for _ in range(n))
        assert _native.sha1_hash32(data) == ref_hash32(data) == sha1_hash32(data)
    batch = [bytes(rng.randrange(256) for _ in range(rng.randrange(80))) for _ in range(500)]
    assert _native.sha1_hash32_all(batch).tolist() == [ref_hash32(x) for x in batch]


_ISA_PROBE = r"""
import json, sys
import numpy as np
from neardup import _native
from neardup.datasketch import MinHash
values = [bytes((7 * i + j) % 256 for j in range(i % 301)) for i in range(1200)]
out = {"isa": _native.active_isa(), "sha1": _native.sha1_hash32_all(values).tolist()}
for k in (3, 100, 130):
    out[str(k)] = [m.hashvalues.tolist() for m in MinHash.bulk([values[:700], tuple(values[700:]), iter(values[5:9])], num_perm=k, seed=k)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512"])
def test_every_instruction_set_gives_datasketch_values(isa):
    # Each SIMD path (16 messages in AVX-512 lanes, short and multi-block; the SHA extensions;
    # plain C++), and the permutations with up to 128 of them in registers, over lengths 0-300.
    env = dict(os.environ, NEARDUP_FORCE_ISA=isa)
    run = subprocess.run([sys.executable, "-c", _ISA_PROBE], env=env, capture_output=True, text=True)
    if run.returncode != 0 and "does not support" in run.stderr:
        pytest.skip(f"this CPU has no {isa}")
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["isa"] == isa
    values = [bytes((7 * i + j) % 256 for j in range(i % 301)) for i in range(1200)]
    assert got["sha1"] == [ref_hash32(v) for v in values]
    for k in (3, 100, 130):
        want = [ref_minhash(values[:700], k, k), ref_minhash(values[700:], k, k), ref_minhash(values[5:9], k, k)]
        assert got[str(k)] == [w.tolist() for w in want]


def test_values_above_32_bits_lose_to_any_hash():
    # hashvalues a caller made up above 2^32 - 1: np.minimum keeps the permuted hash, as here.
    m = MinHash(num_perm=16, hashvalues=np.full(16, 1 << 40, dtype=np.uint64))
    m.update_batch([b"a", b"b"])
    assert np.array_equal(m.hashvalues, ref_minhash([b"a", b"b"], 1, 16))


def test_bulk_takes_any_iterables_and_falls_back_for_other_values():
    vals = words(50, 3)
    want = ref_minhash(vals)
    for docs in ([vals], [tuple(vals)], (iter(vals) for _ in range(1))):
        assert np.array_equal(MinHash.bulk(docs)[0].hashvalues, want)
    # A bytearray goes the Python way (hashlib takes any buffer), with the same values.
    mixed = vals + [bytearray(b"buffer")]
    assert np.array_equal(MinHash.bulk([mixed])[0].hashvalues, ref_minhash(mixed))
    with pytest.raises(TypeError):  # str: hashlib's error, as in datasketch
        MinHash.bulk([vals, ["not bytes"]])


def test_permutations_and_values_known_answers():
    # Pinned from the definition above (seed 1): the first permutation parameters, and the
    # hash values of {b"near", b"duplicate", b"documents"} with 8 permutations.
    m = MinHash(num_perm=8, seed=1)
    a, b = m.permutations
    assert [hex(int(x)) for x in a[:3]] == ["0xac1f425ff4780ec", "0x77eff20ccc38a", "0x591cb4f3c7053c1"]
    assert [hex(int(x)) for x in b[:3]] == ["0x18672f8ceebc1448", "0xd65aacbffc11e85", "0x17a3809065865081"]
    m.update_batch([b"near", b"duplicate", b"documents"])
    assert m.hashvalues.tolist() == [3749336, 3826531778, 1192008816, 758982333, 2446877969, 963523912, 814627291,
                                     1553187866]
    assert m.hashvalues.dtype == np.uint64


@pytest.mark.parametrize("seed,num_perm", [(1, 128), (7, 64), (12345, 256), (1, 3)])
def test_update_paths_equal_the_definition(seed, num_perm):
    vals = words(400, seed)
    want = ref_minhash(vals, seed, num_perm)
    one = MinHash(num_perm=num_perm, seed=seed)
    for v in vals:
        one.update(v)
    batch = MinHash(num_perm=num_perm, seed=seed)
    batch.update_batch(vals)
    assert np.array_equal(one.hashvalues, want)
    assert np.array_equal(batch.hashvalues, want)
    assert np.array_equal(batch.permutations, ref_permutations(seed, num_perm))
    bulk = MinHash.bulk([vals[:100], vals[100:], []], num_perm=num_perm, seed=seed)
    assert np.array_equal(bulk[0].hashvalues, ref_minhash(vals[:100], seed, num_perm))
    assert np.array_equal(bulk[1].hashvalues, ref_minhash(vals[100:], seed, num_perm))
    assert bulk[2].is_empty()
    gen = list(MinHash.generator([vals[:100]], num_perm=num_perm, seed=seed))
    assert gen[0] == bulk[0]


def test_custom_hashfunc_and_type_errors():
    # Any callable returning an int: called from Python per value, as datasketch does.
    m = MinHash(num_perm=16, hashfunc=lambda s: hash(s) & 0xFFFFFFFF)
    m.update_batch(["a", "b", "c"])
    ref = MinHash(num_perm=16, hashfunc=lambda s: hash(s) & 0xFFFFFFFF)
    for s in ["a", "b", "c"]:
        ref.update(s)
    assert m == ref
    with pytest.raises(TypeError):  # the default hashfunc takes bytes, not str (hashlib's error)
        MinHash().update_batch(["not bytes"])
    with pytest.raises(ValueError):
        MinHash(hashfunc="not callable")


def test_minhash_surface():
    a = MinHash(num_perm=64)
    b = MinHash(num_perm=64)
    a.update_batch(words(200, 1))
    b.update_batch(words(200, 1)[:150] + words(50, 2))
    assert 0.0 < a.jaccard(b) < 1.0
    assert a.jaccard(a) == 1.0
    with pytest.raises(ValueError):
        a.jaccard(MinHash(num_perm=64, seed=2))
    with pytest.raises(ValueError):
        a.jaccard(MinHash(num_perm=32))
    assert abs(a.count() - len(set(words(200, 1)))) / len(set(words(200, 1))) < 0.35
    u = MinHash.union(a, b)
    merged = a.copy()
    merged.merge(b)
    assert u == merged and np.array_equal(u.hashvalues, np.minimum(a.hashvalues, b.hashvalues))
    assert len(a) == 64 and not a.is_empty()
    c = a.copy()
    c.clear()
    assert c.is_empty() and not a.is_empty()
    assert np.array_equal(a.digest(), a.hashvalues) and not np.shares_memory(a.digest(), a.hashvalues)
    assert pickle.loads(pickle.dumps(a)) == a
    assert MinHash(hashvalues=a.hashvalues, permutations=a.permutations) == a
    m = MinHash(num_perm=8, gpu_mode="detect")
    assert m.gpu_mode == "detect" and m.copy().gpu_mode == "detect"
    with pytest.raises(RuntimeError, match="runs on the CPU"):
        MinHash(num_perm=8, gpu_mode="always").update_batch([b"x"])
    with pytest.raises(RuntimeError, match="runs on the CPU"):
        MinHash.bulk([[b"x"]], num_perm=8, gpu_mode="always")


def test_a_pickle_of_an_earlier_version_loads():
    m = MinHash(num_perm=8, gpu_mode="detect")
    m.update(b"x")
    state = m.__getstate__()
    state["gpu_mode"] = state.pop("_gpu_mode")  # as neardup kept it before
    old = MinHash.__new__(MinHash)
    old.__setstate__(state)
    assert old == m and old.gpu_mode == "detect" and old.copy().gpu_mode == "detect"


def test_union_keeps_the_hash_function_and_gpu_mode():
    identity = lambda v: v  # noqa: E731
    a = MinHash(num_perm=16, seed=4, hashfunc=identity, gpu_mode="detect")
    b = MinHash(num_perm=16, seed=4, hashfunc=identity, gpu_mode="detect")
    b.update(12)
    u = MinHash.union(a, b)
    assert u.hashfunc is identity and u.gpu_mode == "detect" and u.jaccard(b) == 1.0
    u.update(13)  # hashed by identity, as a and b would hash it
    b.update(13)
    assert u == b
    assert MinHash.union(MinHash(num_perm=16), MinHash(num_perm=16)).hashfunc is sha1_hash32


def test_lean_minhash_bytes_and_pickle():
    m = MinHash(num_perm=32, seed=3)
    m.update_batch(words(100, 3))
    lean = LeanMinHash(m)
    assert lean.jaccard(m) == 1.0
    for order in ["@", "=", "<", ">", "!"]:
        buf = bytearray(lean.bytesize(order))
        lean.serialize(buf, order)
        # The published layout: seed (int64), count (int32), then each value as uint32.
        assert bytes(buf) == struct.pack("%sqi%dI" % (order, 32), 3, 32, *m.hashvalues.tolist())
        assert LeanMinHash.deserialize(buf, order) == lean
    with pytest.raises(ValueError):
        lean.serialize(bytearray(4))
    with pytest.raises(TypeError):
        lean.update(b"x")
    assert pickle.loads(pickle.dumps(lean)) == lean
    assert hash(lean) == hash(LeanMinHash(m))
    assert LeanMinHash.union(lean, LeanMinHash(m)) == lean


# (threshold, num_perm) -> (b, r): datasketch's _optimal_param with weights (0.5, 0.5), computed
# with scipy.integrate.quad as datasketch's lsh.py does.
LSH_PARAMS = {(0.1, 16): (15, 1), (0.3, 16): (8, 2), (0.5, 16): (5, 3), (0.7, 16): (3, 5), (0.8, 16): (2, 8),
              (0.1, 64): (15, 1), (0.3, 64): (21, 3), (0.5, 64): (14, 4), (0.7, 64): (8, 8), (0.8, 64): (5, 11),
              (0.9, 64): (3, 21), (0.95, 64): (2, 32), (0.1, 128): (64, 2), (0.3, 128): (37, 3), (0.5, 128): (25, 5),
              (0.7, 128): (14, 9), (0.8, 128): (9, 13), (0.9, 128): (5, 25), (0.95, 128): (3, 42), (0.1, 256): (117, 2),
              (0.3, 256): (64, 4), (0.5, 256): (42, 6), (0.7, 256): (25, 10), (0.8, 256): (17, 15), (0.9, 256): (9, 28),
              (0.95, 256): (5, 51)}


@pytest.mark.parametrize("key", sorted(LSH_PARAMS))
def test_lsh_params_equal_datasketch(key):
    threshold, num_perm = key
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    assert (lsh.b, lsh.r) == LSH_PARAMS[key]


def test_lsh_weights_and_errors():
    assert (MinHashLSH(0.5, 128, weights=(0.3, 0.7)).b, MinHashLSH(0.5, 128, weights=(0.3, 0.7)).r) == (25, 5)
    assert (MinHashLSH(0.8, 128, weights=(0.7, 0.3)).b, MinHashLSH(0.8, 128, weights=(0.7, 0.3)).r) == (8, 16)
    assert (MinHashLSH(num_perm=128, params=(16, 8)).b, MinHashLSH(num_perm=128, params=(16, 8)).r) == (16, 8)
    with pytest.raises(ValueError):
        MinHashLSH(threshold=1.5)
    with pytest.raises(ValueError):
        MinHashLSH(num_perm=128, params=(20, 8))
    with pytest.raises(ValueError):
        MinHashLSH(weights=(0.6, 0.6))
    # At 0.9 and 0.95 with 16 permutations datasketch's optimum is one band (1, 15) and (1, 16),
    # which it refuses: so does this.
    for t in (0.9, 0.95):
        with pytest.raises(ValueError, match="too small"):
            MinHashLSH(threshold=t, num_perm=16)


def test_lsh_queries_equal_a_brute_force_scan():
    rng = random.Random(5)
    base = [words(60, s) for s in range(40)]
    docs = {}
    for i, b in enumerate(base):
        docs["d%d" % i] = b
        variant = list(b)
        for _ in range(rng.randrange(1, 20)):
            variant[rng.randrange(len(variant))] = ("x%d" % rng.randrange(1000)).encode()
        docs["v%d" % i] = variant
    mh = dict(zip(docs, MinHash.bulk(docs.values(), num_perm=128)))
    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    with lsh.insertion_session() as s:
        for k, m in mh.items():
            s.insert(k, m)
    # Band keys: each band's values as big-endian 64-bit words.
    def bands(m):
        return [m.hashvalues[i * lsh.r:(i + 1) * lsh.r].astype(">u8").tobytes() for i in range(lsh.b)]
    for k, m in mh.items():
        assert lsh.keys[k] == bands(m)
        want = {o for o, om in mh.items() if any(x == y for x, y in zip(bands(m), bands(om)))}
        assert set(lsh.query(m)) == want
        assert k in want
    for i, table in enumerate(lsh.hashtables):
        for H, keys in table.items():
            assert all(bands(mh[k])[i] == H for k in keys)
    assert sum(sum(c.values()) for c in lsh.get_counts()) == lsh.b * len(mh)
    with pytest.raises(ValueError):
        lsh.insert("d0", mh["d0"])
    with pytest.raises(ValueError):
        lsh.query(MinHash(num_perm=64))
    lsh.remove("d0")
    assert "d0" not in lsh and "d0" not in lsh.query(mh["d0"])
    with pytest.raises(ValueError):
        lsh.remove("d0")
    again = pickle.loads(pickle.dumps(lsh))
    assert set(again.query(mh["v1"])) == set(lsh.query(mh["v1"]))
    other = MinHashLSH(threshold=0.5, num_perm=128)
    other.insert("d0", mh["d0"])
    lsh.merge(other)
    assert "d0" in lsh
    with pytest.raises(ValueError):
        lsh.merge(MinHashLSH(threshold=0.9, num_perm=128))
    # A buffered query finds what query() finds; several, what they all find.
    lsh.add_to_query_buffer(mh["v2"])
    assert set(lsh.collect_query_buffer()) == set(lsh.query(mh["v2"]))
    for pair in [("d2", "v2"), ("v2", "d3"), ("d4", "v4")]:
        for k in pair:
            lsh.add_to_query_buffer(mh[k])
        both = set(lsh.query(mh[pair[0]])) & set(lsh.query(mh[pair[1]]))
        assert set(lsh.collect_query_buffer()) == both
    assert {"d2", "v2"} <= set(lsh.query(mh["d2"])) & set(lsh.query(mh["v2"]))
    assert lsh.collect_query_buffer() == []  # the buffer was emptied
    with lsh.deletion_session() as s:
        s.remove("v2")
    assert "v2" not in lsh
    empty = MinHashLSH(threshold=0.5, num_perm=128)
    assert empty.is_empty() and not lsh.is_empty()
