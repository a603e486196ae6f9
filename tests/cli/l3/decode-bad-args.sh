#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

expect_exit 2 dlprep l3 decode x.l3 -o x.gif --to gif
expect_exit 2 dlprep l3 decode
expect_exit 2 dlprep l3
expect_exit 2 dlprep l3 decompress x.l3
