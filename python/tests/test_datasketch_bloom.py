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
