#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm rgb.ppm 13 11 3 1
make_pnm gray.pgm 13 11 1 2
dlprep -q l3 encode rgb.ppm gray.pgm -o l3/
for to in png ppm bmp raw; do
  dlprep -q l3 decode l3/rgb.l3 -o rgb-out/ --to $to
done
[ "$(ls rgb-out | sort | tr '\n' ' ')" = 'rgb.bmp rgb.png rgb.ppm rgb.raw ' ] || fail "$(ls rgb-out)"
[ "$(wc -c <rgb-out/rgb.raw)" = $((13 * 11 * 3)) ] || fail "raw size"
cmp rgb.ppm rgb-out/rgb.ppm
for f in rgb-out/rgb.png rgb-out/rgb.bmp; do dlprep l3 verify l3/rgb.l3 --against $f >/dev/null; done
dlprep -q l3 decode l3/gray.l3 -o gray-out/ --to pgm
cmp gray.pgm gray-out/gray.pgm
# npy: numpy.load gives the HWC pixels, gray with its channel axis; a rerun is up to date.
dlprep -q l3 decode l3/rgb.l3 l3/gray.l3 -o npy/ --to npy
dlprep l3 decode l3/rgb.l3 l3/gray.l3 -o npy/ --to npy 2>err-npy.txt
grep -q "skipped 2 up to date" err-npy.txt || fail "npy rerun: $(cat err-npy.txt)"
/usr/bin/python3 - <<'PY' || fail "npy arrays differ from the images"
import numpy as np
def pnm(path):
    data = open(path, "rb").read()
    fields = data.split(maxsplit=4)
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(fields[4], np.uint8).reshape(h, w, -1)
for name, source in (("rgb", "rgb.ppm"), ("gray", "gray.pgm")):
    a = np.load("npy/%s.npy" % name)
    assert a.dtype == np.uint8 and a.flags["C_CONTIGUOUS"], a.dtype
    assert (a == pnm(source)).all() and a.shape == pnm(source).shape, name
PY
# The format follows a single output's extension when --to is not given.
dlprep -q l3 decode l3/rgb.l3 -o by-ext.bmp
dlprep --json info by-ext.bmp | json_check 'd["files"][0]["format"] == "bmp"'
# pgm holds gray only: a clear error, no output.
expect_exit 1 dlprep -q l3 decode l3/rgb.l3 -o rgb.pgm --to pgm 2>err.txt
grep -q 'l3/rgb.l3: pgm holds 1-channel' err.txt || fail "$(cat err.txt)"
[ ! -e rgb.pgm ] || fail "output left"

# A single output named for a format decode does not write (x.jpg) is PNG, with a warning;
# the extension is read in any case (X.BMP is BMP).
dlprep l3 decode l3/rgb.l3 -o x.jpg 2>err-jpg.txt
grep -q "x.jpg: written as png" err-jpg.txt || fail "no warning: $(cat err-jpg.txt)"
dlprep --json info x.jpg | json_check 'd["files"][0]["format"] == "png"'
dlprep l3 decode l3/rgb.l3 -o X.BMP 2>err-bmp.txt
! grep -q "written as" err-bmp.txt || fail "$(cat err-bmp.txt)"
dlprep --json info X.BMP | json_check 'd["files"][0]["format"] == "bmp"'
