#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A -j far above what the open-file limit allows: convert-dataset uses fewer threads, says so,
# and converts every sample (the tar layout failed a random sample with "cannot open: Too many
# open files").
mkdir -p src/a
make_pnm src/a/img0.ppm 8 8 3 1
/usr/bin/python3 -c 'import os
for i in range(1, 600): os.link("src/a/img0.ppm", "src/a/img%d.ppm" % i)'
# The limited shell is redirected from outside: it could not open the files itself.
for layout in files tar; do
  opts=""
  [ $layout = tar ] && opts="--shards 64KiB"
  (
    ulimit -n 16
    exec dlprep -j64 convert-dataset src $layout --to l3 $opts
  ) >out.txt 2>err.txt || fail "$layout: $(head -5 err.txt)"
  grep -qx "dlprep: warning: convert-dataset: -j64 would open more files than the limit allows (ulimit -n): using [0-9]* threads\?" err.txt ||
    fail "$layout: no warning: $(cat err.txt)"
  grep -q "^convert-dataset: 600 samples in $layout: 600 converted" err.txt ||
    fail "$layout: $(cat err.txt)"
  dlprep -q dataset verify $layout || fail "$layout: verify failed"
done
