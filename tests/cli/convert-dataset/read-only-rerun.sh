#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A rerun with nothing to do writes nothing, so it also passes on a read-only copy of the dataset
# (a published dataset checked by a Makefile rule or CI): convert-dataset in both layouts and
# dataset merge. Needs a read-only bind mount (root).
i=0
for f in "$SAMPLE_DATA"/images/*.png; do
  c=class$((i % 2)); mkdir -p src/$c; cp "$f" src/$c/; i=$((i + 1))
done
mkdir -p rw ro
dlprep -q convert-dataset src rw/files --to l3
dlprep -q convert-dataset src rw/tar --to png --shards 1MB
dlprep -q convert-dataset src p0 --to l3 --shard 0/2
dlprep -q convert-dataset src p1 --to l3 --shard 1/2
dlprep -q dataset merge p0 p1 -o rw/merged
mount --bind rw ro 2>/dev/null && mount -o remount,ro,bind ro 2>/dev/null ||
  { umount ro 2>/dev/null; skip "no read-only bind mount here (needs root)"; }
trap 'umount ro' EXIT
touch ro/probe 2>/dev/null && fail "ro/ is writable"
dlprep -q convert-dataset src ro/files --to l3
dlprep -q convert-dataset src ro/tar --to png --shards 1MB
dlprep -q dataset merge p0 p1 -o ro/merged
dlprep -q dataset verify ro/files
# A rerun that has something to do says why it cannot.
expect_exit 1 dlprep -q convert-dataset src ro/files --to png 2>err.txt
grep -q "Read-only file system" err.txt || fail "$(cat err.txt)"
