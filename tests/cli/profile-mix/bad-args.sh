#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Usage errors exit 2 with the hint; a missing dataset is a failure (1); nothing is written.
expect_exit 2 dlprep profile-mix
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --search simplex
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --storage-bw fast -o r.json
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --storage-bw 0MB/s
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --formats png,gif
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --formats png,png
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --sample 0
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --compute-rate -5
expect_exit 2 dlprep profile-mix "$SAMPLE_DATA/images" --verify --no-verify
dlprep profile-mix "$SAMPLE_DATA/images" --search simplex 2>err.txt || true
grep -q "try 'dlprep profile-mix --help'" err.txt || fail "no hint: $(cat err.txt)"
expect_exit 1 dlprep profile-mix does-not-exist --storage-bw 50MB/s -o r.json
[ ! -e r.json ] || fail "report written despite an error"
