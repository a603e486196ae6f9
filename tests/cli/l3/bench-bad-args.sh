#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 4 4 3 1
expect_exit 2 dlprep l3 bench a.ppm --threads 0
expect_exit 2 dlprep l3 bench a.ppm --repeats 0
expect_exit 2 dlprep l3 bench
expect_exit 1 dlprep l3 bench missing.ppm
# webp:N is lossy quality N to convert-dataset: refused here, naming both unambiguous specs.
expect_exit 2 dlprep l3 bench a.ppm --codecs webp:6 2>err.txt
grep -q "write webp-lossless:6 for lossless effort 6, or webp-lossy:6 for quality 6" err.txt ||
  fail "$(cat err.txt)"
# --depth belongs to the batch-decoder benchmark: with --codecs it is refused, not ignored.
expect_exit 2 dlprep l3 bench a.ppm --codecs l3 --depth 3 2>err.txt
grep -q "jpeg and --depth the batch-decoder benchmark: not both" err.txt || fail "$(cat err.txt)"
# An empty item of a list is refused, not dropped.
expect_exit 2 dlprep l3 bench a.ppm --threads 1,,2 2>err.txt
grep -q -- "--threads: empty item in '1,,2'" err.txt || fail "$(cat err.txt)"
expect_exit 2 dlprep l3 bench a.ppm --codecs l3, 2>err.txt
grep -q -- "--codecs: empty item in 'l3,'" err.txt || fail "$(cat err.txt)"
