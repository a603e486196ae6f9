#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --progress always draws \r lines on stderr even when it is not a terminal; never and -q draw none.
make_pnm a.ppm 64 64 3 1
mkdir in
for i in 1 2 3 4 5; do cp a.ppm in/$i.ppm; done
dlprep --progress always l3 encode in -o out1 2>err.txt
grep -q 'l3 encode: 5/5 files' err.txt || fail "no final progress count: $(cat -A err.txt)"
dlprep --progress never l3 encode in -o out2 2>err.txt
! grep -q '/5 files' err.txt || fail "progress printed with --progress never"
grep -q '^l3 encode: 5 files encoded' err.txt || fail "no summary: $(cat err.txt)"
dlprep -q --progress always l3 encode in -o out3 2>err.txt
[ ! -s err.txt ] || fail "-q printed: $(cat err.txt)"
# convert-dataset counts files while it walks SRC, then the samples it converts, with their own
# rate: the log's final line is the conversion's.
dlprep --progress always convert-dataset in ds --to l3 2>err.txt
grep -q 'convert-dataset: 5/5 samples (100%), [0-9.]* samples/s' err.txt ||
  fail "no final conversion count: $(cat -A err.txt)"
