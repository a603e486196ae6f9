#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# SIGINT mid-run: exit 130, no temporary file, nothing half-written in the index; the rerun
# finishes the job and the result verifies.
make_pnm big.ppm 600 400 3 1
mkdir -p src/a
for i in $(seq 1 120); do ln big.ppm src/a/img$i.ppm; done
code=0
timeout --preserve-status -s INT 0.5 dlprep -q -j1 convert-dataset src ds --to png:1 || code=$?
[ "$code" = 130 ] || fail "exit $code, expected 130 (did it finish before the signal?)"
no_temp_files ds
[ ! -e ds/dataset.json ] || json_check 'd["complete"] == False' <ds/dataset.json
dlprep convert-dataset src ds --to png:1 2>err.txt
grep -q '120 samples in ds' err.txt || fail "rerun: $(cat err.txt)"
grep -q ' up to date' err.txt || fail "rerun: $(cat err.txt)"
dlprep -q dataset verify ds

# With --json and the reader of standard output gone (a consumer that stopped), the document
# that the interrupt writes meets a broken pipe; the reason still goes to standard error.
dlprep --json -q -j1 convert-dataset src ds2 --to png:1 > >(true) 2>err2.txt &
interrupt_when $! '[ "$(ls ds2/data/a 2>/dev/null | wc -l)" -ge 2 ]'
[ "$code" = 130 ] || fail "--json, stdout gone: exit $code"
grep -qx 'dlprep: error: convert-dataset: interrupted by SIGINT' err2.txt ||
  fail "--json, stdout gone: the reason is missing: [$(cat err2.txt)]"
no_temp_files ds2
