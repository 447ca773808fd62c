#!/usr/bin/env python3
"""Computes the empirical bias tables of HyperLogLog++ (Heule, Nunkesser and Hall, "HyperLogLog
in practice", EDBT 2013, section 5.2) by simulation, as the paper describes them, and writes
python/neardup/datasketch/_hllpp_tables.py:

    /usr/bin/python3 tools/hllpp_tables.py [OUT]      # about five minutes; NumPy

For each precision p in [4, 16] (m = 2^p registers) and 200 cardinalities n evenly spaced from 1
to 5m, many runs of n distinct values with 64-bit hashes give the raw estimate
E = alpha m^2 / sum(2^-M_j); a table row is (the mean of E, the mean of E - n). A count below 5m
subtracts the mean bias of the 6 rows whose mean E is nearest its E. The threshold below which
linear counting m ln(m / V) is used instead is the first cardinality from which linear counting's
root-mean-square error stays above the bias-corrected estimate's (for 3 cardinalities running).

A run is simulated by its registers alone: adding c values to a register sets it to the largest
of c ranks, each rank r >= 1 with probability 2^-r (a uniform hash's leading zeros), and that
largest one has P(max <= r) = (1 - 2^-r)^c, drawn by inverting it. The runs at each p number
2^23 / m, at most 20,000 (fewer registers vary more). The seed is fixed: the tables are the same
on every run of this script.
"""
import sys

import numpy as np

POINTS = 200
SEED = 20130318


def alpha(p):
    return {4: 0.673, 5: 0.697, 6: 0.709}.get(p, 0.7213 / (1.0 + 1.079 / (1 << p)))


def max_rank(c, rng, cap):
    """The largest of c ranks (c > 0 elementwise), ranks r >= 1 with P(r) = 2^-r, capped."""
    u = rng.random(c.shape)
    with np.errstate(divide="ignore"):
        # (1 - 2^-r)^c >= u  <=>  r >= -log2(1 - u^(1/c))
        r = np.ceil(-np.log2(-np.expm1(np.log(u) / c)))
    return np.clip(r, 1, cap).astype(np.int8)


def simulate(p, rng):
    m = 1 << p
    runs = min(20000, (1 << 23) // m)
    ns = np.unique(np.round(np.linspace(1, 5 * m, POINTS)).astype(np.int64))
    reg = np.zeros((runs, m), dtype=np.int8)
    raw = np.empty((len(ns), runs))
    lc = np.empty((len(ns), runs))
    done = 0
    for k, n in enumerate(ns):
        counts = rng.multinomial(n - done, np.full(m, 1.0 / m), size=runs)
        hit = counts > 0
        reg[hit] = np.maximum(reg[hit], max_rank(counts[hit], rng, 64 - p + 1))
        done = n
        raw[k] = alpha(p) * float(m) ** 2 / np.sum(np.exp2(-reg.astype(np.float64)), axis=1)
        zeros = m - np.count_nonzero(reg, axis=1)
        with np.errstate(divide="ignore"):
            lc[k] = np.where(zeros > 0, m * np.log(m / np.maximum(zeros, 1)), np.inf)
    return ns, raw, lc


def corrected(raw, table_raw, table_bias):
    """Each estimate less the mean bias of the 6 table rows of nearest raw estimate."""
    flat = raw.ravel()
    at = np.searchsorted(table_raw, flat)
    window = np.clip(at[:, None] + np.arange(-6, 6), 0, len(table_raw) - 1)
    near = np.argsort((flat[:, None] - table_raw[window]) ** 2, axis=1, kind="stable")[:, :6]
    rows = np.take_along_axis(window, near, axis=1)
    return (flat - table_bias[rows].mean(axis=1)).reshape(raw.shape)


def threshold(ns, raw, lc, table_raw, table_bias):
    est = corrected(raw, table_raw, table_bias)
    rmse_hll = np.sqrt(np.mean((est - ns[:, None]) ** 2, axis=1))
    rmse_lc = np.sqrt(np.mean((lc - ns[:, None]) ** 2, axis=1))
    # Smoothed over 5 cardinalities: at high p there are fewer runs, and the two curves cross at
    # a shallow angle.
    kernel = np.ones(5) / 5
    worse = np.convolve(rmse_lc, kernel, "same") > np.convolve(rmse_hll, kernel, "same")
    for k in range(len(ns) - 3):
        if worse[k:k + 3].all():
            return int(ns[k])
    return int(ns[-1])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "python/neardup/datasketch/_hllpp_tables.py"
    rng = np.random.default_rng(SEED)
    raws, biases, thresholds = [], [], []
    for p in range(4, 17):
        ns, raw, lc = simulate(p, rng)
        table_raw = raw.mean(axis=1)
        table_bias = table_raw - ns
        order = np.argsort(table_raw, kind="stable")
        table_raw, table_bias = table_raw[order], table_bias[order]
        raws.append(table_raw)
        biases.append(table_bias)
        thresholds.append(threshold(ns, raw, lc, table_raw, table_bias))
        print(f"p={p}: {raw.shape[1]} runs, threshold {thresholds[-1]}", file=sys.stderr)
    with open(out, "w") as f:
        f.write('"""HyperLogLog++\'s bias tables for p in [4, 16], computed by tools/hllpp_tables.py (the\n'
                'procedure of Heule, Nunkesser and Hall, EDBT 2013): per p, the mean raw estimates, their\n'
                'mean biases, and the cardinality below which linear counting is used. Generated: do not\n'
                'edit."""\n')
        f.write("THRESHOLDS = %r\n" % thresholds)

        def rows(name, tables):
            f.write("%s = [\n" % name)
            for t in tables:
                f.write("    [" + ", ".join("%.4f" % x for x in t) + "],\n")
            f.write("]\n")

        rows("RAW_ESTIMATES", raws)
        rows("BIASES", biases)


if __name__ == "__main__":
    main()
