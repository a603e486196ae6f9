#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A tree 1100 folders deep (an output path of ~2.2 kB, within PATH_MAX): its samples convert,
# verify, and merge (libstdc++'s create_directories refused more than 1000 missing levels with
# "File name too long").
deep=src/cls/$(printf 'd/%.0s' $(seq 1100))
mkdir -p "$deep"
make_pnm "$deep/a.ppm" 8 8 3 1
make_pnm src/cls/b.ppm 8 8 3 2
dlprep -q convert-dataset src ds --to l3 2>err.txt || fail "$(cat err.txt)"
dlprep -q dataset verify ds || fail "verify failed"
for k in 0 1; do dlprep -q convert-dataset src part$k --to png --shard $k/2 || fail "part $k"; done
dlprep -q dataset merge part0 part1 -o merged 2>err.txt || fail "merge: $(cat err.txt)"
dlprep -q dataset verify merged || fail "verify of the merge failed"
[ "$(wc -l <merged/samples.jsonl)" = 2 ] || fail "$(cat merged/samples.jsonl)"
