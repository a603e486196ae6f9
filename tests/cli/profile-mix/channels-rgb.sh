#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# jpeg as a candidate on the sample images, whose RGBA one it cannot store: an error that names
# the image and --channels rgb, which makes it a candidate (the sample gets RGB, as
# convert-dataset --channels rgb gives the dataset).
expect_exit 1 dlprep -q profile-mix "$SAMPLE_DATA/images" --formats png,jpeg --sample 14 \
  --storage-bw 50MB/s --no-verify 2>err.txt
grep -q 'fallenleaf_rgba_256x192.png as jpeg: jpeg cannot store 4-channel images.*--channels rgb' \
  err.txt || fail "$(cat err.txt)"
dlprep -q --json profile-mix "$SAMPLE_DATA/images" --formats png,jpeg --sample 14 \
  --storage-bw 50MB/s --no-verify --channels rgb >report.json
json_check 'd["sample_images"] == 14 and abs(sum(m["ratio"] for m in d["mix"]) - 1) < 1e-9' \
  <report.json
# A dlprep dataset's index gives every sample's channels: an image the sample of 2 misses still
# refuses jpeg, before anything is measured.
dlprep -q convert-dataset "$SAMPLE_DATA/images" ds --to png
expect_exit 1 dlprep -q profile-mix ds --formats png,jpeg --sample 2 --storage-bw 50MB/s \
  --no-verify 2>err.txt
grep -q 'ds/data/fallenleaf_rgba_256x192.png as jpeg: jpeg cannot store 4-channel images.*(from ds.s index)' \
  err.txt || fail "$(cat err.txt)"
