#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A file that fails is reported by name; the others are still listed; exit 1 at the end.
make_pnm good.ppm 6 4 3 1
: >empty.ppm
echo 'not an image' >notes.txt
dlprep info missing.png empty.ppm notes.txt good.ppm
