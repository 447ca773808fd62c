#!/usr/bin/env bash
# Makes docs/report.png, the README's picture of a report: `neardup dedup` on the sample corpus,
# named by paths relative to the repository (the page shows the command and the inputs), shot
# with headless Chromium at 1000 x 2400.
#   tools/report_png.sh [BUILD_DIR]     from the repository's root
set -euo pipefail
build=${1:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/neardup" dedup data/sample/mmds-articles-2500.jsonl.zst -k 3 -t 0.5 -o "$build/report-sample.kept.jsonl" --report report.html -q
mv report.html "$out/report.html"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$out/profile" --hide-scrollbars \
  --window-size=1000,2400 --screenshot="$out/report.png" "file://$out/report.html" 2> /dev/null
mv "$out/report.png" docs/report.png
echo "docs/report.png made"
