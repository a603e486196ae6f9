#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# l3 verify DIR --against PATH: a PATH that does not exist is named as such (exit 1, as for any
# missing input), not reported as a count of FILE's l3 files; a file where DIR's originals are
# expected is a usage error that says so.
mkdir orig
make_pnm orig/a.ppm 6 4 3 1
make_pnm orig/b.ppm 5 7 3 2
dlprep -q l3 encode orig/ -o enc/
expect_exit 1 dlprep l3 verify enc/ --against orgi/ 2>err.txt
[ "$(cat err.txt)" = "dlprep: error: l3 verify: orgi/: cannot open: No such file or directory" ] ||
  fail "missing originals: $(cat err.txt)"
expect_exit 1 dlprep l3 verify enc/ --against orig/a.ppm/ 2>err.txt
grep -qx "dlprep: error: l3 verify: orig/a.ppm/: cannot open: Not a directory" err.txt ||
  fail "a file as a folder: $(cat err.txt)"
expect_exit 2 dlprep l3 verify enc/ --against orig/a.ppm 2>err.txt
grep -qx "dlprep: error: l3 verify: --against orig/a.ppm: FILE enc/ is a directory, so --against must be the directory of its originals, not a file" err.txt ||
  fail "a directory against a file: $(cat err.txt)"
# The pairs that work still do.
dlprep l3 verify enc/ --against orig/ >ok.txt
[ "$(wc -l <ok.txt)" = 2 ] || fail "$(cat ok.txt)"
dlprep l3 verify enc/a.l3 --against orig/a.ppm >ok.txt
grep -q '^enc/a.l3: ok' ok.txt || fail "$(cat ok.txt)"
