#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 4 4 3 1
expect_exit 2 dlprep l3 encode a.ppm
expect_exit 2 dlprep l3 encode -o out.l3
expect_exit 2 dlprep l3 encode a.ppm -o out.l3 --patch 7
expect_exit 2 dlprep l3 encode a.ppm -o out.l3 --patch 512
expect_exit 2 dlprep l3 encode a.ppm -o out.l3 --patch big
cp a.ppm b.ppm
expect_exit 2 dlprep l3 encode a.ppm b.ppm -o -
[ ! -e out.l3 ] || fail "output written despite a usage error"
