"""The native API: the same answers as the CLI on the same documents, errors as exceptions."""
import gzip
import json
import os
import pathlib
import random
import subprocess

import numpy as np
import pytest

import neardup

CLI = os.environ.get("NEARDUP_CLI", "neardup")
SAMPLE = pathlib.Path(os.environ.get("NEARDUP_SAMPLE_DIR", pathlib.Path(__file__).parents[2] / "data" / "sample"))


def corpus(n_families=60, seed=3):
    """Documents in families of near-copies (a word or a few changed), plus unrelated ones."""
    rng = random.Random(seed)
    vocab = ["w%d" % i for i in range(2000)]
    docs = []
    for f in range(n_families):
        base = [rng.choice(vocab) for _ in range(rng.randrange(30, 200))]
        for c in range(rng.randrange(1, 5)):
            text = list(base)
            for _ in range(c * rng.randrange(0, 4)):
                text[rng.randrange(len(text))] = rng.choice(vocab)
            docs.append(("f%d-%d" % (f, c), " ".join(text)))
    return docs


def cli(*args):
    return subprocess.run([CLI, *args], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    docs = corpus()
    path = tmp_path_factory.mktemp("c") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    return docs, path


@pytest.mark.parametrize("options,flags", [
    ({}, []),
    ({"threshold": 0.5, "shingle": 3}, ["--threshold", "0.5", "--shingle", "3"]),
    ({"method": "minhash", "threshold": 0.6}, ["--method", "minhash", "--threshold", "0.6"]),
    ({"method": "bottomk", "threshold": 0.5}, ["--method", "bottomk", "--threshold", "0.5"]),
    ({"method": "exact", "threshold": 0.7}, ["--method", "exact", "--threshold", "0.7"]),
])
def test_pairs_equal_the_cli(jsonl, tmp_path, options, flags):
    docs, path = jsonl
    out = tmp_path / "pairs.tsv"
    cli("pairs", str(path), "-o", str(out), "-q", *flags)
    want = out.read_text()
    assert want, "the corpus has no pairs: the test data is wrong"
    assert neardup.pairs(docs, **options).pairs_tsv() == want  # (id, text) tuples in memory
    assert neardup.pairs(pathlib.Path(path), **options).pairs_tsv() == want  # the file, as the CLI reads it
    assert neardup.pairs(pathlib.Path(path), memory_map=False, **options).pairs_tsv() == want  # read as a stream
    assert neardup._run_args("words:5", 0, "text", "id", "fail", "error", memory_map=False).memory_map is False
    # Gzipped: decompressed once into a temporary copy in temp_dir, read again from there.
    gz = tmp_path / "docs.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    from_copy = neardup.pairs(gz, temp_dir=str(tmp_path), **options)
    assert from_copy.pairs_tsv() == want
    # Read again from the copy, which is made on ext4 only (stat reports ext4 as ext2/ext3).
    ext4 = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout.strip() == "ext2/ext3"
    assert from_copy.stats["copied_bytes"] == (path.stat().st_size if ext4 else 0)
    assert sorted(tmp_path.iterdir()) == sorted([out, gz])  # the copy has no name
    dicts = ({"id": i, "text": t} for i, t in docs)  # a generator of dicts
    assert neardup.pairs(dicts, **options).pairs_tsv() == want


def test_memory_limit_spills_the_state_with_the_same_results(tmp_path):
    # A limit below the run's expected memory keeps the document table, and with oph the band
    # keys, on disk in temp_dir (files without a name: nothing is left there); pairs, clusters
    # and the ids read back are those of a run without one.
    sample = SAMPLE / "mmds-articles-2500.jsonl.zst"
    for run, method in ((neardup.pairs, "oph"), (neardup.dedup, "oph"), (neardup.dedup, "simhash")):
        whole = run(sample, threshold=0.7, method=method, memory_limit=0)
        spilled = run(sample, threshold=0.7, method=method, memory_limit=1, temp_dir=str(tmp_path))
        assert whole.stats["spilled_bytes"] == 0 and spilled.stats["spilled_bytes"] > 0
        assert spilled.pairs_tsv() == whole.pairs_tsv() and spilled.clusters_tsv() == whole.clusters_tsv()
        assert spilled.removed_tsv() == whole.removed_tsv()
        assert list(tmp_path.iterdir()) == []
    with pytest.raises(neardup.UsageError, match="memory_limit"):
        neardup.dedup(sample, memory_limit=-5)
    with pytest.raises(neardup.IoError, match="missing"):
        neardup.dedup(sample, memory_limit=1, temp_dir=str(tmp_path / "missing"))


def test_dedup_equals_the_cli(jsonl, tmp_path):
    docs, path = jsonl
    removed, clusters = tmp_path / "removed.tsv", tmp_path / "clusters.tsv"
    cli("dedup", str(path), "-o", str(tmp_path / "kept.jsonl"), "--removed", str(removed), "--clusters", str(clusters), "-q")
    r = neardup.dedup(docs)
    assert r.removed_tsv() == removed.read_text()
    assert r.clusters_tsv() == clusters.read_text()
    kept_lines = (tmp_path / "kept.jsonl").read_text().splitlines()
    assert int(r.keep_mask.sum()) == len(kept_lines) == len(docs) - r.stats["removed"]
    kept_ids = [json.loads(line)["id"] for line in kept_lines]
    assert [i for i, keep in zip(r.ids, r.keep_mask) if keep] == kept_ids
    assert r.stats["removed"] > 0


def test_sample_corpus_file_equals_the_cli(tmp_path):
    sample = SAMPLE / "mmds-articles-2500.jsonl.zst"
    out = tmp_path / "p.tsv"
    cli("pairs", str(sample), "--threshold", "0.5", "--shingle", "3", "-o", str(out), "-q")
    assert neardup.pairs(sample, threshold=0.5, shingle=3).pairs_tsv() == out.read_text()


def test_document_shapes():
    texts = ["the quick brown fox jumps over the lazy dog " * 3, "the quick brown fox jumps over the lazy cat " * 3,
             "something else entirely, nothing in common with the others"]
    r = neardup.pairs(texts, threshold=0.5, shingle=2)
    assert r.ids == ["0", "1", "2"]
    assert [(a, b) for a, b, _ in r.pairs] == [("0", "1")]
    a, b, s = r.pair_indices
    assert a.dtype == np.uint32 and s.dtype == np.float64 and a.tolist() == [0] and b.tolist() == [1]
    d = neardup.dedup(iter(texts), threshold=0.5, shingle=2)
    assert d.keep_mask.tolist() == [True, False, True]
    assert d.removed[0][:2] == ("1", "0")
    assert d.clusters == [["0", "1"]]
    assert neardup.dedup([{"body": t, "key": k} for k, t in zip("xyz", texts)], threshold=0.5, shingle=2,
                         text_field="body", id_field="key").removed[0][:2] == ("y", "x")
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        assert neardup.dedup(pd.Series(texts), threshold=0.5, shingle=2).keep_mask.tolist() == [True, False, True]


def test_sketch_arrays():
    texts = ["one two three four five six seven", "one two three four five six eight", ""]
    sig = neardup.sketch(texts, num_perm=64, shingle=2)
    assert sig.shape == (3, 64) and sig.dtype == np.uint32
    assert np.array_equal(neardup.sketch(texts, num_perm=64, shingle=2, threads=1), sig)
    assert (sig[2] == 0xFFFFFFFF).all()  # no shingle: the empty signature
    assert 0 < (sig[0] == sig[1]).mean() < 1
    sim = neardup.sketch(texts, method="simhash", shingle=2)
    assert sim.shape == (3,) and sim.dtype == np.uint64
    fps = neardup.sketch(texts, method="bottomk", sketch_size=4, shingle=2)
    assert len(fps) == 3 and len(fps[0]) == 4 and list(fps[0]) == sorted(fps[0])


def test_errors_are_exceptions_with_fields(tmp_path):
    with pytest.raises(neardup.UsageError) as e:
        neardup.pairs(["a"], method="nope")
    assert e.value.option == "method" and isinstance(e.value, ValueError)
    with pytest.raises(neardup.FormatError) as e:
        neardup.pairs([{"text": "ok"}, {"body": "no text"}])
    assert (e.value.source, e.value.line, e.value.option) == ("<memory>", 2, "text_field")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": broken}\n')
    with pytest.raises(neardup.FormatError) as e:
        neardup.pairs(bad)
    assert e.value.source == str(bad) and e.value.line == 2 and e.value.option == "on_error"
    assert 'on_error="skip"' in str(e.value) and "--" not in str(e.value)  # worded for Python
    assert neardup.pairs(bad, on_error="skip").stats["skipped"] == 1
    with pytest.raises(neardup.IoError) as e:
        neardup.pairs(tmp_path / "missing.jsonl")
    assert isinstance(e.value, OSError) and e.value.source == str(tmp_path / "missing.jsonl")
    with pytest.raises(neardup.UsageError):
        neardup.pairs("a single str is ambiguous")


def test_progress_callback():
    seen = []
    neardup.pairs(["a b c d e f g"] * 10, progress=lambda stage, done, total, docs: seen.append((stage, docs)))
    assert ("sketch", 10) in seen  # the first pass reports every document; verification follows


def test_index(tmp_path):
    path = tmp_path / "pages.ndx"
    texts = {i: t for i, t in corpus(20, seed=9)}
    with neardup.Index.create(path, threshold=0.6, shingle=3) as idx:
        for i, t in texts.items():
            if i.endswith("-0"):
                idx.add(i, t)
        assert "f0-0" in idx and len(idx) == 20
        with pytest.raises(neardup.FormatError):
            idx.add("f0-0", "again")
    with neardup.Index.open(path) as idx:
        assert len(idx) == 20
        for i, t in texts.items():
            matches = idx.query(t)
            if i.endswith("-0"):
                assert matches[0] == (i, 1.0)
            assert all(0.6 <= s <= 1.0 for _, s in matches)
        with pytest.raises(neardup.UsageError):
            idx.add("new", "read only")
    with neardup.Index.open(path, update=True) as idx:
        assert idx.remove(["f0-0", "nope"]) == 1
    assert "f0-0" not in neardup.Index.open(path)
    assert neardup.Index.open(path).stats()["documents"] == 19
