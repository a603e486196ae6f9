#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 30 20 3 1
dlprep -q l3 encode a.ppm -o a.l3
dlprep -q l3 encode - -o - <a.ppm >piped.l3
cmp a.l3 piped.l3 || fail "stdin/stdout encode differs from file encode"
dlprep -q l3 decode - -o - --to ppm <a.l3 >back.ppm
cmp a.ppm back.ppm || fail "stdin/stdout decode differs"
cat a.ppm | dlprep -q l3 encode - -o from-pipe.l3
cmp a.l3 from-pipe.l3 || fail "pipe input differs"
dlprep -q l3 decode a.l3 -o - --to raw | cmp -s - <(tail -c 1800 a.ppm) || fail "raw to stdout differs"
# Standard input closed (`<&-`): its place is held by /dev/null, which must not read as an empty
# image; every spelling of standard input is refused as the closed stream it is.
for in in - /dev/stdin /dev/fd/0 /proc/self/fd//0; do
  code=0
  dlprep -q l3 encode "$in" -o closed.l3 <&- 2>err-closed.txt || code=$?
  [ "$code" = 1 ] && grep -q "cannot open: Bad file descriptor" err-closed.txt ||
    fail "$in with stdin closed: exit $code, $(cat err-closed.txt)"
  [ ! -e closed.l3 ] || fail "$in with stdin closed wrote closed.l3"
done
# Its thread's folder too, which only the process itself can name: exec keeps the shell's PID.
code=0
bash -c 'exec dlprep -q l3 encode /proc/$$/task/$$/fd/0 -o closed.l3' <&- 2>err-closed.txt ||
  code=$?
[ "$code" = 1 ] && grep -q "cannot open: Bad file descriptor" err-closed.txt ||
  fail "/proc/PID/task/PID/fd/0 with stdin closed: exit $code, $(cat err-closed.txt)"
[ ! -e closed.l3 ] || fail "/proc/PID/task/PID/fd/0 with stdin closed wrote closed.l3"
