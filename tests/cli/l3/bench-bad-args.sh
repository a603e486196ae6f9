#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 4 4 3 1
expect_exit 2 dlprep l3 bench a.ppm --threads 0
expect_exit 2 dlprep l3 bench a.ppm --repeats 0
expect_exit 2 dlprep l3 bench
expect_exit 1 dlprep l3 bench missing.ppm
