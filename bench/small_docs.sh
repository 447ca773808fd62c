#!/usr/bin/env bash
# Many small documents from a JSONL corpus: each text cut into pieces of LINES lines (default 6),
# each piece a document `{"id": "<id>#<n>", "text": ...}`, up to DOCS documents (default 1M).
# For measuring memory per document, where per-document state dominates.
#
#   bench/small_docs.sh CORPUS.jsonl OUT.jsonl [LINES] [DOCS]
set -euo pipefail
python3 - "$1" "$2" "${3:-6}" "${4:-1000000}" <<'PY'
import json, sys
src, dst, lines, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
n = 0
with open(src) as f, open(dst, "w") as out:
    for rec in map(json.loads, f):
        t = rec["text"].split("\n")
        for k in range(0, len(t), lines):
            piece = "\n".join(t[k:k + lines]).strip()
            if not piece:
                continue
            out.write(json.dumps({"id": f"{rec['id']}#{k // lines}", "text": piece}) + "\n")
            n += 1
            if n >= limit:
                sys.exit(0)
PY
