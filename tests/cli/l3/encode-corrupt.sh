#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Bad inputs: each is named, leaves no output, and the good file is still encoded (exit 1).
make_pnm good.ppm 16 16 3 1
head -c 40 good.ppm >truncated.ppm
: >empty.ppm
echo 'hello' >notes.txt
printf 'P6\n70000 70000\n255\n' >huge.ppm
dlprep -q l3 encode truncated.ppm empty.ppm notes.txt huge.ppm missing.ppm good.ppm -o out/ || code=$?
[ "${code:-0}" = 1 ] || fail "exit ${code:-0}, expected 1"
[ -f out/good.l3 ] || fail "good file not encoded"
[ "$(ls out)" = "good.l3" ] || fail "outputs left for bad inputs: $(ls out)"
no_temp_files out
