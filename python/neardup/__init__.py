"""neardup: find, cluster and remove near-duplicate documents.

    import neardup
    result = neardup.dedup(["a text", "a text!", "another one"], threshold=0.8)
    result.keep_mask          # numpy bool array: True for the documents to keep
    result.removed            # [(removed_id, kept_id, similarity), ...]
    neardup.pairs(docs).pairs  # [(id1, id2, similarity), ...], exact Jaccard by default

Documents are any iterable of ``str``, of ``(id, text)``, or of dicts holding a text field (a
list, a generator, a pandas Series, a Hugging Face dataset column), or file paths (``str`` or
``pathlib.Path``, read as the CLI reads them: JSONL, text files, folders, .gz/.zst/.xz/.bz2).
The work runs in C++ without the GIL. ``neardup.datasketch`` is a drop-in for datasketch's
MinHash, LeanMinHash and MinHashLSH that gives the same values. docs/python.md has the details.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Callable, Optional, Union

import numpy as np

from . import _native
from .errors import Error, FormatError, InternalError, IoError, UsageError

__all__ = [
    "pairs", "dedup", "sketch", "spec", "Index", "Result",
    "Error", "UsageError", "FormatError", "IoError", "InternalError", "__version__",
]
__version__ = _native.version()

Progress = Callable[[str, int, int, int], None]


# ---- Options ----

def spec(threshold: float = 0.8, method: str = "oph", shingle: int = 5, chars: Optional[int] = None,
         num_perm: int = 128, sketch_size: int = 128, hamming: int = 3, bands: Optional[int] = None,
         rows: Optional[int] = None, verify: str = "exact", seed: Optional[int] = None) -> str:
    """The one-line pipeline spec of these options (as ``neardup --spec`` takes it), resolved:
    bands and rows chosen from the threshold when not given."""
    tokens = [f"chars:{chars}" if chars else f"words:{shingle}"]
    if method in ("oph", "minhash"):
        tokens.append(f"{method}:{num_perm}")
    elif method == "bottomk":
        tokens.append(f"bottomk:{sketch_size}")
    elif method == "simhash":
        tokens.append(f"simhash:{hamming}")
    elif method == "exact":
        tokens.append("exact")
    else:
        raise UsageError(f'method="{method}" is not one of oph, minhash, bottomk, simhash, exact', option="method")
    if (bands is None) != (rows is None):
        raise UsageError("give bands and rows together, or neither", option="bands")
    if bands is not None:
        tokens.append(f"lsh:{bands}x{rows}")
    if verify not in ("exact", "estimate"):
        raise UsageError(f'verify="{verify}" is not one of exact, estimate', option="verify")
    tokens.append(f"{'verify' if verify == 'exact' else 'estimate'}:{threshold!r}")
    if seed is not None:
        tokens.append(f"seed:{seed}")
    return _native.resolve_spec(" ".join(tokens))


def _run_args(spec_text: str, threads: int, text_field: str, id_field: str, on_error: str,
              on_duplicate_id: str, keep: str = "first", cluster: str = "components", top: int = 0,
              memory_map: bool = True, temp_dir: Optional[str] = None):
    if on_error not in ("fail", "skip"):
        raise UsageError(f'on_error="{on_error}" is not one of fail, skip', option="on_error")
    if on_duplicate_id not in ("error", "keep"):
        raise UsageError(f'on_duplicate_id="{on_duplicate_id}" is not one of error, keep', option="on_duplicate_id")
    if cluster not in ("components", "leader"):
        raise UsageError(f'cluster="{cluster}" is not one of components, leader', option="cluster")
    a = _native.RunArgs()
    a.spec = spec_text
    a.threads = int(threads)
    a.text_field = text_field
    a.id_field = id_field
    a.skip_bad = on_error == "skip"
    a.keep_duplicate_ids = on_duplicate_id == "keep"
    a.keep = keep
    a.cluster = cluster
    a.top = int(top)
    a.memory_map = bool(memory_map)
    a.temp_dir = "" if temp_dir is None else str(temp_dir)
    return a


def _progress_of(progress) -> Optional[Progress]:
    """A callback(stage, bytes_done, bytes_total, documents), or a tqdm bar for progress=True."""
    if progress is None or progress is False:
        return None
    if callable(progress):
        return progress
    try:
        from tqdm import tqdm  # optional
    except ImportError:
        return None
    bars = {}

    def update(stage, done, total, documents):
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, unit="B", unit_scale=True, desc=stage)
        bar.update(done - bar.n)
        if total and done >= total:
            bar.close()
    return update


# ---- Documents ----

def _is_path(x) -> bool:
    return isinstance(x, os.PathLike)


def _documents(docs, text_field: str, id_field: str):
    """(ids, texts) from strings, (id, text) pairs or dicts; ids default to the position."""
    ids, texts = [], []
    for i, d in enumerate(docs):
        if isinstance(d, str):
            ids.append(str(i))
            texts.append(d)
        elif isinstance(d, bytes):
            ids.append(str(i))
            texts.append(d.decode("utf-8", errors="replace"))
        elif isinstance(d, Mapping):
            if text_field not in d:
                raise FormatError(f'record {i + 1} has no text field "{text_field}"; choose another with text_field',
                                  "<memory>", i + 1, "text_field")
            text = d[text_field]
            if not isinstance(text, str):
                raise FormatError(f'record {i + 1}: text field "{text_field}" is {type(text).__name__}, not a string',
                                  "<memory>", i + 1, "text_field")
            ids.append(str(d.get(id_field, i)))
            texts.append(text)
        elif isinstance(d, tuple) and len(d) == 2:
            ids.append(str(d[0]))
            texts.append(d[1] if isinstance(d[1], str) else str(d[1]))
        else:
            raise UsageError(f"document {i + 1} is a {type(d).__name__}; give str, (id, text) or a dict with a text field")
    return ids, texts


def _run(docs, pairs_mode: bool, args, progress):
    cb = _progress_of(progress)
    if isinstance(docs, (str, bytes)) and not isinstance(docs, str):
        raise UsageError("give documents as an iterable of str, (id, text) or dicts, or file paths")
    if _is_path(docs):
        return _native.run_paths([os.fspath(docs)], pairs_mode, args, cb)
    if isinstance(docs, str):
        raise UsageError("a single str is ambiguous: pass [text] for one document, or pathlib.Path(path) for a file")
    docs = list(docs) if not isinstance(docs, list) else docs
    if docs and all(_is_path(d) for d in docs):
        return _native.run_paths([os.fspath(d) for d in docs], pairs_mode, args, cb)
    ids, texts = _documents(docs, args.text_field, args.id_field)
    return _native.run_documents(ids, texts, pairs_mode, args, cb)


# ---- Results ----

class Result:
    """What a run found. Documents are numbered in input order; ``ids`` names them.

    Attributes:
        ids: the document ids, in input order.
        stats: counts and times of the run (documents, candidates, verified, removed, spec...).
    """

    def __init__(self, raw: dict):
        self.ids: list = raw["ids"]
        self.stats: dict = raw["stats"]
        self._a, self._b, self._sim = raw["a"], raw["b"], raw["similarity"]
        self.keeper: np.ndarray = raw["keeper"]
        self._removed_sim = raw["removed_similarity"]
        self._clusters = raw["clusters"]

    @property
    def pair_indices(self):
        """(a, b, similarity) as numpy arrays: document numbers a < b, in (a, b) order."""
        return self._a, self._b, self._sim

    @property
    def pairs(self) -> list:
        """[(id1, id2, similarity), ...] in (id1, id2) input order (pairs() only)."""
        ids = self.ids
        return [(ids[a], ids[b], float(s)) for a, b, s in zip(self._a.tolist(), self._b.tolist(), self._sim.tolist())]

    @property
    def keep_mask(self) -> np.ndarray:
        """True for the documents to keep (for ``dataset.filter`` or boolean indexing)."""
        return self.keeper == np.arange(len(self.keeper), dtype=self.keeper.dtype)

    @property
    def removed(self) -> list:
        """[(removed_id, kept_id, similarity), ...] in input order."""
        gone = np.nonzero(~self.keep_mask)[0].tolist()
        return [(self.ids[d], self.ids[int(self.keeper[d])], float(s)) for d, s in zip(gone, self._removed_sim.tolist())]

    @property
    def clusters(self) -> list:
        """The clusters of two or more documents, as lists of ids in input order, numbered in the
        order of their first document."""
        return [[self.ids[d] for d in members.tolist()] for members in self._clusters]

    def pairs_tsv(self) -> str:
        """The pairs as ``neardup pairs`` writes them: id1 TAB id2 TAB similarity (6 decimals)."""
        ids = self.ids
        return "".join(f"{ids[a]}\t{ids[b]}\t{s:.6f}\n"
                       for a, b, s in zip(self._a.tolist(), self._b.tolist(), self._sim.tolist()))

    def removed_tsv(self) -> str:
        """As ``neardup dedup --removed`` writes it."""
        return "".join(f"{r}\t{k}\t{s:.6f}\n" for r, k, s in self.removed)

    def clusters_tsv(self) -> str:
        """As ``neardup dedup --clusters`` writes it."""
        kept = set(self.ids[d] for d in np.nonzero(self.keep_mask)[0].tolist())
        return "".join(f"{c}\t{i}\t{'kept' if i in kept else 'removed'}\n"
                       for c, members in enumerate(self.clusters) for i in members)

    def __repr__(self) -> str:
        s = self.stats
        return (f"<neardup.Result: {s['documents']} documents, {len(self._a)} pairs, "
                f"{s['clusters']} clusters, {s['removed']} removed [{s['spec']}]>")


# ---- The entry points ----

def pairs(docs, threshold: float = 0.8, method: str = "oph", shingle: int = 5, *, chars: Optional[int] = None,
          num_perm: int = 128, sketch_size: int = 128, hamming: int = 3, bands: Optional[int] = None,
          rows: Optional[int] = None, verify: str = "exact", seed: Optional[int] = None,
          spec_text: Optional[str] = None, top: int = 0, threads: int = 0, text_field: str = "text",
          id_field: str = "id", on_error: str = "fail", on_duplicate_id: str = "error",
          memory_map: bool = True, temp_dir: Optional[str] = None,
          progress: Union[None, bool, Progress] = None) -> Result:
    """Every pair of near-duplicate documents with its similarity (exact Jaccard of the word
    ``shingle``-grams by default). ``spec_text`` (e.g. "words:5 oph:128 verify:0.8") replaces the
    sketch options; ``top`` with method="bottomk" gives the most similar pairs instead."""
    s = spec_text or spec(threshold, method, shingle, chars, num_perm, sketch_size, hamming, bands, rows, verify, seed)
    args = _run_args(s, threads, text_field, id_field, on_error, on_duplicate_id, top=top, memory_map=memory_map,
                     temp_dir=temp_dir)
    return Result(_run(docs, True, args, progress))


def dedup(docs, threshold: float = 0.8, method: str = "oph", shingle: int = 5, *, chars: Optional[int] = None,
          num_perm: int = 128, sketch_size: int = 128, hamming: int = 3, bands: Optional[int] = None,
          rows: Optional[int] = None, verify: str = "exact", seed: Optional[int] = None,
          spec_text: Optional[str] = None, keep: str = "first", cluster: str = "components", threads: int = 0,
          text_field: str = "text", id_field: str = "id", on_error: str = "fail", on_duplicate_id: str = "error",
          memory_map: bool = True, temp_dir: Optional[str] = None,
          progress: Union[None, bool, Progress] = None) -> Result:
    """Clusters near-duplicates and chooses one document to keep in each: ``keep`` is "first",
    "longest", or the name of a JSONL field (file inputs; the largest value wins);
    ``cluster="leader"`` guarantees that every removed document is at least ``threshold``-similar
    to the one kept in its place."""
    s = spec_text or spec(threshold, method, shingle, chars, num_perm, sketch_size, hamming, bands, rows, verify, seed)
    args = _run_args(s, threads, text_field, id_field, on_error, on_duplicate_id, keep=keep, cluster=cluster,
                     memory_map=memory_map, temp_dir=temp_dir)
    return Result(_run(docs, False, args, progress))


def sketch(texts: Iterable[str], method: str = "oph", num_perm: int = 128, shingle: int = 5, *,
           chars: Optional[int] = None, sketch_size: int = 128, hamming: int = 3, seed: Optional[int] = None,
           threads: int = 0):
    """The sketch of each text: a (n, num_perm) uint32 array for oph and minhash (no copy), a uint64
    array of SimHashes for simhash, a list of uint32 arrays for bottomk."""
    texts = list(texts)
    s = spec(0.8, method, shingle, chars, num_perm, sketch_size, hamming, None, None, "exact", seed)
    return _native.sketch(texts, s, int(threads))


class Index:
    """The persistent index: add documents, ask which indexed ones a new text nearly copies.

        with neardup.Index.create("pages.ndx", threshold=0.8) as idx:
            idx.add("u1", text)          # saved when the block ends without an error
        with neardup.Index.open("pages.ndx") as idx:
            idx.query(new_text)          # [(id, similarity), ...], best first

    An index opened with ``update=True`` (or created) holds the file's update lock until it is
    closed, so writers in several processes take turns; queries may run from many threads.
    """

    def __init__(self, native, updatable: bool):
        self._native = native
        self._updatable = updatable

    @classmethod
    def create(cls, path, threshold: float = 0.8, method: str = "oph", shingle: int = 5, *,
               chars: Optional[int] = None, num_perm: int = 128, bands: Optional[int] = None,
               rows: Optional[int] = None, verify: str = "exact", seed: Optional[int] = None) -> "Index":
        """A new empty index at ``path`` (replacing any file there), open for update."""
        if method not in ("oph", "minhash"):
            raise UsageError(f'an index uses method="oph" or "minhash", not "{method}"', option="method")
        s = spec(threshold, method, shingle, chars, num_perm, 128, 3, bands, rows, verify, seed)
        return cls(_native.Index.create(os.fspath(path), s), True)

    @classmethod
    def open(cls, path, update: bool = False) -> "Index":
        return cls(_native.Index.open(os.fspath(path), bool(update)), bool(update))

    def add(self, id: str, text: str) -> None:
        self._native.add(str(id), text)

    def add_many(self, docs: Iterable) -> None:
        ids, texts = _documents(docs, "text", "id")
        for i, t in zip(ids, texts):
            self._native.add(i, t)

    def query(self, text: str, threshold: Optional[float] = None) -> list:
        return self._native.query(text, threshold)

    def remove(self, ids: Iterable[str]) -> int:
        return self._native.remove([str(i) for i in ids])

    def save(self) -> None:
        self._native.save()

    def stats(self) -> dict:
        return self._native.stats()

    def close(self) -> None:
        self._native.close()

    def __len__(self) -> int:
        return self._native.size()

    def __contains__(self, id) -> bool:
        return self._native.contains(str(id))

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None and self._updatable:
                self.save()
        finally:
            self.close()
