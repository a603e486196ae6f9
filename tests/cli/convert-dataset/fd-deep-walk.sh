#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Directory walks hold one descriptor at a time, whatever the depth. They held one a level: a
# rerun on a tree 9 folders deep failed at -j1 with "ds/data: cannot read directory: Too many
# open files" under a limit the clamp of -j allowed, and a tree deeper than the limit could not
# be walked at all.
sanitized_build && skip "a sanitizer build needs descriptors of its own"
deep=src/$(printf 'd%d/' $(seq 9))
mkdir -p "$deep"
make_pnm "$deep/img0.ppm" 8 8 3 1
for i in $(seq 1 49); do ln "$deep/img0.ppm" "$deep/img$i.ppm"; done
dlprep -q convert-dataset src ds --to l3
with_room_for 8 dlprep -j1 convert-dataset src ds --to l3 >out.txt 2>err.txt ||
  fail "rerun: $(head -5 err.txt)"
grep -q "^convert-dataset: 50 samples in ds: 0 converted, 50 up to date" err.txt ||
  fail "rerun: $(cat err.txt)"
with_room_for 8 dlprep -j1 dataset verify ds >out.txt 2>err.txt || fail "verify: $(head -5 err.txt)"
grep -q "^ds: ok, 50 samples" out.txt || fail "verify: $(cat out.txt)"

# 300 folders deep, the limit 40 above what is open: l3 encode mirrors the tree, convert-dataset
# converts it and reruns, and verify finds a file the index does not name at the bottom.
deep=tree/$(printf 'd/%.0s' $(seq 300))
mkdir -p "$deep"
make_pnm "$deep/a.ppm" 8 8 3 2
make_pnm tree/b.ppm 8 8 3 3
with_room_for 40 dlprep -j1 l3 encode tree -o enc >out.txt 2>err.txt ||
  fail "l3 encode: $(head -5 err.txt)"
[ -f "enc/${deep#tree/}a.l3" ] && [ -f enc/b.l3 ] || fail "l3 encode: $(cat err.txt)"
for run in first rerun; do
  with_room_for 40 dlprep -j1 convert-dataset tree deepds --to l3 >out.txt 2>err.txt ||
    fail "convert-dataset $run: $(head -5 err.txt)"
done
grep -q "^convert-dataset: 2 samples in deepds: 0 converted, 2 up to date" err.txt ||
  fail "rerun: $(cat err.txt)"
cp "deepds/data/${deep#tree/}a.l3" "deepds/data/${deep#tree/}orphan.l3"
code=0
with_room_for 40 dlprep -j1 dataset verify deepds >out.txt 2>err.txt || code=$?
[ $code = 3 ] && grep -q "orphan.l3: in data/ but not in the index" err.txt ||
  fail "verify: exit $code: $(head -5 err.txt)"
