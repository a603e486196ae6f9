#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# 16-bit samples are read as 8 bits (dlprep(1)): info shows the depth, l3 encode warns, and
# l3 verify --against the 16-bit original reports the lost bits as a difference (exit 3).
/usr/bin/python3 - <<'PY'
w, h = 6, 4
px = bytearray()
for i in range(w * h):
    px += ((i * 2731 + 17) % 65536).to_bytes(2, "big")
open("wide.pgm", "wb").write(b"P5\n%d %d\n65535\n" % (w, h) + bytes(px))
PY
make_pnm narrow.pgm 6 4 1 1
dlprep info wide.pgm narrow.pgm > info.txt
grep -q "wide.pgm .*16-bit samples (read as 8)" info.txt || fail "info: $(cat info.txt)"
dlprep --json info wide.pgm | json_check 'd["files"][0]["bits_per_sample"] == 16'
dlprep l3 encode wide.pgm narrow.pgm -o out 2> err.txt
grep -q "wide.pgm: 16-bit samples, read as 8 bits: the L3 file is not lossless of it" err.txt ||
  fail "no warning: $(cat err.txt)"
! grep -q "narrow.pgm: .*bit samples" err.txt || fail "a warning for the 8-bit file: $(cat err.txt)"
code=0
dlprep -q l3 verify out/wide.l3 --against wide.pgm 2> err.txt || code=$?
[ "$code" = 3 ] || fail "verify against the 16-bit original exited $code, expected 3"
grep -q "holds 8-bit samples where wide.pgm has 16-bit ones" err.txt || fail "message: $(cat err.txt)"
dlprep -q l3 verify out/narrow.l3 --against narrow.pgm
