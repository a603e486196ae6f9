#!/usr/bin/env bash
# A stream that is no image (/dev/zero, an endless pipe) is refused at its first bytes, not read
# to the 16 GiB input limit first (which would also take 16 GiB of memory): each command answers
# at once, with the reason.
. "$CLI_TESTS/common.sh"

expect_exit 1 timeout 20 dlprep info /dev/zero 2>err
grep -q '/dev/zero: unknown image format' err || fail "info: $(cat err)"
expect_exit 1 timeout 20 dlprep l3 verify /dev/zero 2>err
grep -q '/dev/zero: not an l3 file' err || fail "l3 verify: $(cat err)"
set +o pipefail  # yes and cat end on SIGPIPE once dlprep has stopped reading
yes | expect_exit 1 timeout 20 dlprep l3 encode - -o out.l3 2>err
grep -q '<stdin>: unknown image format' err || fail "l3 encode: $(cat err)"
cat /dev/zero | expect_exit 1 timeout 20 dlprep l3 decode - -o out.png 2>err
grep -q '<stdin>: not an l3 file' err || fail "l3 decode: $(cat err)"
# An L3 header gives the file's size: a valid file with an endless stream after it fails there.
dlprep -q l3 encode "$SAMPLE_DATA/images/kay_256x256.png" -o kay.l3
(cat kay.l3; cat /dev/zero) | expect_exit 1 timeout 20 dlprep info - 2>err
grep -q "<stdin>: runs past the $(stat -c %s kay.l3) bytes its header gives" err || fail "info: $(cat err)"
(cat kay.l3; cat /dev/zero) | expect_exit 1 timeout 20 dlprep l3 decode - -o out.png 2>err
grep -q "<stdin>: runs past" err || fail "l3 decode: $(cat err)"
set -o pipefail
[ ! -e out.l3 ] && [ ! -e out.png ] || fail "an output was written"
# The same for a source list that names one (convert-dataset, profile-mix).
echo /dev/zero >list.txt
expect_exit 1 timeout 20 dlprep convert-dataset list.txt ds --to png 2>err
grep -q '/dev/zero: unknown image format' err || fail "convert-dataset: $(cat err)"
