#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Usage errors: one line naming the problem plus the hint, exit 2, nothing written.
mkdir src
make_pnm src/a.ppm 8 8 3 1
expect_exit 2 dlprep convert-dataset src
expect_exit 2 dlprep convert-dataset src out
expect_exit 2 dlprep convert-dataset src out --to l3 --mix l3:1
expect_exit 2 dlprep convert-dataset src out -o out2 --to l3
expect_exit 2 dlprep convert-dataset src out --to gif
expect_exit 2 dlprep convert-dataset src out --to png:12
expect_exit 2 dlprep convert-dataset src out --mix l3:0.5,l3:0.5
expect_exit 2 dlprep convert-dataset src out --mix l3
expect_exit 2 dlprep convert-dataset src out --to l3 --shard 2/2
expect_exit 2 dlprep convert-dataset src out --to l3 --on-error maybe
expect_exit 2 dlprep convert-dataset src out --to l3 --max-errors 3
expect_exit 2 dlprep convert-dataset src out --to l3 --seed -1
expect_exit 2 dlprep convert-dataset src out --to l3 --on-error skip --max-errors -1
[ ! -e out ] || fail "output written despite a usage error"
# A SRC without any image is a wrong path, surely: refused, and the DST it made goes again.
mkdir -p empty/c
echo 'not an image' > empty/c/notes.txt
expect_exit 2 dlprep convert-dataset empty out/deeper --to l3
[ ! -e out ] || fail "output written for a SRC without images"
