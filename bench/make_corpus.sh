#!/usr/bin/env bash
# Assembles a real benchmark corpus from a Debian package: the Linux kernel sources
# (linux-source-6.1), one JSONL record {"id": path, "text": file} per source or documentation
# file, until TARGET_MB megabytes of text. Kernel trees are full of real near-duplicates
# (license headers, drivers cloned from drivers, per-architecture copies).
#
#   bench/make_corpus.sh [TARGET_MB] [OUT]      (defaults: 200, bench/data/kernel-200mb.jsonl)
#   bench/make_corpus.sh --long [OUT]           (default: bench/data/kernel-long-1000.jsonl)
#   bench/make_corpus.sh --translations [OUT]   (default: bench/data/kernel-translations.jsonl)
#   bench/make_corpus.sh --crowded [OUT]        (default: bench/data/crowded.jsonl)
#
# --crowded assembles the crowded mix of the speed benchmarks: the whole tree (generated headers
# of up to 25 MB included), every /usr/share/doc/*/copyright file of the installed Debian packages
# (licence boilerplate: large clusters of near-copies) and every manual page under /usr/share/man
# (groff source, decompressed: per-command and per-language variants), in that order.
#
# Files over MAX_FILE_MB (environment, default 2) are left out: the tree holds generated register
# headers of up to 20 MB. MAX_FILE_MB=4 bench/make_corpus.sh 1100 bench/data/kernel-1gb.jsonl
# gives 1,004 MB of text, the >= 1 GB corpus of the end-to-end benchmark.
#
# --translations takes every file of Documentation/translations instead (368 documents, 3.2 MB:
# Chinese, Japanese, Korean, Italian), the non-English text of the text-path benchmarks.
#
# --long assembles 1,000 long documents instead (the long-document benchmark: 16 KB to 540 KB each,
# log-uniform sizes): consecutive files of one directory walk concatenated, like long articles.
#
# Needs apt access (the .deb is downloaded with apt-get download, ~140 MB) and xz, python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--long" ]; then
  mode=long target_mb=0 out=${2:-$here/data/kernel-long-1000.jsonl}
elif [ "${1:-}" = "--crowded" ]; then
  mode=crowded target_mb=0 out=${2:-$here/data/crowded.jsonl}
elif [ "${1:-}" = "--translations" ]; then
  mode=translations target_mb=0 out=${2:-$here/data/kernel-translations.jsonl}
else
  mode=files target_mb=${1:-200} out=${2:-$here/data/kernel-${target_mb}mb.jsonl}
fi
out=$(realpath -m "$out")  # the script changes directory below
work=$here/data/linux-source
mkdir -p "$work"
cd "$work"
if ! ls linux-source-6.1_*.deb >/dev/null 2>&1; then
  apt-get download linux-source-6.1
fi
if [ ! -d tree ]; then
  mkdir -p tree
  dpkg-deb --fsys-tarfile linux-source-6.1_*.deb | tar -x -C . --wildcards './usr/src/linux-source-6.1.tar.xz'
  tar -xJf usr/src/linux-source-6.1.tar.xz -C tree
  rm -rf usr
fi
python3 - "$work/tree" "$out" "$target_mb" "$mode" "${MAX_FILE_MB:-2}" <<'PY'
import json, os, random, sys
root, out, target, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1_000_000, sys.argv[4]
max_chars = int(float(sys.argv[5]) * 1_000_000)
exts = {'.c', '.h', '.rst', '.txt', '.S', '.dts', '.dtsi', '.py', '.sh', '.yaml'}
paths = []
for d, dirs, files in os.walk(root):
    dirs.sort()
    for f in sorted(files):
        p = os.path.join(d, f)
        if mode == 'translations' and '/Documentation/translations/' in p:
            paths.append(p)
        elif mode != 'translations' and os.path.splitext(f)[1] in exts:
            paths.append(p)
if mode in ('translations', 'crowded'):
    target = float('inf')
if mode == 'crowded':
    import glob, gzip
    max_chars = 25_000_000
    extra = sorted(glob.glob('/usr/share/doc/*/copyright'))
    for d, dirs, files in os.walk('/usr/share/man'):
        dirs.sort()
        extra += [os.path.join(d, f) for f in sorted(files)]
total = n = 0
tmp = out + '.tmp'
if mode == 'long':
    rng = random.Random(2026)
    with open(tmp, 'w', encoding='utf-8') as w:
        i = 0
        while n < 1000 and i < len(paths):
            want = int(16_000 * (540 / 16) ** rng.random())
            parts, size, first = [], 0, paths[i]
            while size < want and i < len(paths):
                with open(paths[i], 'rb') as f:
                    t = f.read().decode('utf-8', errors='replace')
                i += 1
                parts.append(t)
                size += len(t.encode('utf-8'))
            text = '\n'.join(parts)
            w.write(json.dumps({'id': os.path.relpath(first, root), 'text': text}, ensure_ascii=False) + '\n')
            total += len(text.encode('utf-8')); n += 1
    os.replace(tmp, out)
    print(f'{out}: {n} documents, {total / 1e6:.1f} MB of text')
    sys.exit(0)
with open(tmp, 'w', encoding='utf-8') as w:
    for p in paths:
        with open(p, 'rb') as f:
            text = f.read().decode('utf-8', errors='replace')
        if not text.strip() or len(text) > max_chars:
            continue
        w.write(json.dumps({'id': os.path.relpath(p, root), 'text': text}, ensure_ascii=False) + '\n')
        total += len(text.encode('utf-8')); n += 1
        if total >= target:
            break
    if mode == 'crowded':
        for p in extra:
            try:
                with (gzip.open(p, 'rb') if p.endswith('.gz') else open(p, 'rb')) as f:
                    text = f.read().decode('utf-8', errors='replace')
            except (OSError, EOFError):
                continue  # a dangling link, a damaged page
            if not text.strip():
                continue
            w.write(json.dumps({'id': p, 'text': text}, ensure_ascii=False) + '\n')
            total += len(text.encode('utf-8')); n += 1
os.replace(tmp, out)
print(f'{out}: {n} documents, {total / 1e6:.1f} MB of text')
PY
