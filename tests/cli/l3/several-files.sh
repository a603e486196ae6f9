#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Several inputs go into a directory; one that exists or ends in '/' is a directory even for one.
make_pnm a.ppm 8 8 3 1
make_pnm b.pgm 8 8 1 2
dlprep -q l3 encode a.ppm b.pgm -o out
[ -f out/a.l3 ] && [ -f out/b.l3 ] || fail "missing outputs"
dlprep -q l3 encode a.ppm -o one/
[ -f one/a.l3 ] || fail "trailing / not a directory"
mkdir existing
dlprep -q l3 encode b.pgm -o existing
[ -f existing/b.l3 ] || fail "existing directory not used"
# Two inputs that would write the same output: the second is an error, the first is written.
mkdir x
cp a.ppm x/a.ppm
expect_exit 1 dlprep -q l3 encode a.ppm x/a.ppm -o clash 2>err.txt
grep -q 'x/a.ppm: output clash/a.l3 is also written from a.ppm' err.txt || fail "$(cat err.txt)"
# The same when decoding, whichever thread starts first.
dlprep -q l3 encode a.ppm -o a.l3
dlprep -q l3 encode x/a.ppm -o x/a.l3
for _ in 1 2 3; do
  rm -rf clashd
  expect_exit 1 dlprep -q -j2 l3 decode a.l3 x/a.l3 --to png -o clashd 2>err.txt
  grep -q 'x/a.l3: output clashd/a.png is also written from a.l3' err.txt || fail "$(cat err.txt)"
done
# To ppm/pgm the extension follows the channels: the same name in 3 channels twice clashes (the
# later input, in input order), a gray one beside it (.pgm) does not.
mkdir g
make_pnm g/a.pgm 8 8 1 3
dlprep -q l3 encode g/a.pgm -o g/a.l3
for _ in 1 2 3; do
  rm -rf clashp
  expect_exit 1 dlprep -q -j2 l3 decode x/a.l3 g/a.l3 a.l3 --to ppm -o clashp 2>err.txt
  grep -q '^dlprep: error: l3 decode: a.l3: output clashp/a.ppm is also written from x/a.l3' err.txt ||
    fail "$(cat err.txt)"
  [ "$(grep -c 'also written' err.txt)" = 1 ] || fail "$(cat err.txt)"
  [ -f clashp/a.ppm ] && [ -f clashp/a.pgm ] || fail "$(ls clashp)"
done
# A FIFO, whose channels are known only once read, is the one in error beside a file of its
# output, even when named first and whatever -j (it used to be whichever was converted first).
mkdir f
mkfifo f/a.l3
for jobs in 1 2; do
  rm -rf clashf
  (sleep 0.3; cat g/a.l3 > f/a.l3) &
  expect_exit 1 dlprep -q -j$jobs l3 decode f/a.l3 g/a.l3 --to ppm -o clashf 2>err.txt
  wait
  grep -q '^dlprep: error: l3 decode: f/a.l3: output clashf/a.pgm is also written from g/a.l3' \
    err.txt || fail "-j$jobs: $(cat err.txt)"
done
