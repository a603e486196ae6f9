#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# SIGINT in the middle of a long encode: exit 130, no temporary file left behind, and the reason
# on stderr, with one worker and with several; with --json, standard output still holds one
# document: the report streamed so far, ended with the error and exit status 130.
make_pnm big.ppm 400 300 3 1
mkdir many
for i in $(seq 1 300); do ln big.ppm many/img$i.ppm; done
n=0
for opts in -j1 -j2 "-j2 --json"; do
  n=$((n + 1))
  dlprep -q $opts l3 encode many -o out$n >out$n.txt 2>err$n.txt &
  # Signal once the first outputs exist, so that it lands mid-run.
  interrupt_when $! '[ "$(ls out$n 2>/dev/null | wc -l)" -ge 2 ]'
  [ "$code" = 130 ] || fail "$opts: exit $code, expected 130"
  [ "$(ls out$n | wc -l)" -lt 300 ] || fail "$opts: the encode finished before the signal"
  no_temp_files out$n
  grep -qx 'dlprep: error: l3 encode: interrupted by SIGINT' err$n.txt || fail "$opts: $(cat err$n.txt)"
  case $opts in
    *--json)
      /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "dlprep.l3-encode/1" and d["exit_status"] == 130, d
assert d["error"] == "interrupted by SIGINT" and isinstance(d["files"], list), d
' out$n.txt || fail "--json: not ended by the interrupt: $(cat out$n.txt)" ;;
    *) [ ! -s out$n.txt ] || fail "$opts: stdout: $(cat out$n.txt)" ;;
  esac
done
# The same through timeout(1), as a Makefile or CI job would be stopped.
code=0
timeout --preserve-status -s INT 0.3 dlprep -q -j1 l3 encode many -o out4 || code=$?
if [ "$code" != 0 ]; then
  [ "$code" = 130 ] || fail "timeout: exit $code, expected 130"
fi
no_temp_files out4
# A listing to a file, interrupted once its first block is out: it ends with a whole row.
dlprep -q l3 encode big.ppm -o big.l3
mkdir links
/usr/bin/python3 -c 'import os
for i in range(20000): os.link("big.l3", "links/f%05d.l3" % i)'
dlprep -j1 l3 verify links >rows.txt 2>rows.err &
interrupt_when $! '[ -s rows.txt ]'
[ "$code" = 130 ] || fail "l3 verify: exit $code, expected 130"
[ "$(tail -c 1 rows.txt | od -An -c | tr -d ' ')" = '\n' ] || fail "l3 verify: a cut row: $(tail -c 80 rows.txt)"
grep -vq '^links/f[0-9]*\.l3: ok, 400x300x3, every patch checksum matches$' rows.txt &&
  fail "l3 verify: $(grep -v ': ok' rows.txt | head -3)"
[ "$(wc -l <rows.txt)" -lt 20000 ] || fail "l3 verify finished before the signal"
