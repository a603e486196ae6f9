#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --device cuda decodes bit-exactly like the CPU where a GPU is usable; elsewhere it exits 77
# with the reason and writes nothing. --device auto always succeeds.
make_pnm img.ppm 67 45 3 11
dlprep -q l3 encode img.ppm -o img.l3
set +e
dlprep -q l3 decode img.l3 -o gpu.ppm --device cuda 2>err.txt
rc=$?
set -e
if [ $rc = 0 ]; then
  cmp img.ppm gpu.ppm || fail "cuda decode differs from the original"
else
  [ $rc = 77 ] || fail "--device cuda without a GPU: exit $rc, expected 77"
  grep -q "^dlprep: error: l3 decode: .*cuda" err.txt || fail "no reason given: $(cat err.txt)"
  [ ! -e gpu.ppm ] || fail "output written although the device is unavailable"
fi
dlprep -q l3 decode img.l3 -o auto.ppm --device auto
cmp img.ppm auto.ppm || fail "--device auto decode differs"
DLPREP_FORCE_DEVICE=cpu dlprep -q l3 decode img.l3 -o forced.ppm --device cuda
cmp img.ppm forced.ppm || fail "DLPREP_FORCE_DEVICE=cpu decode differs"
# DLPREP_FORCE_DEVICE=cuda overrides the default --device cpu too: a CI job that forces the GPU
# never gets a CPU decode instead.
set +e
DLPREP_FORCE_DEVICE=cuda dlprep -v l3 decode img.l3 -o forced-cuda.ppm 2>err.txt
rc=$?
set -e
if [ $rc = 0 ]; then
  cmp img.ppm forced-cuda.ppm || fail "forced cuda decode differs from the original"
  grep -q 'decoding on the cuda device' err.txt || fail "forced cuda decoded elsewhere: $(cat err.txt)"
else
  [ $rc = 77 ] || fail "DLPREP_FORCE_DEVICE=cuda without a GPU: exit $rc, expected 77"
fi
expect_exit 2 env DLPREP_FORCE_DEVICE=gpu dlprep -q l3 decode img.l3 -o bad.ppm
