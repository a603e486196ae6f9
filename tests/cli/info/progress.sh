#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# info has progress like the other commands: the walk's "scanning" count, then done/total; on a
# log (not a terminal) each ends with its final count. -q and --progress never print none.
make_pnm a.ppm 4 4 3 1
mkdir d
for i in 1 2 3; do ln a.ppm d/$i.ppm; done
dlprep --progress always info d >out 2>log
tr -d '\r' <log >err
grep -qx 'info (scanning): 3 files, [0-9.]* files/s' err || fail "no scanning count: $(cat err)"
grep -qx 'info: 3/3 files (100%), [0-9.]* files/s' err || fail "no progress: $(cat err)"
[ "$(wc -l <out)" = 4 ] || fail "listing: $(cat out)"
dlprep -q --progress always info d >/dev/null 2>err
[ ! -s err ] || fail "-q: $(cat err)"
dlprep --progress never info d >/dev/null 2>err
[ ! -s err ] || fail "--progress never: $(cat err)"
