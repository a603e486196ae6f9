#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 20 10 3 1
make_pnm b.pgm 20 10 1 1
dlprep -q l3 encode a.ppm -o a.l3
dlprep l3 verify a.l3 --against b.pgm
