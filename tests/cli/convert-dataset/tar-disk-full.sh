#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A full disk while shards are written (a 400 kB tmpfs in a private mount namespace; skipped
# where user namespaces are not allowed): exit 1 naming the shard and "No space left on device",
# no temporary file, no index; after the disk grows, the rerun completes and verifies.
mkdir -p src/a
cp "$SAMPLE_DATA"/images/*.png src/a/
with_small_disk 400k '
  code=0
  dlprep -q -j2 convert-dataset src small/ds --to bmp --shards 300kB 2>err.txt || code=$?
  [ "$code" = 1 ] || fail "exit $code on a full disk, expected 1"
  grep -q "small/ds/data/shard-[0-9]*\.tar: write failed: No space left on device" err.txt ||
    fail "no ENOSPC message naming the shard: $(cat err.txt)"
  no_temp_files small/ds
  [ ! -e small/ds/samples.jsonl ] || fail "an index was recorded"
  mount -o remount,size=20m small
  dlprep -q convert-dataset src small/ds --to bmp --shards 300kB
  dlprep -q dataset verify small/ds
  json_check "d[\"complete\"] and d[\"samples\"] == 8 and d[\"layout\"] == \"tar\"" <small/ds/dataset.json
'
