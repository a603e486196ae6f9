#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A write error on stdout (a full disk) is exit 1, never 0.
[ -c /dev/full ] || skip "no /dev/full character device here"
make_pnm a.ppm 5 3 3 1
expect_exit 1 dlprep info a.ppm >/dev/full
expect_exit 1 dlprep --help >/dev/full
# Output larger than stdio's buffer fails mid-way: the message still names the error.
mkdir many
for i in $(seq 1 300); do ln a.ppm "many/image-with-a-long-name-$i.ppm"; done
for json in "" --json; do
  expect_exit 1 dlprep $json info many >/dev/full 2>err
  grep -q "write failed on standard output: No space left on device" err ||
    fail "info $json: $(cat err)"
done
