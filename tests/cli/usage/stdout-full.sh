#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A write error on stdout (a full disk) is exit 1, never 0.
[ -c /dev/full ] || skip "no /dev/full character device here"
make_pnm a.ppm 5 3 3 1
expect_exit 1 dlprep info a.ppm >/dev/full
expect_exit 1 dlprep --help >/dev/full
