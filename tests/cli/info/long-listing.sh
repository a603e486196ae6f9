#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# A listing longer than the table's lookahead (1000 rows) is printed as it is read: the columns
# are sized on the first 1000 rows, and a longer name after them widens its own row only.
make_pnm a.ppm 4 4 3 1
mkdir d
for i in $(seq 1000 2099); do ln a.ppm d/$i.ppm; done
ln a.ppm d/9-a-much-longer-name-than-the-others.ppm
dlprep info d >out
[ "$(wc -l <out)" = 1102 ] || fail "$(wc -l <out) lines"
[ "$(sed -n 2p out)" = 'd/1000.ppm  ppm         4       4         3     59' ] ||
  fail "first row: '$(sed -n 2p out)'"
[ "$(sed -n 1101p out)" = 'd/2099.ppm  ppm         4       4         3     59' ] ||
  fail "row 1100: '$(sed -n 1101p out)'"
[ "$(sed -n 1102p out)" = 'd/9-a-much-longer-name-than-the-others.ppm  ppm         4       4         3     59' ] ||
  fail "the long name's row: '$(sed -n 1102p out)'"
