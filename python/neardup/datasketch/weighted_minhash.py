"""datasketch's WeightedMinHash and WeightedMinHashGenerator: Ioffe's improved consistent weighted
sampling (ICWS; Ioffe 2010, "Improved Consistent Sampling, Weighted Minhash and L1 Sketching"),
whose collision probability is the weighted Jaccard similarity sum_j min(u_j, v_j) / sum_j
max(u_j, v_j) of two vectors of non-negative weights.

The definitions are datasketch's, in its float32 arithmetic. For seed s the generator draws, with
NumPy's legacy ``RandomState(s)``, ``r = gamma(2, 1, (S, D))``, then ``c = gamma(2, 1, (S, D))``
and ``beta = uniform(0, 1, (S, D))``, S the sample size and D the dimension, each made float32
(``ln_c`` = float32(log c)). For a vector v, over its dimensions j with v_j != 0 and for each
sample i (every operation rounded to float32, ``log v_j`` NumPy's):

    t = floor(log v_j / r_ij + beta_ij)
    ln_a = (ln_c_ij - (t - beta_ij) * r_ij) - r_ij          (minhash)
    ln_a = ln_c_ij - ((t - beta_ij) + 1) * r_ij              (minhash_many)

and hash value i is ``(k, t_ik)`` for the first k with the smallest ``ln_a`` (datasketch's two
methods round differently, so their values may differ where two samples nearly tie, as its
documentation warns). The loop runs in
C++ over the nonzero weights only: the cost is S times the nonzero count, not S times D.
"""
from __future__ import annotations

import collections.abc
import copy as _copy

import numpy as np

from .. import _native
from ._derived import DerivedState


class WeightedMinHash:
    """A weighted MinHash: ``seed`` and ``hashvalues``, an (S, 2) array of (dimension, t) pairs,
    made by WeightedMinHashGenerator."""

    def __init__(self, seed: int, hashvalues: np.ndarray) -> None:
        self.seed = seed
        self.hashvalues = hashvalues

    def jaccard(self, other: "WeightedMinHash") -> float:
        """The share of samples on which the two agree: an estimate of weighted Jaccard."""
        if other.seed != self.seed:
            raise ValueError("Cannot compute Jaccard given WeightedMinHash objects with different seeds")
        if len(self) != len(other):
            raise ValueError("Cannot compute Jaccard given WeightedMinHash objects with different numbers of hash values")
        a = np.asarray(self.hashvalues).reshape(len(self), -1)
        b = np.asarray(other.hashvalues).reshape(len(other), -1)
        return float(np.count_nonzero(np.all(a == b, axis=1))) / float(len(self))

    def digest(self) -> np.ndarray:
        return _copy.copy(self.hashvalues)

    def copy(self) -> "WeightedMinHash":
        return WeightedMinHash(self.seed, self.digest())

    def __len__(self) -> int:
        return len(self.hashvalues)

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.seed == other.seed and np.array_equal(self.hashvalues, other.hashvalues)

    __hash__ = None  # mutable, as datasketch's


class WeightedMinHashGenerator(DerivedState):
    """Makes WeightedMinHash objects of ``dim``-dimensional weight vectors, ``sample_size``
    samples each, from ``seed``: datasketch's arguments, attributes (``rs``, ``ln_cs``,
    ``betas``) and values."""

    def __init__(self, dim: int, sample_size: int = 128, seed: int = 1) -> None:
        self.dim = dim
        self.sample_size = sample_size
        self.seed = seed
        generator = np.random.RandomState(seed=seed)
        self.rs = generator.gamma(2, 1, (sample_size, dim)).astype(np.float32)
        self.ln_cs = np.log(generator.gamma(2, 1, (sample_size, dim))).astype(np.float32)
        self.betas = generator.uniform(0, 1, (sample_size, dim)).astype(np.float32)

    _derived = ("_transposed", "_ordered")

    def _tables(self):
        """The three tables transposed, (D, S) float32, so that a weight's samples are one run in
        memory: made on first use and again whenever an attribute is given another array (not
        when one is changed in place)."""
        key = (id(self.rs), id(self.ln_cs), id(self.betas))
        cached = self.__dict__.get("_transposed")
        if cached is None or cached[0] != key:
            tables = tuple(np.ascontiguousarray(np.asarray(a, dtype=np.float32).T) for a in (self.rs, self.ln_cs, self.betas))
            cached = (key, tables, (self.rs, self.ln_cs, self.betas))  # the sources kept: their ids stay theirs
            self.__dict__["_transposed"] = cached
        return cached[1]

    def _order(self, tables):
        """The generator's dimensions per sample in the order of a bound of their ln_a
        (_native.icws_order), for dense vectors; None where the tables hold values the bound does
        not hold for. Made on first use, and again with the tables (``tables``: _tables()'s)."""
        cached = self.__dict__.get("_ordered")
        if cached is None or cached[0] is not tables:
            rows = (np.ascontiguousarray(a, dtype=np.float32) for a in (self.rs, self.ln_cs, self.betas))
            cached = (tables, _native.icws_order(*rows))
            self.__dict__["_ordered"] = cached
        return cached[1]


    def minhash(self, v) -> WeightedMinHash:
        """The weighted MinHash of the weight vector ``v`` (any sized sequence of ``dim`` numbers,
        not all zero); ``v`` itself is not changed."""
        if not isinstance(v, collections.abc.Sized):
            raise TypeError("Input vector must be sized")
        if not len(v) == self.dim:
            raise ValueError("Input dimension mismatch, expecting %d" % self.dim)
        v = np.asarray(v, dtype=np.float32).reshape(-1)
        present = np.count_nonzero(v != 0)  # of the float array itself: 8 times slower
        if present == 0:
            raise ValueError("Input is all zeros")
        tables = self._tables()
        rs, ln_cs, betas = tables
        # A vector with weights in a quarter of the dimensions or more goes through the order,
        # which looks at tens of dimensions per sample instead of every weight's.
        order = self._order(tables) if present * 4 >= self.dim else None
        with np.errstate(invalid="ignore", divide="ignore"):
            if order is not None:
                hashvalues = _native.icws_sample_dense(rs, ln_cs, betas, order, v, np.log(v))
            else:
                nonzero = np.flatnonzero(v).astype(np.int64)
                hashvalues = _native.icws_sample(rs, ln_cs, betas, nonzero, np.log(v[nonzero]), False)
        return WeightedMinHash(self.seed, hashvalues)

    def minhash_many(self, X) -> list:
        """The weighted MinHashes of the rows of ``X`` (a 2-D NumPy array or a SciPy sparse
        matrix), None for a row without a nonzero weight; in parallel over the rows. Values as
        datasketch's ``minhash_many`` (not ``minhash``'s: it rounds differently)."""
        if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # a SciPy sparse matrix
            if X.ndim != 2:
                raise ValueError("Input must have two dimensions")
            if X.shape[1] != self.dim:
                raise ValueError("Input dimension mismatch, expecting %d" % self.dim)
            X = X.tocsr().astype(np.float32)
            X.sort_indices()
            indptr, indices, data = X.indptr.astype(np.int64), X.indices.astype(np.int64), np.asarray(X.data, dtype=np.float32)
            keep = data != 0  # explicitly stored zeros are not weights
            if not keep.all():
                counts = np.add.reduceat(keep.astype(np.int64), indptr[:-1]) if len(data) else np.zeros(X.shape[0], np.int64)
                counts[np.diff(indptr) == 0] = 0
                indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
                indices, data = indices[keep], data[keep]
        elif isinstance(X, np.ndarray):
            if X.ndim != 2:
                raise ValueError("Input must have two dimensions")
            if X.shape[1] != self.dim:
                raise ValueError("Input dimension mismatch, expecting %d" % self.dim)
            dense = np.asarray(X, dtype=np.float32)
            rows, cols = np.nonzero(dense)
            indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))]).astype(np.int64)
            indices, data = cols.astype(np.int64), dense[rows, cols]
        else:
            raise TypeError("Input X must be a sparse matrix or numpy matrix")
        with np.errstate(invalid="ignore", divide="ignore"):
            logs = np.log(data)
        rs, ln_cs, betas = self._tables()
        values = _native.icws_sample_rows(rs, ln_cs, betas, indptr, indices, logs)
        return [WeightedMinHash(self.seed, values[i]) if indptr[i + 1] > indptr[i] else None for i in range(len(indptr) - 1)]
