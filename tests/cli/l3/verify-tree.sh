#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# l3 verify OUT/ --against IN/: each L3 file of the tree l3 encode mirrored against its original
# (found by its path without the extension), and every original must have its L3 file.
mkdir -p in/sub
make_pnm in/top.ppm 12 9 3 1
make_pnm in/sub/gray.pgm 7 5 1 2
make_pnm in/sub/noext 9 9 3 3
dlprep -q l3 encode in -o out
dlprep l3 verify out --against in >ok.txt 2>err.txt
grep -qx 'l3 verify: 3 files: 3 ok, 0 differ, 0 failed; 0 originals without an l3 file' err.txt ||
  fail "summary: $(cat err.txt)"
[ "$(wc -l <ok.txt)" = 3 ] || fail "verify listed $(wc -l <ok.txt) files: $(cat ok.txt)"
grep -q '^out/sub/noext.l3: ok, .* identical to in/sub/noext$' ok.txt || fail "$(cat ok.txt)"

# A changed original: exit 3, naming both files.
cp in/top.ppm top.keep
flip_byte in/top.ppm -1
expect_exit 3 dlprep l3 verify out --against in 2>err.txt
grep -q '^dlprep: error: l3 verify: out/top.l3: differs from in/top.ppm at pixel (11, 8) channel 2' err.txt || fail "$(cat err.txt)"
grep -qx 'l3 verify: 3 files: 2 ok, 1 differ, 0 failed; 0 originals without an l3 file' err.txt ||
  fail "summary: $(cat err.txt)"
cp top.keep in/top.ppm

# An original without its L3 file, an L3 file without its original: exit 1, both named.
make_pnm in/sub/new.ppm 5 5 3 4
cp out/top.l3 out/sub/stray.l3
expect_exit 1 dlprep l3 verify out --against in 2>err.txt
grep -qx 'l3 verify: 4 files: 3 ok, 0 differ, 1 failed; 1 originals without an l3 file' err.txt ||
  fail "summary: $(cat err.txt)"
expect_exit 1 dlprep --json l3 verify out --against in >report.json 2>err.txt
grep -q '^dlprep: error: l3 verify: in/sub/new.ppm: no l3 file for it in out$' err.txt || fail "$(cat err.txt)"
grep -q '^dlprep: error: l3 verify: out/sub/stray.l3: no original in/sub/stray.\* to compare with$' err.txt || fail "$(cat err.txt)"
/usr/bin/python3 - <<'PY'
import json
r = json.load(open("report.json"))
assert r["missing"] == ["in/sub/new.ppm"], r["missing"]
status = {f["path"]: f["status"] for f in r["files"]}
assert status == {"out/sub/gray.l3": "ok", "out/sub/noext.l3": "ok", "out/sub/stray.l3": "failed",
                  "out/top.l3": "ok"}, status
PY
rm in/sub/new.ppm out/sub/stray.l3

# Two originals that would both have become out/top.l3.
make_pnm in/top.pgm 12 9 1 5
expect_exit 1 dlprep l3 verify out --against in 2>err.txt
grep -q 'out/top.l3: two originals, in/top.pgm and in/top.ppm' err.txt || fail "$(cat err.txt)"
rm in/top.pgm

# A directory of originals needs one directory to verify.
expect_exit 2 dlprep l3 verify out/top.l3 --against in
dlprep -q l3 verify out --against in

# An L3 file among the originals is not one (l3 encode skips it too).
cp out/top.l3 in/sub/already.l3
dlprep -q l3 verify out --against in || fail "an L3 file under the originals was taken for one"
