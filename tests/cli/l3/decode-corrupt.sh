#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Truncated, bit-flipped, empty and non-L3 files: exit 1, the file named, no output left.
make_pnm a.ppm 40 40 3 1
dlprep -q l3 encode a.ppm -o a.l3
head -c 30 a.l3 >truncated-header.l3
head -c $(( $(wc -c <a.l3) - 10 )) a.l3 >truncated-data.l3
cp a.l3 flipped.l3 && flip_byte flipped.l3 -20
: >empty.l3
cp a.ppm not-l3.l3
for f in truncated-header truncated-data flipped empty not-l3; do
  expect_exit 1 dlprep -q l3 decode $f.l3 -o out/$f.png 2>err.txt
  grep -q "^dlprep: error: l3 decode: $f.l3: " err.txt || fail "$f: message does not name the file: $(cat err.txt)"
  [ ! -e out/$f.png ] || fail "$f: output left behind"
  expect_exit 1 dlprep l3 verify $f.l3 2>/dev/null >/dev/null
done
no_temp_files out
no_temp_files .

# In a directory walk, a file named *.l3 whose magic is damaged fails by name: it does not
# vanish from the run (verify would pass without it).
mkdir -p tree
cp a.l3 tree/good.l3
cp a.l3 tree/bad-magic.l3 && flip_byte tree/bad-magic.l3 0
echo notes >tree/readme.txt
expect_exit 1 dlprep l3 verify tree 2>err-tree.txt >/dev/null
grep -q "tree/bad-magic.l3: not an l3 file" err-tree.txt || fail "verify: $(cat err-tree.txt)"
expect_exit 1 dlprep -q l3 decode tree -o tree-out/ 2>err-tree2.txt
grep -q "tree/bad-magic.l3: not an l3 file" err-tree2.txt || fail "decode: $(cat err-tree2.txt)"
[ -e tree-out/good.png ] && [ ! -e tree-out/bad-magic.png ] && [ ! -e tree-out/readme.png ] || fail "$(ls tree-out)"
