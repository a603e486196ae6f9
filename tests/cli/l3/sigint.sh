#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# SIGINT in the middle of a long encode: exit 130 and no temporary file left behind, with one
# worker and with several.
make_pnm big.ppm 400 300 3 1
mkdir many
for i in $(seq 1 300); do ln big.ppm many/img$i.ppm; done
for jobs in 1 2; do
  dlprep -q -j$jobs l3 encode many -o out$jobs &
  pid=$!
  # Signal once the first outputs exist, so that it lands mid-run.
  for _ in $(seq 1 1000); do
    [ "$(ls out$jobs 2>/dev/null | wc -l)" -ge 2 ] && break
    sleep 0.01
  done
  kill -INT $pid
  code=0
  wait $pid || code=$?
  [ "$code" = 130 ] || fail "-j$jobs: exit $code, expected 130"
  [ "$(ls out$jobs | wc -l)" -lt 300 ] || fail "-j$jobs: the encode finished before the signal"
  no_temp_files out$jobs
done
# The same through timeout(1), as a Makefile or CI job would be stopped.
code=0
timeout --preserve-status -s INT 0.3 dlprep -q -j1 l3 encode many -o out3 || code=$?
if [ "$code" != 0 ]; then
  [ "$code" = 130 ] || fail "timeout: exit $code, expected 130"
fi
no_temp_files out3
# With --json, standard output still holds one document: the error, exit status 130.
dlprep -q --json -j1 l3 encode many -o out4 >out4.json 2>out4.err &
pid=$!
for _ in $(seq 1 1000); do
  [ "$(ls out4 2>/dev/null | wc -l)" -ge 2 ] && break
  sleep 0.01
done
kill -INT $pid
code=0
wait $pid || code=$?
[ "$code" = 130 ] || fail "--json: exit $code, expected 130"
/usr/bin/python3 -c '
import json, sys
d = json.load(open("out4.json"))
assert d["schema"] == "dlprep.error/1" and d["exit_status"] == 130, d
assert d["error"] == "interrupted by SIGINT" and d["command"] == "l3 encode", d
' || fail "--json: not the interrupt's error document: $(cat out4.json)"
grep -qx 'dlprep: error: l3 encode: interrupted by SIGINT' out4.err || fail "stderr: $(cat out4.err)"
