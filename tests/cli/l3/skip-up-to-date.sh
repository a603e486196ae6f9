#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 20 20 3 1
make_pnm b.ppm 20 20 3 2
dlprep l3 encode a.ppm b.ppm -o out 2>err1.txt
grep -q '^l3 encode: 2 files encoded' err1.txt || fail "first run: $(cat err1.txt)"
dlprep l3 encode a.ppm b.ppm -o out 2>err2.txt
grep -q '^l3 encode: 0 files encoded; skipped 2 up to date$' err2.txt || fail "second run: $(cat err2.txt)"
sleep 0.02; touch a.ppm
dlprep l3 encode a.ppm b.ppm -o out 2>err3.txt
grep -q '^l3 encode: 1 file encoded.*; skipped 1 up to date$' err3.txt || fail "after touch: $(cat err3.txt)"
dlprep l3 encode --force a.ppm b.ppm -o out 2>err4.txt
grep -q '^l3 encode: 2 files encoded' err4.txt || fail "--force: $(cat err4.txt)"
dlprep l3 decode out -o back 2>/dev/null
dlprep l3 decode out -o back 2>err5.txt
grep -q 'skipped 2 up to date' err5.txt || fail "decode rerun: $(cat err5.txt)"
