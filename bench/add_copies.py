#!/usr/bin/env python3
"""Copies of a JSONL corpus's records added after them, as web crawls and training corpora hold
exact copies: each record is followed by a copy of itself (the same text, a new id) with
probability FRACTION. The texts are re-encoded by json.dumps (non-ASCII as \\u escapes), so a
copy's text is the same but often spelled differently from the original's.
    bench/add_copies.py IN.jsonl OUT.jsonl [FRACTION=0.45] [SEED=7]"""
import json
import random
import sys

src, dst = sys.argv[1], sys.argv[2]
fraction = float(sys.argv[3]) if len(sys.argv) > 3 else 0.45
random.seed(int(sys.argv[4]) if len(sys.argv) > 4 else 7)
with open(src, "rb") as inp, open(dst, "wb") as out:
    for i, line in enumerate(inp):
        out.write(line if line.endswith(b"\n") else line + b"\n")
        if random.random() < fraction:
            rec = json.loads(line)
            rec["id"] = "%s#copy%d" % (rec["id"], i)
            out.write(json.dumps(rec).encode() + b"\n")
