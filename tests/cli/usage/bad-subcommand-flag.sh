#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
make_pnm a.ppm 4 4 3 1
dlprep l3 encode a.ppm -o a.l3 --frobnicate
