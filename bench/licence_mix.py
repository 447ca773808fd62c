#!/usr/bin/env python3
"""Dense licence boilerplate: JSONL records of Debian copyright files as a distribution's archive
holds them, tens of thousands of packages whose copyright files repeat a few hundred licence texts
with their own names, years and upstream paragraphs. Built from the copyright files this machine
has (/usr/share/doc/*/copyright), each record a variant of one of them:

    bench/licence_mix.py OUT.jsonl [--records 31000] [--seed 7] [--append FILE.jsonl ...]

A variant keeps its base file's licence texts and changes what differs between packages: the
package and upstream names, the years, the people and their e-mail addresses; with probability 0.3
it drops one paragraph (a licence or a Files: stanza) and with 0.3 it takes one paragraph of
another base file. So records of one base are near-copies of each other (J mostly 0.6-0.95 at
5-word shingles), and records whose bases share a licence text are near-copies where that text
dominates. --append copies the records of other JSONL files first (the kernel tree, say), as a
mixed corpus holds them. Prints the counts on stderr.
"""
import argparse
import glob
import json
import random
import re
import sys

YEARS = re.compile(r"\b(19[89]\d|20[0-2]\d)\b")
EMAIL = re.compile(r"<[^<>@\s]+@[^<>\s]+>")


def bases(max_bytes):
    out = []
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if 200 <= len(text) <= max_bytes:  # the few multi-MB ones (boost) would dominate the bytes
            out.append((path.split("/")[4], text))
    return out


SYLLABLES = ["ka", "lo", "mi", "ren", "tus", "ve", "dor", "an", "shi", "bel", "ko", "ra", "nis", "tha", "gu", "wen"]


def word(rng):
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def upstream_stanza(rng, lines):
    """A Files: stanza of the package's own: its paths and copyright holders, `lines` of them."""
    out = ["Files: %s/%s.c" % (word(rng), word(rng))]
    for _ in range(lines):
        out.append("Copyright: %d %s %s <%s@%s.org>" % (rng.randint(1990, 2025), word(rng).title(), word(rng).title(),
                                                        word(rng), word(rng)))
    return "\n".join(out)


def variant(rng, name, text, other, n, unique_lines):
    pkg = "pkg%05d" % n
    text = text.replace(name, pkg)
    text = YEARS.sub(lambda _: str(rng.randint(1990, 2025)), text)
    text = EMAIL.sub(lambda _: "<dev%d@example%d.org>" % (rng.randint(0, 99999), rng.randint(0, 99)), text)
    paras = text.split("\n\n")
    if len(paras) > 2 and rng.random() < 0.3:
        del paras[rng.randrange(1, len(paras))]
    if rng.random() < 0.3:
        extra = other.split("\n\n")
        paras.insert(rng.randrange(1, len(paras) + 1), rng.choice(extra))
    if unique_lines > 0:
        lines = 1
        while rng.random() > 1.0 / unique_lines:
            lines += 1
        paras.insert(min(1, len(paras)), upstream_stanza(rng, lines))
    return "\n\n".join(paras)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--records", type=int, default=31_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--append", nargs="*", default=[])
    ap.add_argument("--max-base-bytes", type=int, default=200_000)
    ap.add_argument("--zipf", type=float, default=0.0)
    ap.add_argument("--unique-lines", type=float, default=0.0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    base = bases(args.max_base_bytes)
    if not base:
        sys.exit("licence_mix.py: no /usr/share/doc/*/copyright files on this machine")
    appended = written = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for path in args.append:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    out.write(line)
                    appended += 1
        # Zipf weights over the bases in a shuffled order: a few licence notices (the packaging
        # template's GPL paragraph, say) behind thousands of packages, most behind a few.
        order = list(range(len(base)))
        rng.shuffle(order)
        weights = [0.0] * len(base)
        for rank, i in enumerate(order):
            weights[i] = 1.0 / (rank + 1) ** args.zipf
        for n in range(args.records):
            name, text = rng.choices(base, weights)[0]
            _, other = rng.choice(base)
            rec = {"id": "copyright/%05d/%s" % (n, name), "text": variant(rng, name, text, other, n, args.unique_lines)}
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            written += 1
    print("licence_mix.py: %d records appended, %d copyright variants of %d base files" % (appended, written, len(base)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
