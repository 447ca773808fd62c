#!/usr/bin/env bash
# Runs one CLI case: tests/cli/cases/NAME.sh runs in a fresh temporary directory with $NEARDUP
# (the binary) and $DATA (tests/data); its stdout and stderr, with run times replaced by "T s",
# must equal tests/cli/cases/NAME.expected exactly. Set NEARDUP_UPDATE_GOLDEN=1 to rewrite it.
set -u
bin=$1
case_file=$2
expected=${case_file%.sh}.expected
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'chmod -R u+rwx "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
actual=$(NEARDUP="$bin" DATA="$here/../data" bash "$case_file" 2>&1 | sed -E 's/[0-9]+\.[0-9]+ s \[/T s [/')
if [ "${NEARDUP_UPDATE_GOLDEN:-0}" = 1 ]; then
  printf '%s\n' "$actual" > "$expected"
  echo "updated $expected"
  exit 0
fi
if ! diff -u "$expected" <(printf '%s\n' "$actual"); then
  echo "FAIL: output of $(basename "$case_file") differs from $(basename "$expected") (diff above)"
  exit 1
fi
echo "ok: $(basename "$case_file")"
