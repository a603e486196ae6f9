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

# An output that is its input (`-o $<`): an error for that file, never "up to date", and never
# written over the input, with --force either.
cp a.ppm same.ppm
expect_exit 1 dlprep l3 encode same.ppm -o same.ppm 2>err6.txt
grep -q 'same.ppm: the output same.ppm is the input file itself' err6.txt || fail "$(cat err6.txt)"
expect_exit 1 dlprep l3 encode --force same.ppm -o same.ppm 2>/dev/null
cmp a.ppm same.ppm || fail "--force wrote over the input"
cp out/a.l3 same.l3
expect_exit 1 dlprep l3 decode --force same.l3 -o same.l3 2>/dev/null
cmp out/a.l3 same.l3 || fail "decode --force wrote over the input"

# Hidden folders (.cache/, .ipynb_checkpoints/) are no inputs, as hidden files are not.
mkdir -p tree/cls tree/.cache
cp a.ppm tree/cls/x.ppm
cp a.ppm tree/.cache/thumb.ppm
cp a.ppm tree/cls/.y.ppm
dlprep -q l3 encode tree -o tree-l3
[ "$(cd tree-l3 && find . -type f | sort)" = "./cls/x.l3" ] || fail "$(find tree-l3 -type f)"
[ "$(dlprep --json info tree | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["files"]))')" = 1 ] \
  || fail "info listed a hidden file"

# Another --patch makes an existing L3 file stale, however new it is.
dlprep -q l3 encode a.ppm -o p.l3
dlprep l3 encode a.ppm -o p.l3 --patch 8 2>err7.txt
grep -q '^l3 encode: 1 file encoded' err7.txt || fail "--patch 8 after auto: $(cat err7.txt)"
dlprep --json info p.l3 | json_check 'd["files"][0]["l3"]["patch"] == 8'
dlprep l3 encode a.ppm -o p.l3 --patch 8 2>err8.txt
grep -q 'skipped 1 up to date' err8.txt || fail "same --patch rerun: $(cat err8.txt)"

# A directory link is followed (a subset tree of links to class folders); one back to a folder
# it is in is not (no loop).
mkdir -p linked
ln -s ../tree/cls linked/cls
ln -s . linked/loop
dlprep -q l3 encode linked -o linked-l3
[ "$(cd linked-l3 && find . -type f | sort)" = "./cls/x.l3" ] || fail "$(find linked-l3 -type f)"

# Decode: an output newer than its input is up to date only if it is what --to asks for: the
# same name with another --to (raw after png), or an empty file, is decoded again.
dlprep -q l3 decode p.l3 -o pixels.bin --to png
dlprep l3 decode p.l3 -o pixels.bin --to raw 2>err9.txt
grep -q '^l3 decode: 1 file decoded' err9.txt || fail "--to raw after png: $(cat err9.txt)"
[ "$(stat -c %s pixels.bin)" = 1200 ] || fail "pixels.bin is not 20x20x3 raw pixels"
dlprep l3 decode p.l3 -o pixels.bin --to raw 2>err10.txt
grep -q 'skipped 1 up to date' err10.txt || fail "raw rerun: $(cat err10.txt)"
sleep 0.02; : >empty.png
dlprep l3 decode p.l3 -o empty.png 2>err11.txt
grep -q '^l3 decode: 1 file decoded' err11.txt || fail "an empty output was up to date: $(cat err11.txt)"

# A file named twice (a Makefile's `$(wildcard *.ppm) $(CHANGED)`) is converted once: exit 0.
dlprep l3 encode --force a.ppm a.ppm ./a.ppm -o twice/ 2>err12.txt
grep -q '^l3 encode: 1 file encoded' err12.txt || fail "a.ppm named twice: $(cat err12.txt)"
dlprep l3 encode --force a.ppm "$PWD/a.ppm" -o twice/ 2>err13.txt
grep -q '^l3 encode: 1 file encoded' err13.txt || fail "a.ppm and \$PWD/a.ppm: $(cat err13.txt)"

# An output that is a link: the file it points to is replaced and the link stays; a link to this
# process's stdout (/proc/self/fd/1, as /dev/stdout is) is written through, never replaced.
dlprep -q l3 encode a.ppm -o real.l3 --patch 8
ln -s real.l3 link.l3
dlprep -q l3 encode --force a.ppm -o link.l3
[ -L link.l3 ] || fail "the link was replaced"
dlprep --json info real.l3 | json_check 'd["files"][0]["l3"]["patch"] != 8'
ln -s /proc/self/fd/1 my-stdout
dlprep -q l3 encode a.ppm -o my-stdout >captured.l3
[ -L my-stdout ] || fail "the link to stdout was replaced"
dlprep --json info captured.l3 | json_check 'd["files"][0]["format"] == "l3"'
