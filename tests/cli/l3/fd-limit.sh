#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# Under a small `ulimit -n`, -j64 works on as many files at a time as the limit allows, with a
# warning, instead of failing files with "Too many open files" (a different set every run).
make_pnm a.ppm 16 16 3 1
mkdir d
for i in $(seq 100 299); do ln a.ppm d/$i.ppm; done
ulimit -n 16
for run in 1 2 3; do
  rm -rf out
  dlprep -j64 l3 encode d -o out 2>err || fail "l3 encode: exit $?: $(cat err)"
  grep -q '^dlprep: warning: l3 encode: -j64: working on [0-9]* files at a time, as many as the limit of 16 open files (ulimit -n) allows$' err ||
    fail "l3 encode: $(cat err)"
  grep -q '^l3 encode: 200 files encoded' err || fail "l3 encode: $(cat err)"
  dlprep -j64 l3 verify out >ok.txt 2>err || fail "l3 verify: exit $?: $(cat err)"
  grep -q '^dlprep: warning: l3 verify: -j64: working on' err || fail "l3 verify: $(cat err)"
  [ "$(wc -l <ok.txt)" = 200 ] || fail "l3 verify: $(wc -l <ok.txt) files ok"
done
# Within the limit: no warning, the summary line alone.
dlprep -j2 l3 verify out >/dev/null 2>err
[ "$(cat err)" = "l3 verify: 200 files: 200 ok, 0 differ, 0 failed" ] || fail "-j2: $(cat err)"
