#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A mix profiled on a dataset made with --max-side and --channels rgb was measured on its small
# RGB images: the report records the transform, the apply line spells it, and convert-dataset
# --mix-from applies it to the original tree unless told otherwise.
dlprep -q convert-dataset "$SAMPLE_DATA/images" ds --to png --max-side 64 --channels rgb
dlprep -q profile-mix ds --formats png,jpeg --sample 4 --storage-bw 50MB/s --no-verify \
  -o mix.json >out.txt
grep -q '^sample: 4 images (made with max-side=64,channels=rgb)' out.txt || fail "$(cat out.txt)"
grep -q '^apply: dlprep convert-dataset SRC DST --mix-from mix.json --max-side 64 --channels rgb$' \
  out.txt || fail "$(cat out.txt)"
json_check 'd["transform"] == "max-side=64,channels=rgb" and d["channels"] == "keep"' <mix.json
dlprep -q convert-dataset "$SAMPLE_DATA/images" full --mix-from mix.json
json_check 'd["parameters"]["transform"] == "max-side=64,channels=rgb"' <full/dataset.json
dlprep -q convert-dataset "$SAMPLE_DATA/images" small --mix-from mix.json --max-side 32
json_check 'd["parameters"]["transform"] == "max-side=32,channels=rgb"' <small/dataset.json
