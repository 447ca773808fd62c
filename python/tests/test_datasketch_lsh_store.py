"""MinHashLSH's bands kept in C++ (no hashfunc) answer as datasketch's dicts do: the same index
with an identity hashfunc keeps the dicts from the start, and every answer, table and pickle of
the two is compared along a run of inserts (keys added twice among them), removals and queries,
before and after the tables are first asked for."""
import pickle

import numpy as np
import pytest

from neardup import _native
from neardup.datasketch import MinHash, MinHashLSH, MinHashLSHEnsemble, WeightedMinHashGenerator


def sketches(n, seed=1, num_perm=64):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**32, (max(1, n // 6), num_perm), dtype=np.uint64)
    out = []
    for i in range(n):
        hv = base[i % len(base)].copy()
        hv[rng.choice(num_perm, int(rng.integers(0, num_perm // 3)), replace=False)] = rng.integers(0, 2**32, 1, dtype=np.uint64)
        out.append(MinHash(num_perm, hashvalues=hv))
    return out


def same(fast, dicts, ms):
    for m in ms:
        assert sorted(fast.query(m)) == sorted(dicts.query(m))  # each key once (keys added twice among them)
        assert fast._query_b(m, 3) == dicts._query_b(m, 3)
    assert fast.is_empty() == dicts.is_empty()


@pytest.mark.parametrize("prepickle", [False, True])
@pytest.mark.parametrize("hash_bits", [64, 2])
def test_the_store_answers_as_the_dicts(prepickle, hash_bits):
    ms = sketches(300)
    fast = MinHashLSH(threshold=0.5, num_perm=64, prepickle=prepickle)
    dicts = MinHashLSH(threshold=0.5, num_perm=64, prepickle=prepickle, hashfunc=lambda b: b)
    assert fast._stored() and not dicts._stored()
    if hash_bits < 64:  # four hashes per band: every bucket shares its hash with others
        fast._store = _native.BandStore(fast.b, 8 * fast.r, hash_bits=hash_bits)
        fast._fast = None if prepickle else fast._store
    for i, m in enumerate(ms[:200]):
        for lsh in (fast, dicts):
            lsh.insert(f"k{i % 180}", m, check_duplication=False)  # 20 keys added twice
    same(fast, dicts, ms)
    for i in range(0, 180, 7):
        for lsh in (fast, dicts):
            lsh.remove(f"k{i}")
        assert f"k{i}" not in fast and f"k{i + 1}" in fast
    with pytest.raises(ValueError, match="already exists"):
        fast.insert("k1", ms[0])
    with pytest.raises(ValueError, match="does not exist"):
        fast.remove("k0")
    same(fast, dicts, ms)
    # A pickle holds datasketch's dicts; the index keeps its store.
    copy = pickle.loads(pickle.dumps(fast))
    assert fast._stored() and not copy._stored()
    assert copy.hashtables == dicts.hashtables and copy.keys == dicts.keys
    same(copy, dicts, ms)
    # Asked for, the tables become dicts for good, equal to the others, and go on as they do.
    assert fast.hashtables == dicts.hashtables and fast.keys == dicts.keys and not fast._stored()
    for i, m in enumerate(ms[200:]):
        for lsh in (fast, dicts):
            lsh.insert(f"n{i}", m)
    same(fast, dicts, ms)
    assert fast.get_counts() == dicts.get_counts()


def test_other_widths_and_the_ensemble():
    gen = WeightedMinHashGenerator(50, 32, seed=1)
    rng = np.random.default_rng(3)
    wms = [gen.minhash(rng.integers(0, 5, 50) + 1) for _ in range(40)]
    fast, dicts = MinHashLSH(0.5, 32), MinHashLSH(0.5, 32, hashfunc=lambda b: b)
    for i, m in enumerate(wms):
        fast.insert(i, m)
        dicts.insert(i, m)
    same(fast, dicts, wms)
    mixed = MinHashLSH(0.5, 32)  # a 64-bit sketch after weighted ones: dicts from then on
    mixed.insert("w", wms[0])
    mixed.insert("m", sketches(1, num_perm=32)[0])
    assert not mixed._stored() and "w" in mixed and "m" in mixed
    ms = sketches(120, seed=4, num_perm=64)
    ens = MinHashLSHEnsemble(threshold=0.5, num_perm=64, num_part=4)
    ens.index([(i, m, 10 + i) for i, m in enumerate(ms)])
    again = pickle.loads(pickle.dumps(ens))
    for i, m in enumerate(ms[:30]):
        assert set(ens.query(m, 10 + i)) == set(again.query(m, 10 + i)) and i in set(ens.query(m, 10 + i))


class Sketch:
    """A sketch as any object with ``hashvalues`` and a length (as datasketch's own MinHash)."""

    def __init__(self, hashvalues):
        self.hashvalues = hashvalues

    def __len__(self):
        return len(self.hashvalues)


def test_values_of_other_layouts_answer_alike():
    # Native uint64 arrays go to the store as they are; big-endian, signed, strided and list
    # values through their bytes: the answers are the dicts' whichever way a sketch comes.
    ms = sketches(120, seed=5, num_perm=64)
    layouts = [
        lambda hv: hv,
        lambda hv: hv.astype(">u8"),
        lambda hv: hv.astype(np.int64),
        lambda hv: np.repeat(hv, 2)[::2],
        lambda hv: [int(x) for x in hv],
    ]
    fast, dicts = MinHashLSH(0.5, 64), MinHashLSH(0.5, 64, hashfunc=lambda b: b)
    for i, m in enumerate(ms):
        s = Sketch(layouts[i % len(layouts)](m.hashvalues))
        fast.insert(i, s)
        dicts.insert(i, s)
    assert fast._stored()
    for i, m in enumerate(ms):
        for layout in layouts:
            s = Sketch(layout(m.hashvalues))
            assert set(fast.query(s)) == set(dicts.query(s)) and i in set(fast.query(s))


def test_insert_many_is_a_loop_of_insert():
    # MinHashLSH._insert_many (the ensemble's index) leaves the index as insert() one by one
    # would: sketches of other layouts among the others, and the errors of insert.
    ms = sketches(90, seed=9, num_perm=64)
    layouts = [lambda hv: hv, lambda hv: hv.astype(">u8"), lambda hv: [int(x) for x in hv]]
    items = [(f"k{i}", Sketch(layouts[i % 3](m.hashvalues)) if i % 4 == 0 else m) for i, m in enumerate(ms)]
    many, loop = MinHashLSH(0.5, 64), MinHashLSH(0.5, 64)
    many._insert_many([k for k, _ in items], [m for _, m in items])
    for k, m in items:
        loop.insert(k, m)
    assert many._stored() and many.hashtables == loop.hashtables and many.keys == loop.keys
    with pytest.raises(ValueError, match="already exists"):
        many._insert_many(["k3"], [ms[3]])
    with pytest.raises(ValueError, match="Expecting minhash with length 64, got 32"):
        many._insert_many(["new"], [sketches(1, num_perm=32)[0]])


def test_the_one_call_paths_check_their_arguments():
    """band_store_insert, band_store_query and forest_arena_add (METH_FASTCALL, no pybind11
    dispatcher) refuse another object, a wrong count of arguments, and raise datasketch's errors."""
    store, arena, m = _native.BandStore(4, 16), _native.ForestArena(8), MinHash(8)
    with pytest.raises(TypeError, match="BandStore"):
        _native.band_store_query(arena, m, 8)
    with pytest.raises(TypeError, match="ForestArena"):
        _native.forest_arena_add(store, {}, "k", m)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        _native.band_store_query(store, m)
    rows = {}
    assert _native.band_store_insert(store, rows, "k", m, 8, True) and rows == {"k": 0}
    with pytest.raises(ValueError, match="already exists"):
        _native.band_store_insert(store, rows, "k", m, 8, True)
    assert _native.band_store_insert(store, rows, "k", m, 8, False) and rows == {"k": [0, 1]}
    assert _native.band_store_query(store, m, 8) == ["k"]
    with pytest.raises(ValueError, match="Expecting minhash with length 8, got 16"):
        _native.band_store_query(store, MinHash(16), 8)
    assert _native.band_store_query(store, Sketch(list(m.hashvalues)), 8) is None  # not an array: the general path's
    assert _native.forest_arena_add(arena, rows := {}, "k", m) and rows == {"k": 0}
    with pytest.raises(ValueError, match="already been added"):
        _native.forest_arena_add(arena, rows, "k", m)
    with pytest.raises(ValueError, match="out of range"):
        _native.forest_arena_add(arena, rows, "j", MinHash(4))


@pytest.mark.parametrize("hash_bits", [64, 2])
def test_32_bit_rows_widen_and_wide_queries_answer_as_the_dicts(hash_bits):
    """The store keeps 4 bytes a value while every value fits in 32 bits and widens its rows at
    the first that does not; a query value wider than every row's matches no band, though its
    low bits are a row's (with hashes of 2 bits, where only the bytes tell the bands apart)."""
    ms = sketches(120, seed=3)
    fast = MinHashLSH(threshold=0.5, num_perm=64)
    dicts = MinHashLSH(threshold=0.5, num_perm=64, hashfunc=lambda b: b)
    fast._store = fast._fast = _native.BandStore(fast.b, 8 * fast.r, hash_bits=hash_bits)
    for i, m in enumerate(ms[:100]):
        for lsh in (fast, dicts):
            lsh.insert(f"k{i}", m)
    over = MinHash(64, hashvalues=ms[0].hashvalues + np.uint64(2**32))  # every value's low half sketch 0's
    assert fast.query(over) == [] and dicts.query(over) == []
    same(fast, dicts, ms)
    wide = MinHash(64, hashvalues=ms[1].hashvalues.copy())
    wide.hashvalues[::2] += np.uint64(2**33)
    for i, m in enumerate([wide] + ms[100:]):
        for lsh in (fast, dicts):
            lsh.insert(f"w{i}", m)
    assert fast._stored()
    same(fast, dicts, ms + [wide, over])
    assert pickle.loads(pickle.dumps(fast)).hashtables == dicts.hashtables
