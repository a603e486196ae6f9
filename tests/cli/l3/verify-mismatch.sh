#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 20 10 3 1
dlprep -q l3 encode a.ppm -o a.l3
cp a.ppm changed.ppm
flip_byte changed.ppm -1
dlprep l3 verify a.l3 --against changed.ppm
