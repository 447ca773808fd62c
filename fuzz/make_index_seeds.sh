#!/usr/bin/env bash
# Writes the seed indexes of fuzz_index (fuzz/corpus/index/) with NEARDUP: six short documents
# under a minhash spec with exact verification and one with estimates. Run it again when the
# index format changes, so that the fuzzer starts from files this version reads.
#   fuzz/make_index_seeds.sh build/neardup
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/six.jsonl" <<'DOCS'
{"id": "a", "text": "the quick brown fox jumps over the lazy dog again"}
{"id": "b", "text": "the quick brown fox jumps over the lazy dog once more"}
{"id": "c", "text": "a completely different sentence about index files"}
{"id": "d", "text": "near duplicate detection with minhash and lsh bands"}
{"id": "e", "text": "near duplicate detection with minhash and lsh bands too"}
{"id": "f", "text": "short"}
DOCS
seed_index() {  # name, spec
  rm -f "$work/$1"
  "$bin" index create "$work/$1" --spec "$2" --quiet
  "$bin" index add "$work/$1" "$work/six.jsonl" --quiet
  cp "$work/$1" "$here/corpus/index/$1"
}
seed_index six-docs.idx "words:5 minhash:16 lsh:4x4 verify:0.8"
seed_index estimate.idx "words:5 minhash:8 lsh:2x4 estimate:0.8"
ls -l "$here/corpus/index"
