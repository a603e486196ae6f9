#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
make_pnm a.ppm 4 4 3 1
dlprep --progress sometimes info a.ppm
