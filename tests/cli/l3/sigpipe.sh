#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# A reader of standard output that goes away (| head) ends the run with 141, as SIGPIPE's default
# action would, but with the temporary files of the outputs in flight removed: the default
# action left them (.NAME.l3.tmp.XXXXXX).
mkdir in
{ printf 'P6\n1500 1000\n255\n'; head -c 4500000 /dev/urandom; } > in/img00.ppm
for i in $(seq 10 49); do ln in/img00.ppm in/img$i.ppm; done
for try in 1 2 3; do
  set +e
  dlprep --json -j2 l3 encode in -o "out$try" | head -c 300 >/dev/null
  code=${PIPESTATUS[0]}
  set -e
  [ "$code" = 141 ] || fail "try $try: exit $code, expected 141 (SIGPIPE)"
  left=$(find "out$try" -name '.*.tmp.*' | head -3)
  [ -z "$left" ] || fail "try $try: temporary files left: $left"
done
