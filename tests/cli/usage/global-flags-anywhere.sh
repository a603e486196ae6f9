#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Global flags work before and after the command.
make_pnm a.ppm 5 3 3 1
dlprep --json info a.ppm | json_check 'd["schema"] == "dlprep.info/1"'
dlprep info a.ppm --json | json_check 'd["schema"] == "dlprep.info/1"'
dlprep l3 encode a.ppm -o a.l3 -q -j 2 --progress never 2>err.txt
[ ! -s err.txt ] || fail "-q printed: $(cat err.txt)"
dlprep -q -j1 l3 decode a.l3 -o b.ppm
cmp a.ppm b.ppm || fail "round trip differs"
