#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A full disk (a 300 kB tmpfs in a private mount namespace; skipped where user namespaces are
# not allowed): exit 1 naming the file and "No space left on device", no temporary file, no
# index recorded, with --on-error skip too; after the disk grows, the rerun completes and verifies.
mkdir -p src/a
cp "$SAMPLE_DATA"/images/*.png src/a/
with_small_disk 300k '
  code=0
  dlprep -q -j2 convert-dataset src small/ds --to bmp 2>err.txt || code=$?
  [ "$code" = 1 ] || fail "exit $code on a full disk, expected 1"
  grep -q "No space left on device" err.txt || fail "no ENOSPC message: $(cat err.txt)"
  no_temp_files small/ds
  [ ! -e small/ds/samples.jsonl ] || fail "an index was recorded"
  # --on-error skip is for bad samples: a full disk still stops the run, never a short dataset.
  code=0
  dlprep -q -j2 convert-dataset src small/ds --to bmp --on-error skip 2>err.txt || code=$?
  [ "$code" = 1 ] || fail "--on-error skip: exit $code on a full disk, expected 1"
  json_check "not d[\"complete\"]" <small/ds/dataset.json
  mount -o remount,size=20m small
  dlprep -q convert-dataset src small/ds --to bmp
  dlprep -q dataset verify small/ds
  json_check "d[\"complete\"] and d[\"samples\"] == 8" <small/ds/dataset.json
'
