"""neardup.datasketch's WeightedMinHash and WeightedMinHashGenerator against datasketch's
definitions (the module's docstring), computed here with NumPy one operation at a time."""
import pickle

import numpy as np
import pytest

from neardup.datasketch import MinHashLSH, WeightedMinHash, WeightedMinHashGenerator


def definition(gen, v, many=False):
    """Hash values by the definition: float32 NumPy arithmetic over the nonzero weights."""
    v = np.asarray(v, dtype=np.float32)
    nz = np.flatnonzero(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.log(v[nz])
    out = np.zeros((gen.sample_size, 2), dtype=np.int64)
    for i in range(gen.sample_size):
        r, ln_c, beta = gen.rs[i, nz], gen.ln_cs[i, nz], gen.betas[i, nz]
        t = np.floor(logs / r + beta)
        if many:
            ln_a = ln_c - ((t - beta) + np.float32(1)) * r
            k = int(np.argmin(ln_a))
        else:
            ln_a = (ln_c - (t - beta) * r) - r
            k = int(np.nanargmin(ln_a))
        out[i] = (nz[k], int(t[k]))
    return out


class FakeCsr:
    """Just what minhash_many reads of a SciPy sparse matrix: the suite runs without SciPy."""

    def __init__(self, dense, explicit_zeros=()):
        self.shape, self.ndim = dense.shape, 2
        indptr, indices, data = [0], [], []
        for i, row in enumerate(dense):
            for j, x in enumerate(row):
                if x != 0 or (i, j) in explicit_zeros:
                    indices.append(j)
                    data.append(x)
            indptr.append(len(indices))
        self.indptr, self.indices = np.array(indptr), np.array(indices)
        self.data = np.array(data, dtype=np.float64)
        self.nnz = len(data)

    def tocsr(self):
        return self

    def astype(self, dtype):
        self.data = self.data.astype(dtype)
        return self

    def sort_indices(self):
        pass


def vectors(rng, dim, n):
    for k in range(n):
        kind = k % 4
        if kind == 0:
            v = rng.integers(0, 5, dim)
        elif kind == 1:
            v = rng.uniform(0, 100, dim) * (rng.random(dim) < 0.05)
        elif kind == 2:
            v = rng.exponential(1, dim).astype(np.float32)
        else:
            v = rng.integers(1, 99999999, dim)
        if not np.any(v):
            v[rng.integers(dim)] = 1
        yield v


def test_generator_draws_as_datasketch():
    g = WeightedMinHashGenerator(7, 5, 3)
    rs = np.random.RandomState(3)
    assert np.array_equal(g.rs, rs.gamma(2, 1, (5, 7)).astype(np.float32))
    assert np.array_equal(g.ln_cs, np.log(rs.gamma(2, 1, (5, 7))).astype(np.float32))
    assert np.array_equal(g.betas, rs.uniform(0, 1, (5, 7)).astype(np.float32))
    assert (g.dim, g.sample_size, g.seed) == (7, 5, 3)
    assert g.rs.dtype == g.ln_cs.dtype == g.betas.dtype == np.float32
    m = g.minhash([1, 2, 0, 0, 5, 0, 1])
    again = pickle.loads(pickle.dumps(g))  # without the transposed tables made for the sketch
    assert "_transposed" not in again.__dict__ and again.minhash([1, 2, 0, 0, 5, 0, 1]) == m
    g.rs = g.rs * np.float32(2)  # a table replaced: the sketch follows it
    assert np.array_equal(g.minhash([1, 2, 0, 0, 5, 0, 1]).hashvalues, definition(g, [1, 2, 0, 0, 5, 0, 1]))


@pytest.mark.parametrize("dim,samples,seed", [(1, 1, 1), (2, 4, 1), (37, 128, 7), (2000, 64, 11), (5000, 200, 2)])
def test_minhash_equals_the_definition(dim, samples, seed):
    g = WeightedMinHashGenerator(dim, samples, seed)
    rng = np.random.default_rng(seed)
    for v in vectors(rng, dim, 8):
        m = g.minhash(v)
        assert m.hashvalues.dtype == np.int64 and m.hashvalues.shape == (samples, 2)
        assert np.array_equal(m.hashvalues, definition(g, v)), (dim, samples, seed)
        assert m.seed == seed and len(m) == samples


def dense_vectors(rng, dim):
    """Vectors with weights in most dimensions, which minhash takes through the generator's order:
    spreads from a few to dozens of orders of magnitude, ties, and a quarter of the weights."""
    yield rng.exponential(1, dim)
    yield rng.uniform(0, 1, dim)
    yield rng.lognormal(0, 6, dim)
    yield rng.exponential(1e-30, dim)
    yield rng.exponential(1e30, dim)
    yield np.ones(dim)
    yield rng.integers(1, 4, dim)
    yield rng.exponential(1, dim) * (rng.random(dim) < 0.3)


@pytest.mark.parametrize("prefix", [None, 1, 3, 40])
def test_dense_minhash_through_the_order_equals_the_definition(prefix):
    # The order's prefix cut short makes samples go past it to a full scan, as a vector of very
    # spread weights does with the usual one.
    from neardup import _native

    g = WeightedMinHashGenerator(400, 96, 4)
    rng = np.random.default_rng(4)
    order = g._order(g._tables()) if prefix is None else _native.icws_order(g.rs, g.ln_cs, g.betas, prefix=prefix)
    assert order is not None and order[0].shape == (96, min(400, prefix or 512))
    for v in dense_vectors(rng, 400):
        v32 = np.asarray(v, dtype=np.float32)
        with np.errstate(divide="ignore"):
            got = _native.icws_sample_dense(*g._tables(), order, v32, np.log(v32))
        assert np.array_equal(got, definition(g, v)), prefix
        assert np.array_equal(g.minhash(v).hashvalues, got)


def test_the_order_bounds_every_dimension():
    # What the order rests on: every dimension's ln_a, as computed in float32, is at least its
    # bound less the weight's log, within the margin the search allows.
    from neardup import _native

    g = WeightedMinHashGenerator(300, 32, 9)
    rng = np.random.default_rng(9)
    dims, _, bounds, rest = _native.icws_order(g.rs, g.ln_cs, g.betas, prefix=300)
    assert np.isinf(rest).all() and (np.diff(bounds, axis=1) >= 0).all()
    for v in dense_vectors(rng, 300):
        v = np.asarray(v, dtype=np.float32)
        with np.errstate(divide="ignore"):
            lv = np.log(v)
        here = v != 0
        slack = 8e-6 * np.abs(lv[here]).max() + 1e-12
        for i in range(32):
            j = dims[i]
            r, ln_c, beta = g.rs[i, j], g.ln_cs[i, j], g.betas[i, j]
            t = np.floor(lv[j] / r + beta)
            ln_a = (ln_c - (t - beta) * r) - r
            ok = ln_a.astype(np.float64) >= bounds[i] - lv[j].astype(np.float64) - slack
            assert ok[here[j]].all(), i


def test_dense_minhash_with_weights_whose_log_is_not_finite():
    # A negative or NaN weight has no log (skipped, as datasketch's nanargmin skips it); an
    # infinite one ends in datasketch's OverflowError.
    g = WeightedMinHashGenerator(40, 16, 2)
    v = np.random.default_rng(2).exponential(1, 40)
    v[3], v[9] = -1.0, np.nan
    assert np.array_equal(g.minhash(v).hashvalues, definition(g, v))
    v[5] = np.inf
    with pytest.raises(OverflowError):
        g.minhash(v)


def test_the_order_is_none_for_tables_it_does_not_hold_for():
    from neardup import _native

    g = WeightedMinHashGenerator(50, 8, 1)
    g.rs = g.rs.copy()
    g.rs[2, 7] = 0.0
    assert g._order(g._tables()) is None
    v = np.random.default_rng(1).exponential(1, 50)
    with np.errstate(divide="ignore", invalid="ignore"):  # the definition's r = 0
        assert np.array_equal(g.minhash(v).hashvalues, definition(g, v))
    with pytest.raises(ValueError):
        _native.icws_order(g.rs, g.ln_cs, g.betas, prefix=0)


def test_minhash_many_equals_the_definition_dense_and_sparse():
    g = WeightedMinHashGenerator(300, 50, 5)
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, (9, 300)) * (rng.random((9, 300)) < 0.1)
    X[3] = 0
    X[0, :] = 0
    X[0, 17] = 2
    for inp in (X, X.astype(np.float64), FakeCsr(X), FakeCsr(X, explicit_zeros={(1, 0), (3, 5)})):
        got = g.minhash_many(inp)
        assert len(got) == 9 and got[3] is None
        for row, m in zip(X, got):
            if not np.any(row):
                continue
            assert np.array_equal(m.hashvalues, definition(g, row, many=True))


def test_minhash_input_and_errors():
    g = WeightedMinHashGenerator(3, 4, 1)
    v = np.array([1, 0, 3], dtype=np.float32)
    g.minhash(v)
    assert np.array_equal(v, [1, 0, 3])  # not changed
    assert np.array_equal(g.minhash([1, 0, 3]).hashvalues, g.minhash(v).hashvalues)
    with pytest.raises(TypeError):
        g.minhash(iter([1, 2, 3]))
    with pytest.raises(ValueError, match="dimension mismatch"):
        g.minhash([1, 2])
    with pytest.raises(ValueError, match="all zeros"):
        g.minhash([0, 0, 0])
    with pytest.raises(ValueError, match="All-NaN"):
        g.minhash([-1, -2, 0])  # every log is NaN
    with pytest.raises(OverflowError):
        g.minhash([np.inf, 1, 1])
    with pytest.raises(ValueError):
        g.minhash_many(np.ones(3))
    with pytest.raises(ValueError, match="dimension mismatch"):
        g.minhash_many(np.ones((2, 4)))
    with pytest.raises(TypeError):
        g.minhash_many([[1, 2, 3]])


def test_weighted_minhash_surface_and_estimate():
    dim = 400
    g = WeightedMinHashGenerator(dim, 256, 9)
    rng = np.random.default_rng(9)
    u = rng.integers(0, 6, dim)
    w = u.copy()
    w[: dim // 3] = rng.integers(0, 6, dim // 3)
    true = np.minimum(u, w).sum() / np.maximum(u, w).sum()
    a, b = g.minhash(u), g.minhash(w)
    # 256 samples: standard error sqrt(J (1 - J) / 256) < 0.032.
    assert abs(a.jaccard(b) - true) < 0.13
    assert a.jaccard(a) == 1.0
    with pytest.raises(ValueError):
        a.jaccard(WeightedMinHashGenerator(dim, 256, 10).minhash(u))
    with pytest.raises(ValueError):
        a.jaccard(WeightedMinHashGenerator(dim, 128, 9).minhash(u))
    c = a.copy()
    assert c == a and c is not a and not np.shares_memory(c.hashvalues, a.hashvalues)
    assert a != b and a != "x"
    p = pickle.loads(pickle.dumps(a))
    assert p == a and type(p) is WeightedMinHash
    assert np.array_equal(a.digest(), a.hashvalues)


def test_weighted_minhash_in_an_lsh():
    g = WeightedMinHashGenerator(50, 64, 4)
    rng = np.random.default_rng(4)
    base = rng.integers(1, 10, 50)
    near = base.copy()
    near[:2] += 1
    far = rng.integers(1, 10, 50)
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    ms = {"base": g.minhash(base), "near": g.minhash(near), "far": g.minhash(far)}
    for k, m in ms.items():
        lsh.insert(k, m)
    # Band keys: each band's (dimension, t) pairs as big-endian 64-bit words, negative t included.
    for i, key in enumerate(lsh.keys["base"]):
        assert key == ms["base"].hashvalues[i * lsh.r:(i + 1) * lsh.r].astype(">i8").tobytes()
    assert {"base", "near"} <= set(lsh.query(ms["base"]))
    with pytest.raises(ValueError):
        lsh.query(WeightedMinHashGenerator(50, 32, 4).minhash(base))
