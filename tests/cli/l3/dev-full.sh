#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Output that cannot be written is exit 1, and a device is written into, never replaced.
[ -c /dev/full ] || skip "no /dev/full character device here"
make_pnm a.ppm 10 10 3 1
dlprep -q l3 encode a.ppm -o a.l3
expect_exit 1 dlprep -q l3 decode a.l3 -o - --to ppm >/dev/full 2>/dev/null
expect_exit 1 dlprep -q l3 encode a.ppm -o - >/dev/full 2>/dev/null
expect_exit 1 dlprep -q l3 decode a.l3 -o /dev/full --to ppm 2>/dev/null
[ -c /dev/full ] || fail "/dev/full was replaced"
dlprep -q l3 decode a.l3 -o /dev/null --to ppm
[ -c /dev/null ] || fail "/dev/null was replaced"

# A full disk in the middle of a tree (one output is /dev/full, written in place): the files
# after it are not started, since they would fail the same way; a rerun does what is left.
mkdir -p tree out
for i in 1 2 3 4; do make_pnm tree/img$i.ppm 10 10 3 $i; done
ln -s /dev/full out/img2.l3
code=0
dlprep --json -j1 l3 encode tree -o out > report.json 2> err.txt || code=$?
[ "$code" = 1 ] || fail "encode into a full disk exited $code, expected 1"
grep -q "img2.l3: write failed: No space left on device" err.txt || fail "no error naming img2.l3: $(cat err.txt)"
json_check 'd["encoded"] == 1 and d["failed"] == 1 and d["not_started"] == 2' < report.json
json_check '[f["status"] for f in d["files"]] == ["encoded", "failed", "not_started", "not_started"]' < report.json
[ ! -e out/img3.l3 ] || fail "img3 was started after the disk was full"
rm out/img2.l3
dlprep -q -j1 l3 encode tree -o out
[ "$(ls out | wc -l)" = 4 ] || fail "the rerun did not complete the tree"

# A file-size limit (ulimit -f) is a write error like a full disk, not a SIGXFSZ kill that would
# leave the temp file behind.
make_pnm big.ppm 300 300 3 7
code=0
(ulimit -f 50; exec dlprep -q l3 encode big.ppm -o lim/big.l3) 2>err-limit.txt || code=$?
[ "$code" = 1 ] || fail "encode past ulimit -f exited $code, expected 1: $(cat err-limit.txt)"
grep -q "File too large" err-limit.txt || fail "$(cat err-limit.txt)"
[ -z "$(ls -A lim)" ] || fail "left behind: $(ls -A lim)"

# Standard output closed (`>&-`): one error line for the failed write, not a second at exit.
code=0
dlprep -q l3 encode a.ppm -o - >&- 2>err-closed.txt || code=$?
[ "$code" = 1 ] || fail "closed stdout exited $code"
[ "$(grep -c 'error' err-closed.txt)" = 1 ] || fail "$(cat err-closed.txt)"
# The same for every path that names the closed stdout, however it is spelt: never written into
# the /dev/null that holds its descriptor, exit 0.
ln -s /proc/self/fd fds
for out in /dev/stdout /dev/fd/1 /proc/self/fd/1 /dev/fd//1 /dev/fd/./1 /dev/fd/../fd/1 fds/1; do
  code=0
  dlprep -q l3 encode a.ppm -o "$out" -f >&- 2>err-closed.txt || code=$?
  [ "$code" = 1 ] && grep -q "$out: cannot open: Bad file descriptor" err-closed.txt ||
    fail "-o $out with stdout closed: exit $code, $(cat err-closed.txt)"
done

# A name blocked by a folder (or a file where a folder goes) fails that file alone: the disk is
# not full, and the other outputs are written.
rm -rf out2 && mkdir -p tree2/x tree2/y out2/x/img1.l3 && touch out2/y
for i in 1 2 3; do make_pnm tree2/x/img$i.ppm 10 10 3 $i; make_pnm tree2/y/img$i.ppm 10 10 3 $i; done
code=0
dlprep --json -j1 l3 encode tree2 -o out2 > report2.json 2> err2.txt || code=$?
[ "$code" = 1 ] || fail "a blocked output exited $code, expected 1"
grep -q "out2/x/img1.l3: rename failed: Is a directory" err2.txt || fail "no error naming x/img1.l3: $(cat err2.txt)"
json_check 'd["encoded"] == 2 and d["failed"] == 4 and d["not_started"] == 0' < report2.json
[ -e out2/x/img2.l3 ] && [ -e out2/x/img3.l3 ] || fail "x/img2 or x/img3 was not written"
