"""Containment and top-k search against brute force, on passages planted in the sample corpus
(bench/planted_containment.py): pairs(measure="containment") and Index.query(containment=,
top=) give exactly what comparing every pair of word 5-gram sets gives, in every bin."""
import os
import pathlib
import sys

import pytest

import neardup

ROOT = pathlib.Path(__file__).parents[2]
SAMPLE = pathlib.Path(os.environ.get("NEARDUP_SAMPLE_DIR", ROOT / "data" / "sample"))
sys.path.insert(0, str(ROOT / "bench"))
import planted_containment as pc  # noqa: E402

BINS = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


@pytest.fixture(scope="module")
def corpus():
    source = pc.read_source(str(SAMPLE / "mmds-articles-2500.jsonl.zst"), 300)
    docs = pc.planted(source, 120, seed=5)
    return docs, [pc.shingles(t) for _, t in docs]


def test_pairs_equal_brute_force_in_every_bin(corpus):
    docs, sets = corpus
    expected = pc.containment_pairs(sets, 0.5)
    pos = {i: n for n, (i, _) in enumerate(docs)}
    got = {}
    for a, b, share in neardup.pairs(docs, threshold=0.5, measure="containment").pairs:
        x, y = sorted((pos[a], pos[b]))
        got[(x, y)] = share
    for lo, hi, want, found in pc.recall_by_bin(expected, got, BINS):
        assert want >= 20, f"the planted corpus has pairs in [{lo}, {hi})"
        assert found == want, f"recall {found}/{want} in [{lo}, {hi})"
    assert set(got) == set(expected), "no pair below the threshold"
    assert all(abs(got[p] - s) < 1e-12 for p, s in expected.items())
    # Jaccard misses most of them: the passages are small parts of their hosts.
    jaccard = neardup.pairs(docs, threshold=0.5, method="exact").pairs
    assert len(jaccard) < len(expected) / 2


def test_index_containment_and_top_k_equal_brute_force(corpus, tmp_path):
    docs, sets = corpus
    index = pc._inverted(sets)
    with neardup.Index.create(tmp_path / "p.idx", threshold=0.8) as ix:
        ix.add_many(docs[: len(docs) * 3 // 4])
        ix.save()
        ix.add_many(docs[len(docs) * 3 // 4:])  # added since: compared one by one, then indexed
        queries = [n for n, (i, _) in enumerate(docs) if i.startswith("passage")][:40] + list(range(0, 300, 15))
        for n in queries:
            q = sets[n]
            for t in (0.6, 0.9):
                want = sorted(((docs[d][0], len(q & sets[d]) / len(q)) for d in range(len(docs))
                               if len(q & sets[d]) >= t * len(q) - 1e-9), key=lambda x: (-x[1], x[0]))
                got = ix.query(docs[n][1], containment=t)
                assert sorted(got, key=lambda x: (-x[1], x[0])) == pytest.approx(want), docs[n][0]
            for k in (1, 5, 10):
                got = ix.query(docs[n][1], top=k)
                assert [s for _, s in got] == pytest.approx(pc.top_k(sets, index, q, k)), (docs[n][0], k)
        # A removed document is never an answer.
        first = docs[queries[0]]
        assert first[0] in [i for i, _ in ix.query(first[1], top=3)]
        ix.remove([first[0]])
        assert first[0] not in [i for i, _ in ix.query(first[1], top=3)]
        assert first[0] not in [i for i, _ in ix.query(first[1], containment=0.5)]


def test_refusals(tmp_path):
    with neardup.Index.create(tmp_path / "e.idx", verify="estimate") as ix:
        ix.add("a", "one two three four five six")
        with pytest.raises(neardup.UsageError, match='verify="exact"'):
            ix.query("one two three four five six", top=1)
        with pytest.raises(neardup.UsageError, match="exclude each other"):
            ix.query("x", top=1, containment=0.5)
    with pytest.raises(neardup.UsageError, match="method=\"exact\""):
        neardup.pairs([("a", "x y z"), ("b", "x y z")], measure="containment", method="oph")
    with pytest.raises(neardup.UsageError, match="measure"):
        neardup.pairs([("a", "x y z")], measure="cosine")
