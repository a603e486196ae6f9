#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm rgb.ppm 37 23 3 1
make_pnm gray.pgm 20 10 1 2
# (L3 details are checked in json.sh: their sizes change with the encoder.)
dlprep info rgb.ppm gray.pgm
