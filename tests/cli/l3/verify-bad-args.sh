#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 4 4 3 1
dlprep -q l3 encode a.ppm -o a.l3
expect_exit 2 dlprep l3 verify
cp a.l3 b.l3
expect_exit 2 dlprep l3 verify a.l3 b.l3 --against a.ppm
expect_exit 1 dlprep l3 verify a.l3 --against missing.ppm
