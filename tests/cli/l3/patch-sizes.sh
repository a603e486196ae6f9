#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 100 37 3 1
for p in 8 16 32 64 128 256; do
  dlprep -q l3 encode a.ppm -o a$p.l3 --patch $p
  dlprep --json info a$p.l3 | json_check "d['files'][0]['l3']['patch'] == $p"
  dlprep l3 verify a$p.l3 --against a.ppm >/dev/null
done
dlprep -q l3 encode a.ppm -o auto.l3 --patch auto
dlprep --json info auto.l3 | json_check "d['files'][0]['l3']['patch'] == 32"
