#!/usr/bin/env bash
# Assembles a real benchmark corpus from a Debian package: the Linux kernel sources
# (linux-source-6.1), one JSONL record {"id": path, "text": file} per source or documentation
# file, until TARGET_MB megabytes of text. Kernel trees are full of real near-duplicates
# (license headers, drivers cloned from drivers, per-architecture copies).
#
#   bench/make_corpus.sh [TARGET_MB] [OUT]      (defaults: 200, bench/data/kernel-200mb.jsonl)
#
# Needs apt access (the .deb is downloaded with apt-get download, ~140 MB) and xz, python3.
set -euo pipefail
target_mb=${1:-200}
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/data/kernel-${target_mb}mb.jsonl}
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
python3 - "$work/tree" "$out" "$target_mb" <<'PY'
import json, os, sys
root, out, target = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1_000_000
exts = {'.c', '.h', '.rst', '.txt', '.S', '.dts', '.dtsi', '.py', '.sh', '.yaml'}
paths = []
for d, dirs, files in os.walk(root):
    dirs.sort()
    for f in sorted(files):
        if os.path.splitext(f)[1] in exts:
            paths.append(os.path.join(d, f))
total = n = 0
tmp = out + '.tmp'
with open(tmp, 'w', encoding='utf-8') as w:
    for p in paths:
        with open(p, 'rb') as f:
            text = f.read().decode('utf-8', errors='replace')
        if not text.strip() or len(text) > 2_000_000:
            continue
        w.write(json.dumps({'id': os.path.relpath(p, root), 'text': text}, ensure_ascii=False) + '\n')
        total += len(text.encode('utf-8')); n += 1
        if total >= target:
            break
os.replace(tmp, out)
print(f'{out}: {n} documents, {total / 1e6:.1f} MB of text')
PY
