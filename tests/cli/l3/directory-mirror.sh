#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Trees are walked recursively; images (by magic bytes, whatever their names) are mirrored.
mkdir -p tree/sub/deep
make_pnm tree/top.ppm 12 9 3 1
make_pnm tree/sub/gray.pgm 7 5 1 2
make_pnm tree/sub/deep/noext 9 9 3 3
echo 'readme' >tree/README.txt
dlprep -q l3 encode tree -o out
[ "$(cd out && find . -type f | sort | tr '\n' ' ')" = "./sub/deep/noext.l3 ./sub/gray.l3 ./top.l3 " ] || fail "unexpected outputs: $(cd out && find . -type f)"
dlprep -q l3 decode out -o back/ --to ppm
[ "$(cd back && find . -type f | sort | tr '\n' ' ')" = "./sub/deep/noext.ppm ./sub/gray.pgm ./top.ppm " ] || fail "unexpected decoded: $(cd back && find . -type f)"
cmp tree/sub/gray.pgm back/sub/gray.pgm
cmp tree/sub/deep/noext back/sub/deep/noext.ppm
dlprep l3 verify out >verify.txt
[ "$(wc -l <verify.txt)" = 3 ] || fail "verify listed $(wc -l <verify.txt) files"
# A file where the output folder (or one above it) must be: one usage error, not one per file.
: >a-file
for out in a-file a-file/ a-file/sub/; do
  expect_exit 2 dlprep -q l3 encode tree -o "$out" 2>err
  [ "$(wc -l <err)" -le 2 ] || fail "-o $out: $(cat err)"
  grep -q -- "-o $out: \(a-file \)\?exists and is not a directory, where 3 outputs would go" err ||
    fail "-o $out: $(cat err)"
done
expect_exit 2 dlprep -q l3 encode tree/top.ppm -o a-file/top.l3 2>err  # one output file
grep -q -- "-o a-file/top.l3: a-file exists and is not a directory$" err || fail "$(cat err)"
ln -s nowhere dangling  # no folder can be made through a link to nothing
expect_exit 2 dlprep -q l3 encode tree -o dangling 2>err
grep -q -- "-o dangling: exists and is not a directory" err || fail "$(cat err)"
# A folder named like a file is made, with a warning (once: not on a rerun).
dlprep l3 encode tree -o out.l3 2>err
grep -q "warning: .*out.l3: a folder of that name, named like a file, receives the 3 outputs" err ||
  fail "no warning: $(cat err)"
[ -f out.l3/top.l3 ] || fail "out.l3/ not written"
dlprep l3 encode tree -o out.l3 2>err
! grep -q "named like a file" err || fail "warned again: $(cat err)"
