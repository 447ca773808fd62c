"""neardup.datasketch's MinHashLSHForest against datasketch's definition (the module's
docstring), computed here by scanning every key."""
import pickle

import numpy as np
import pytest

from neardup.datasketch import MinHash, MinHashLSHForest, WeightedMinHashGenerator


def tree_key(values, start, r):
    return np.ascontiguousarray(np.asarray(values)[start:start + r]).astype(">u8" if np.asarray(values).dtype.kind == "u" else ">i8").tobytes()


def definition(added, indexed, num_perm, l, query, k):
    """The walk: r = kk, ..., 1, trees in order; in a tree the indexed tree keys in sorted order
    whose first r values are the query's, each with its keys in the order added (those added
    after index() included where their tree key was indexed), until k distinct keys."""
    kk = num_perm // l
    results = set()
    for r in range(kk, 0, -1):
        for t in range(l):
            start = t * kk
            want = tree_key(query, start, r)
            full = sorted({tree_key(v, start, kk) for key, v in added[:indexed]})
            for H in full:
                if H[:len(want)] != want:
                    continue
                for key, v in added:
                    if tree_key(v, start, kk) == H:
                        results.add(key)
                        if len(results) >= k:
                            return list(results)
    return list(results)


def sketches(rng, n, num_perm, weighted):
    if weighted:
        g = WeightedMinHashGenerator(20, num_perm, 3)
        base = rng.integers(1, 4, (8, 20))
        return [g.minhash(base[i % 8] + (rng.random(20) < 0.15)).hashvalues for i in range(n)]
    base = rng.integers(0, 2**32, (8, num_perm), dtype=np.uint64)
    out = []
    for i in range(n):
        hv = base[i % 8].copy()
        changed = rng.random(num_perm) < rng.random()
        hv[changed] = rng.integers(0, 2**32, int(changed.sum()), dtype=np.uint64)
        out.append(hv)
    return out


@pytest.mark.parametrize("num_perm,l,weighted", [(16, 4, False), (64, 8, False), (32, 1, False), (16, 16, False), (32, 4, True)])
def test_queries_equal_the_definition(num_perm, l, weighted):
    rng = np.random.default_rng(num_perm + l)
    values = sketches(rng, 60, num_perm, weighted)
    forest = MinHashLSHForest(num_perm, l)
    added = []
    for i, v in enumerate(values[:45]):
        forest.add(i if i % 2 else f"k{i}", _sketch(v, weighted))
        added.append((i if i % 2 else f"k{i}", v))
    forest.index()
    for q in values[40:60:3]:
        for k in (1, 3, 10, 50):
            assert forest.query(_sketch(q, weighted), k) == definition(added, 45, num_perm, l, q, k)
    # Keys added after index(): found only where their tree key was indexed already.
    for i, v in enumerate(values[45:], start=45):
        forest.add(i, _sketch(v, weighted))
        added.append((i, v))
    for q in values[45:60:2]:
        assert forest.query(_sketch(q, weighted), 7) == definition(added, 45, num_perm, l, q, 7)
    forest.index()
    for q in values[:60:5]:
        assert forest.query(_sketch(q, weighted), 5) == definition(added, 60, num_perm, l, q, 5)


def _weighted(v):
    from neardup.datasketch import WeightedMinHash
    return WeightedMinHash(3, v)


def _sketch(v, weighted):
    return _weighted(v) if weighted else MinHash(hashvalues=v)


def test_attributes_errors_and_pickle():
    with pytest.raises(ValueError):
        MinHashLSHForest(num_perm=8, l=9)
    with pytest.raises(ValueError):
        MinHashLSHForest(num_perm=0)
    forest = MinHashLSHForest(num_perm=32, l=4)
    assert forest.is_empty() and forest.k == 8 and forest.hashranges == [(0, 8), (8, 16), (16, 24), (24, 32)]
    m = MinHash(num_perm=32)
    m.update_batch([b"a", b"b", b"c"])
    forest.add("a", m)
    assert forest.keys["a"] == [m.hashvalues[s:e].astype(">u8").tobytes() for s, e in forest.hashranges]
    assert all(forest.hashtables[i][H] == ["a"] for i, H in enumerate(forest.keys["a"]))
    assert forest.is_empty() and forest.query(m, 3) == []  # not searchable before index()
    forest.index()
    assert not forest.is_empty() and forest.query(m, 3) == ["a"] and "a" in forest and "b" not in forest
    assert forest.sorted_hashtables == [sorted(t) for t in forest.hashtables]
    with pytest.raises(ValueError):
        forest.add("a", m)
    with pytest.raises(ValueError):
        forest.add("b", MinHash(num_perm=16))
    with pytest.raises(ValueError):
        forest.query(m, 0)
    with pytest.raises(ValueError):
        forest.query(MinHash(num_perm=16), 3)
    assert np.array_equal(forest.get_minhash_hashvalues("a"), m.hashvalues)
    with pytest.raises(KeyError):
        forest.get_minhash_hashvalues("zz")
    again = pickle.loads(pickle.dumps(forest))
    assert again.hashtables == forest.hashtables and again.keys == forest.keys and again.query(m, 3) == ["a"]
    empty = MinHashLSHForest()
    empty.index()
    assert empty.query(MinHash(), 5) == []


def test_rows_in_cpp_answer_as_the_dicts():
    # A forest keeps 64-bit sketches in C++ until a table is read; a twin made to keep datasketch's
    # dicts from the start (its tables read at once) must answer alike all along: before and after
    # index(), with keys added since, through pickles, and once the first is turned into dicts too.
    rng = np.random.default_rng(11)
    values = sketches(rng, 80, 32, False)
    rows, dicts = MinHashLSHForest(32, 4), MinHashLSHForest(32, 4)
    assert dicts.hashtables is not None and not dicts._stored() and rows._stored()

    def same(queries, ks=(1, 4, 20)):
        assert rows.is_empty() == dicts.is_empty()
        for q in queries:
            for k in ks:
                assert rows.query(MinHash(hashvalues=q), k) == dicts.query(MinHash(hashvalues=q), k)

    same(values[:5])
    for i, v in enumerate(values[:50]):
        rows.add(i, MinHash(hashvalues=v))
        dicts.add(i, MinHash(hashvalues=v))
    assert 3 in rows and 77 not in rows and rows._stored()
    same(values[:10])  # nothing searchable yet
    rows.index()
    dicts.index()
    same(values[::4])
    assert rows._stored() and np.array_equal(rows.get_minhash_hashvalues(7), values[7])
    with pytest.raises(KeyError):
        rows.get_minhash_hashvalues(99)
    with pytest.raises(ValueError):
        rows.add(7, MinHash(hashvalues=values[7]))
    copy = pickle.loads(pickle.dumps(rows))  # datasketch's dicts in the pickle; rows keeps its own
    assert rows._stored() and not copy._stored()
    assert copy.hashtables == dicts.hashtables and copy.keys == dicts.keys and copy.sorted_hashtables == dicts.sorted_hashtables
    assert copy.query(MinHash(hashvalues=values[3]), 5) == dicts.query(MinHash(hashvalues=values[3]), 5)
    for i, v in enumerate(values[50:70], start=50):  # added after index(): datasketch's walk
        rows.add(i, MinHash(hashvalues=v))
        dicts.add(i, MinHash(hashvalues=v))
    same(values[40:80:3])
    assert not rows._stored()  # the walk needed the dicts
    assert rows.sorted_hashtables == dicts.sorted_hashtables and rows.hashtables == dicts.hashtables
    rows.index()
    dicts.index()
    same(values[::5])
    # Read after index(), the tables hold the rows' keys as datasketch's would.
    fresh, twin = MinHashLSHForest(32, 4), MinHashLSHForest(32, 4)
    twin.keys
    for i, v in enumerate(values[:30]):
        fresh.add(f"k{i}", MinHash(hashvalues=v))
        twin.add(f"k{i}", MinHash(hashvalues=v))
    fresh.index()
    twin.index()
    fresh.add("late", MinHash(hashvalues=values[40]))
    twin.add("late", MinHash(hashvalues=values[40]))
    assert fresh.sorted_hashtables == twin.sorted_hashtables and fresh.keys == twin.keys and fresh.hashtables == twin.hashtables
    # A sketch of other values (weighted: two words a value) turns the rows into dicts.
    mixed = MinHashLSHForest(32, 4)
    mixed.add("m", MinHash(hashvalues=values[0]))
    weighted = sketches(rng, 2, 32, True)[0]
    mixed.add("w", _weighted(weighted))
    assert not mixed._stored() and "m" in mixed and "w" in mixed
    mixed.index()
    assert mixed.query(MinHash(hashvalues=values[0]), 1) == ["m"]


def clustered(rng, n, num_perm, clusters, high):
    """n sketches of values below `high`, in clusters: each a copy of its cluster's base with
    about 30% of its values drawn again."""
    base = rng.integers(0, high, (clusters, num_perm), dtype=np.uint64)
    out = []
    for i in range(n):
        hv = base[i % clusters].copy()
        hv[rng.random(num_perm) < 0.3] = rng.integers(0, high, dtype=np.uint64)
        out.append(hv)
    return out


def test_large_forests_of_full_64_bit_values_answer_as_the_definition():
    # Enough keys for index() to sort the trees on several threads, values over the whole 64-bit
    # range (the radix sort's every byte) and many keys sharing their first values (the runs
    # sorted by the whole keys): the answers are the definition's, walked in sorted order.
    forest, added = MinHashLSHForest(32, 4), []
    for i, hv in enumerate(clustered(np.random.default_rng(5), 3000, 32, 300, 2**64)):
        added.append((i, hv))
        forest.add(i, MinHash(hashvalues=hv))
    forest.index()
    for _, q in added[::331]:
        for k in (1, 12):
            assert sorted(forest.query(MinHash(hashvalues=q), k)) == sorted(definition(added, 3000, 32, 4, q, k))


def test_32_bit_rows_widen_and_wide_queries_answer_as_the_definition():
    # The rows are kept as 32-bit words while every value fits, and made 64-bit at the first that
    # does not; a query with a wider value than any row matches no prefix that holds it.
    values = clustered(np.random.default_rng(9), 400, 16, 20, 2**32)
    wide = values[0].copy()
    wide[3] += np.uint64(2**32)  # its low 32 bits those of sketch 0's: a match only if truncated
    narrow, widened = MinHashLSHForest(16, 4), MinHashLSHForest(16, 4)
    added = [(i, v) for i, v in enumerate(values)]
    for i, v in added:
        narrow.add(i, MinHash(hashvalues=v))
        widened.add(i, MinHash(hashvalues=v))
    widened.add("wide", MinHash(hashvalues=wide))
    narrow.index()
    widened.index()
    over = values[0].copy()
    over[0::4] += np.uint64(2**32)  # each tree's first value wider than any row's, its low bits sketch 0's
    assert narrow.query(MinHash(hashvalues=over), 5) == []
    for q in values[::37] + [wide, over]:
        for k in (1, 6, 30):
            assert sorted(map(str, narrow.query(MinHash(hashvalues=q), k))) == sorted(map(str, definition(added, 400, 16, 4, q, k)))
            assert sorted(map(str, widened.query(MinHash(hashvalues=q), k))) == sorted(map(str, definition(added + [("wide", wide)], 401, 16, 4, q, k)))
    assert np.array_equal(widened.get_minhash_hashvalues("wide"), wide) and np.array_equal(widened.get_minhash_hashvalues(5), values[5])
