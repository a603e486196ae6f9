#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Output that cannot be written is exit 1, and a device is written into, never replaced.
[ -c /dev/full ] || skip "no /dev/full character device here"
make_pnm a.ppm 10 10 3 1
dlprep -q l3 encode a.ppm -o a.l3
expect_exit 1 dlprep -q l3 decode a.l3 -o - --to ppm >/dev/full 2>/dev/null
expect_exit 1 dlprep -q l3 encode a.ppm -o - >/dev/full 2>/dev/null
expect_exit 1 dlprep -q l3 decode a.l3 -o /dev/full --to ppm 2>/dev/null
[ -c /dev/full ] || fail "/dev/full was replaced"
dlprep -q l3 decode a.l3 -o /dev/null --to ppm
[ -c /dev/null ] || fail "/dev/null was replaced"
