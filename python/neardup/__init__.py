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

import numbers
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Callable, Optional, Union

from .errors import Error, FormatError, InternalError, IoError, UsageError

try:
    import numpy as np

    from . import _native
except ImportError as _e:  # another interpreter than the one the module was built for
    try:
        from ._build import INTERPRETER, VERSION
    except ImportError:
        raise _e from None
    if os.path.realpath(sys.executable) != os.path.realpath(INTERPRETER):
        raise ImportError(f"neardup was built for {INTERPRETER} (Python {VERSION}), and this is {sys.executable} "
                          f"(Python {sys.version_info[0]}.{sys.version_info[1]}), which cannot load it ({_e}); run "
                          f"{INTERPRETER}, or build for this one with cmake -DPython3_EXECUTABLE={sys.executable}") from _e
    raise

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
    _check_number("threshold", threshold)
    _check_number("shingle", shingle)
    _check_number("chars", chars, none_ok=True)
    _check_number("num_perm", num_perm)
    _check_number("sketch_size", sketch_size)
    _check_number("hamming", hamming)
    _check_number("bands", bands, none_ok=True)
    _check_number("rows", rows, none_ok=True)
    if seed is not None and (not _is_int(seed) or not 0 <= seed < 2 ** 64):
        raise UsageError(f"seed={seed!r} is not a whole number in [0, 2**64)", option="seed")
    _check_choice("method", method, ("oph", "minhash", "bottomk", "simhash", "exact"))
    _check_choice("verify", verify, ("exact", "estimate"))
    threshold = float(threshold)
    tokens = [f"chars:{chars}" if chars is not None else f"words:{shingle}"]
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


# ---- Checking arguments ----
#
# The ranges of the numeric options are the CLI's (neardup/option_rules.h, through the module),
# so a value is refused alike by both, in the same words; the types are Python's to check.

_RULES = {r[0]: r for r in _native.number_rules()}


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _check_number(name: str, value, none_ok: bool = False) -> None:
    if value is None and none_ok:
        return
    _, integer, in_range = _RULES[name]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or (integer and not _is_int(value)):
        kind = "a whole number" if integer else "a number"
        raise UsageError(f"{name}={value!r} is a {type(value).__name__}; give {kind} {in_range}", option=name)
    problem = _native.rule_problem(name, float(value))
    if problem:
        raise UsageError(f"{name}={value!r} {problem}", option=name)


def _check_choice(name: str, value, choices) -> None:
    if not isinstance(value, str) or value not in choices:
        raise UsageError(f"{name}={value!r} is not one of {', '.join(choices)}", option=name)


def _check_str(name: str, value) -> None:
    if not isinstance(value, str) or not value:
        raise UsageError(f"{name}={value!r}: give the name of a field, a non-empty str", option=name)


def _run_args(spec_text: str, threads: int, text_field: str, id_field: str, on_error: str,
              on_duplicate_id: str, keep: str = "first", cluster: str = "components", top: int = 0,
              memory_map: bool = True, temp_dir: Optional[str] = None, measure: str = "jaccard",
              memory_limit: Optional[int] = None):
    _check_choice("on_error", on_error, ("fail", "skip"))
    _check_choice("measure", measure, ("jaccard", "containment"))
    _check_choice("on_duplicate_id", on_duplicate_id, ("error", "keep"))
    _check_number("threads", threads)
    _check_number("top", top)
    _check_str("text_field", text_field)
    _check_str("id_field", id_field)
    if not isinstance(keep, str) or not isinstance(cluster, str):
        bad = "keep" if not isinstance(keep, str) else "cluster"
        raise UsageError(f"{bad}={locals()[bad]!r} is not a str", option=bad)
    if temp_dir is not None and not isinstance(temp_dir, (str, os.PathLike)):
        raise UsageError(f"temp_dir={temp_dir!r}: give a folder's path", option="temp_dir")
    if spec_text is not None and not isinstance(spec_text, str):
        raise UsageError(f"spec_text={spec_text!r}: give a spec such as \"words:5 oph:128 verify:0.8\"", option="spec_text")
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
    a.measure = measure
    a.memory_map = bool(memory_map)
    a.temp_dir = "" if temp_dir is None else str(temp_dir)
    if memory_limit is not None:
        _check_number("memory_limit", memory_limit)
        a.memory_limit = int(memory_limit)
    return a


def _progress_of(progress) -> Optional[Progress]:
    """A callback(stage, bytes_done, bytes_total, documents), or a tqdm bar for progress=True."""
    if progress is None or progress is False:
        return None
    if callable(progress):
        return progress
    if progress is not True:
        raise UsageError(f"progress={progress!r}: give True (a tqdm bar), False, or a callable(stage, bytes_done, "
                         "bytes_total, documents)", option="progress")
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

def _path_of(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError(f"path={path!r}: give a file's path (str or pathlib.Path)", option="path")
    return os.fspath(path)


def _is_path(x) -> bool:
    return isinstance(x, os.PathLike)


def _id_of(value, i: int, what: str) -> str:
    """An id as the CLI takes one from JSONL: a str, or an int written in decimal."""
    if isinstance(value, str):
        return value
    if _is_int(value):
        return str(int(value))
    raise FormatError(f"record {i + 1}: the {what} is {type(value).__name__}, not a str or int; give every document "
                      "an id of one line of text", "<memory>", i + 1, "id_field" if what != "id" else "")


def _text_of(value, i: int, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(f"record {i + 1}: the {what} is bytes that are not UTF-8 ({e.reason} at byte {e.start}); "
                              "decode it first", "<memory>", i + 1) from None
    raise FormatError(f"record {i + 1}: the {what} is {type(value).__name__}, not a str; give a text (or skip the "
                      "record)", "<memory>", i + 1, "text_field" if what != "text" else "")


def _documents(docs, text_field: str, id_field: str):
    """(ids, texts) from strings, (id, text) pairs or dicts; ids default to the position. Types are
    checked here, as the CLI checks a JSONL record's (a text is a str, an id a str or a number);
    TAB and line breaks in ids are refused by the engine, as in every input."""
    ids, texts = [], []
    for i, d in enumerate(docs):
        if isinstance(d, (str, bytes)):
            ids.append(str(i))
            texts.append(_text_of(d, i, "text"))
        elif isinstance(d, Mapping):
            if text_field not in d:
                raise FormatError(f'record {i + 1} has no text field "{text_field}"; choose another with text_field',
                                  "<memory>", i + 1, "text_field")
            texts.append(_text_of(d[text_field], i, f'text field "{text_field}"'))
            ids.append(_id_of(d[id_field], i, f'id field "{id_field}"') if id_field in d else str(i))
        elif isinstance(d, tuple) and len(d) == 2:
            ids.append(_id_of(d[0], i, "id"))
            texts.append(_text_of(d[1], i, "text"))
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

def pairs(docs, threshold: float = 0.8, method: Optional[str] = None, shingle: int = 5, *,
          chars: Optional[int] = None, num_perm: int = 128, sketch_size: int = 128, hamming: int = 3,
          bands: Optional[int] = None, rows: Optional[int] = None, verify: str = "exact", seed: Optional[int] = None,
          spec_text: Optional[str] = None, top: int = 0, measure: str = "jaccard", threads: int = 0,
          text_field: str = "text", id_field: str = "id", on_error: str = "fail", on_duplicate_id: str = "error",
          memory_map: bool = True, temp_dir: Optional[str] = None, memory_limit: Optional[int] = None,
          progress: Union[None, bool, Progress] = None) -> Result:
    """Every pair of near-duplicate documents with its similarity (exact Jaccard of the word
    ``shingle``-grams by default). ``spec_text`` (e.g. "words:5 oph:128 verify:0.8") replaces the
    sketch options; ``top`` with method="bottomk" gives the most similar pairs instead.
    measure="containment" gives the pairs whose smaller document shares at least ``threshold`` of
    its shingles with the larger, scored by that share (exact: method "exact", the default then;
    method defaults to "oph" otherwise)."""
    if method is None:
        method = "exact" if measure == "containment" else "oph"
    s = spec_text or spec(threshold, method, shingle, chars, num_perm, sketch_size, hamming, bands, rows, verify, seed)
    args = _run_args(s, threads, text_field, id_field, on_error, on_duplicate_id, top=top, memory_map=memory_map,
                     temp_dir=temp_dir, measure=measure, memory_limit=memory_limit)
    return Result(_run(docs, True, args, progress))


def dedup(docs, threshold: float = 0.8, method: str = "oph", shingle: int = 5, *, chars: Optional[int] = None,
          num_perm: int = 128, sketch_size: int = 128, hamming: int = 3, bands: Optional[int] = None,
          rows: Optional[int] = None, verify: str = "exact", seed: Optional[int] = None,
          spec_text: Optional[str] = None, keep: str = "first", cluster: str = "components", threads: int = 0,
          text_field: str = "text", id_field: str = "id", on_error: str = "fail", on_duplicate_id: str = "error",
          memory_map: bool = True, temp_dir: Optional[str] = None, memory_limit: Optional[int] = None,
          progress: Union[None, bool, Progress] = None) -> Result:
    """Clusters near-duplicates and chooses one document to keep in each: ``keep`` is "first",
    "longest", or the name of a JSONL field (file inputs; the largest value wins);
    ``cluster="leader"`` guarantees that every removed document is at least ``threshold``-similar
    to the one kept in its place."""
    s = spec_text or spec(threshold, method, shingle, chars, num_perm, sketch_size, hamming, bands, rows, verify, seed)
    args = _run_args(s, threads, text_field, id_field, on_error, on_duplicate_id, keep=keep, cluster=cluster,
                     memory_map=memory_map, temp_dir=temp_dir, memory_limit=memory_limit)
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
               rows: Optional[int] = None, verify: str = "exact", seed: Optional[int] = None,
               force: bool = False, wait: bool = False) -> "Index":
        """A new empty index at ``path``, open for update. A file already there is refused unless
        ``force=True`` (as ``neardup index create --force``). The update lock is taken at once
        (IoError naming its holder), or with ``wait=True`` when the holder is done."""
        if method not in ("oph", "minhash"):
            raise UsageError(f'an index uses method="oph" or "minhash", not {method!r}', option="method")
        p = _path_of(path)
        if not force and os.path.lexists(p):
            raise UsageError(f"{p}: already exists; pass force=True to replace it with an empty index", p, 0, "force")
        s = spec(threshold, method, shingle, chars, num_perm, 128, 3, bands, rows, verify, seed)
        return cls(_native.Index.create(p, s, bool(wait)), True)

    @classmethod
    def open(cls, path, update: bool = False, wait: bool = False) -> "Index":
        """Opens the index at ``path``: to query it, or with ``update=True`` to change it too, which
        takes its update lock at once (IoError naming the holder: another process, or another
        Index of this one) or, with ``wait=True``, when the holder is done (Ctrl-C stops waiting)."""
        return cls(_native.Index.open(_path_of(path), bool(update), bool(wait)), bool(update))

    def add(self, id: str, text: str) -> None:
        """Adds a document; its id is a non-empty str of one line."""
        if not isinstance(id, str):
            raise UsageError(f"id={id!r} is a {type(id).__name__}; index ids are str (str(id) if numbers are meant)",
                             option="id")
        self._native.add(id, _text_of(text, 0, "text") if not isinstance(text, str) else text)

    def add_many(self, docs: Iterable) -> None:
        """Adds (id, text) pairs or dicts with "id" and "text", in order."""
        for i, d in enumerate(docs):
            if isinstance(d, Mapping):
                if "id" not in d or "text" not in d:
                    raise FormatError(f'record {i + 1} needs "id" and "text"', "<memory>", i + 1)
                d = (d["id"], d["text"])
            if not (isinstance(d, tuple) and len(d) == 2):
                raise UsageError(f"document {i + 1} is a {type(d).__name__}; give (id, text) or a dict with id and text")
            if not isinstance(d[0], str):
                raise FormatError(f"record {i + 1}: the id is {type(d[0]).__name__}; index ids are str", "<memory>", i + 1)
            self._native.add(d[0], _text_of(d[1], i, "text"))

    def query(self, text: str, threshold: Optional[float] = None, *, containment: Optional[float] = None,
              top: Optional[int] = None) -> list:
        """[(id, similarity), ...], best first: the indexed near-duplicates of ``text`` (Jaccard at
        ``threshold``, the index's by default); or, exactly, the indexed documents holding at least
        a share ``containment`` of its shingles (scored by that share), or the ``top`` indexed
        documents of highest Jaccard. Give one of the three."""
        if (threshold is not None) + (containment is not None) + (top is not None) > 1:
            raise UsageError("threshold, containment and top exclude each other; give one", option="top")
        text = _text_of(text, 0, "text")
        if containment is not None:
            _check_number("containment", containment)
            return self._native.query(text, "containing", float(containment))
        if top is not None:
            if not _is_int(top) or not 1 <= top <= 1 << 20:
                raise UsageError(f"top={top!r}: give a whole number from 1 to {1 << 20}", option="top")
            return self._native.query(text, "top", None, int(top))
        _check_number("threshold", threshold, none_ok=True)
        return self._native.query(text, "similar", None if threshold is None else float(threshold))

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

    @property
    def closed(self) -> bool:
        return _native.is_closed(self._native)

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.closed:  # closed inside the block: nothing left to save
            return
        try:
            if exc_type is None and self._updatable:
                self.save()
        finally:
            self.close()
