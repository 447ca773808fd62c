"""neardup.datasketch's MinHashLSHBloom against its definition (lsh_bloom.py's docstring): no
false negatives, false positives near the rate asked for, the bands as MinHashLSH's, the
filters kept in files across instances, damaged files refused."""
import warnings

import numpy as np
import pytest

from neardup.datasketch import BloomTable, MinHash, MinHashLSH, MinHashLSHBloom


def test_a_filter_never_misses_and_errs_at_about_fp():
    rng = np.random.default_rng(1)
    for fp in (0.01, 0.001):
        t = BloomTable(2000, fp, band_size=4)
        keys = rng.integers(0, 1 << 32, (4000, 4), dtype=np.uint64)
        for k in keys[:2000]:
            t.insert(k)
        assert all(t.query(k) for k in keys[:2000])
        false = sum(t.query(k) for k in keys[2000:]) / 2000
        assert false < 3 * fp + 0.002, false
    # A band's key is the sum of its values modulo 2^61 - 1: the same sum, the same key.
    t = BloomTable(10, 0.01, band_size=2)
    t.insert(np.array([5, 7], dtype=np.uint64))
    assert t.query([6, 6]) and t.query([(1 << 61) - 1 + 5, 7])
    with pytest.raises(RuntimeError, match="expected 2 hashvalues"):
        t.insert([1, 2, 3])


def test_the_index_finds_what_it_was_given(tmp_path):
    docs = [set(np.random.default_rng(i).integers(0, 10**6, 200).tolist()) for i in range(300)]
    sketches = []
    for d in docs:
        m = MinHash(128)
        m.update_batch([b"%d" % x for x in d])
        sketches.append(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lsh = MinHashLSHBloom(threshold=0.8, num_perm=128, n=300, fp=0.001)
    ref = MinHashLSH(threshold=0.8, num_perm=128)
    assert (lsh.b, lsh.r) == (ref.b, ref.r)
    for m in sketches[:150]:
        lsh.insert(m)
    assert all(lsh.query(m) for m in sketches[:150])
    assert sum(lsh.query(m) for m in sketches[150:]) <= 2  # unrelated sets: only filter errors
    with pytest.raises(ValueError, match="Expecting minhash with length 128"):
        lsh.query(MinHash(64))
    with pytest.warns(RuntimeWarning, match="no-op"):
        lsh.sync()


def test_filters_in_files_outlive_the_index(tmp_path):
    m = MinHash(64)
    m.update_batch([b"a", b"b", b"c"])
    other = MinHash(64)
    other.update_batch([b"x", b"y", b"z"])
    lsh = MinHashLSHBloom(threshold=0.5, num_perm=64, n=100, fp=0.01, save_dir=str(tmp_path / "idx"))
    lsh.insert(m)
    lsh.sync()
    del lsh
    again = MinHashLSHBloom(threshold=0.5, num_perm=64, n=5, fp=0.5, save_dir=str(tmp_path / "idx"))  # the files' sizes win
    assert again.query(m) and not again.query(other)
    band = tmp_path / "idx" / "band-0.bf"
    band.write_bytes(band.read_bytes()[:20])
    with pytest.raises(ValueError, match="band-0.bf: not a Bloom filter"):
        MinHashLSHBloom(threshold=0.5, num_perm=64, n=100, fp=0.01, save_dir=str(tmp_path / "idx"))


def test_arguments_are_checked_as_datasketch_checks_them():
    for kwargs, message in [({"n": 0, "fp": 0.1}, "n for LSHBloom"), ({"n": 5, "fp": 1.0}, "fp must be"),
                            ({"n": 5, "fp": 0.1, "threshold": 1.5}, "threshold"),
                            ({"n": 5, "fp": 0.1, "weights": (0.4, 0.4)}, "sum to 1"),
                            ({"n": 5, "fp": 0.1, "params": (20, 10)}, "product of b and r")]:
        with pytest.raises(ValueError, match=message), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            MinHashLSHBloom(**kwargs)


class ListSketch:
    """A sketch whose values are a list, not a uint64 array: the Python path takes it."""

    def __init__(self, values):
        self.hashvalues = list(values)

    def __len__(self):
        return len(self.hashvalues)


def test_one_call_paths_set_and_test_the_bits_the_python_path_does(tmp_path):
    # An insert or a query of a uint64 sketch is one C++ call (bloom.cpp); the bits it sets are
    # those each BloomTable sets band by band, and its answers are theirs.
    rng = np.random.default_rng(3)
    sketches = [MinHash(128, hashvalues=rng.integers(0, 1 << 32, 128, dtype=np.uint64)) for _ in range(400)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fast = MinHashLSHBloom(threshold=0.5, num_perm=128, n=200, fp=0.05)
        slow = MinHashLSHBloom(threshold=0.5, num_perm=128, n=200, fp=0.05)
    for m in sketches[:200]:
        fast.insert(m)
        for (start, end), table in zip(slow.hashranges, slow.hashtables):
            table.insert(m.hashvalues[start:end])
    assert fast._fast_bands() is not None
    for a, b in zip(fast.hashtables, slow.hashtables):
        assert np.array_equal(a._array, b._array)
    by_tables = [any(t.query(m.hashvalues[s:e]) for (s, e), t in zip(slow.hashranges, slow.hashtables)) for m in sketches]
    assert [fast.query(m) for m in sketches] == by_tables
    assert all(by_tables[:200]) and 0 < sum(by_tables[200:]) < 200  # some false positives at fp 0.05 over 16 bands
    # Values that are not a uint64 array take the Python path, with the same answers and bits.
    assert [fast.query(ListSketch(m.hashvalues)) for m in sketches] == by_tables
    fast.insert(ListSketch(sketches[300].hashvalues))
    slow.insert(sketches[300])
    for a, b in zip(fast.hashtables, slow.hashtables):
        assert np.array_equal(a._array, b._array)
    with pytest.raises(ValueError, match="Expecting minhash with length 128, got 64"):
        fast.insert(MinHash(64))


def test_one_call_paths_write_the_filters_files_and_follow_the_tables(tmp_path):
    import pickle

    rng = np.random.default_rng(4)
    sketches = [MinHash(64, hashvalues=rng.integers(0, 1 << 32, 64, dtype=np.uint64)) for _ in range(50)]
    lsh = MinHashLSHBloom(threshold=0.5, num_perm=64, n=100, fp=0.01, save_dir=str(tmp_path / "idx"))
    for m in sketches[:25]:
        lsh.insert(m)
    lsh.sync()
    again = MinHashLSHBloom(threshold=0.5, num_perm=64, n=100, fp=0.01, save_dir=str(tmp_path / "idx"))
    assert [again.query(m) for m in sketches] == [lsh.query(m) for m in sketches]
    assert all(again.query(m) for m in sketches[:25])
    # Pickled without the C++ object, which is made again.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = MinHashLSHBloom(threshold=0.5, num_perm=64, n=100, fp=0.01)
    mem.insert(sketches[0])
    copy = pickle.loads(pickle.dumps(mem))
    assert "_fast" not in copy.__dict__ and copy.query(sketches[0])
    copy.insert(sketches[1])
    assert copy.query(sketches[1]) and not mem.query(sketches[1])  # the copy's bits are its own
    # Tables given anew are followed; tables of another kind take the Python path.
    mem.hashtables = [BloomTable(100, 0.01, band_size=mem.r) for _ in range(mem.b)]
    assert not mem.query(sketches[0])
    mem.insert(sketches[2])
    assert mem.query(sketches[2]) and mem._fast_bands() is not None

    class Exact:
        def __init__(self):
            self.keys = set()

        def insert(self, values):
            self.keys.add(int(np.asarray(values, dtype=np.uint64).sum()))

        def query(self, values):
            return int(np.asarray(values, dtype=np.uint64).sum()) in self.keys

    mem.hashtables = [Exact() for _ in range(mem.b)]
    assert mem._fast_bands() is None
    mem.insert(sketches[3])
    assert mem.query(sketches[3]) and not mem.query(sketches[4])
    # A table replaced in the list itself is followed too: its band's bits are the new table's.
    mem.hashtables = [BloomTable(100, 0.01, band_size=mem.r) for _ in range(mem.b)]
    mem.insert(sketches[5])
    fresh = BloomTable(100, 0.01, band_size=mem.r)
    mem.hashtables[0] = fresh
    mem.insert(sketches[6])
    assert fresh.query(sketches[6].hashvalues[: mem.r]) and not fresh.query(sketches[5].hashvalues[: mem.r])
    assert mem.query(sketches[5]) and mem.query(sketches[6])


def test_the_one_call_object_refuses_what_does_not_fit():
    from neardup import _native

    arrays = [np.zeros(16, dtype=np.uint8) for _ in range(4)]
    tables = [object() for _ in range(4)]
    _native.BloomBands(tables, arrays, [128] * 4, [3] * 4, 8, 32)
    for bits, k, r, h, message in [([129] * 4, [3] * 4, 8, 32, "bits must be"), ([0] * 4, [3] * 4, 8, 32, "bits must be"),
                                   ([128] * 4, [0] * 4, 8, 32, "bits must be"), ([128] * 3, [3] * 4, 8, 32, "a table, a bit count and a k"),
                                   ([128] * 4, [3] * 4, 9, 32, "do not fit"), ([1 << 63] * 4, [3] * 4, 8, 32, "bits must be")]:
        with pytest.raises(ValueError, match=message):
            _native.BloomBands(tables, arrays, bits, k, r, h)
    with pytest.raises(ValueError, match="not C-contiguous"):
        _native.BloomBands(tables, [np.zeros(16, dtype=np.uint8)[::2]] + arrays[1:], [64] * 4, [3] * 4, 8, 32)  # not contiguous
