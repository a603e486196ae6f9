#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# An image at the top of a class-folder tree is a sample of class "" (WebDataset's
# to_tuple("png", "cls") fails on it, ImageFolder leaves it out): converted, with a warning that
# names it; a flat folder of images (no classes at all) gets none, unless its tar shards get no
# .cls member at all.
mkdir -p src/cat src/dog flat
make_pnm src/cat/a.ppm 8 8 3 1
make_pnm src/dog/b.ppm 8 8 3 2
make_pnm src/stray.ppm 8 8 3 3
cp src/cat/a.ppm src/dog/b.ppm flat/
dlprep convert-dataset src ds --to png 2>err.txt
grep -q "warning: convert-dataset: 1 sample has no class beside 2 that have one (the first: stray)" \
  err.txt || fail "$(cat err.txt)"
grep -q '"label": *""' ds/samples.jsonl || fail "$(cat ds/samples.jsonl)"
dlprep convert-dataset flat fds --to png 2>err.txt
! grep -q warning err.txt || fail "$(cat err.txt)"
dlprep convert-dataset flat tds --to png --shards 1MB 2>err.txt
grep -q "warning: convert-dataset: no sample has a class (SRC has no class folders): the shards hold no .cls members" \
  err.txt || fail "$(cat err.txt)"
