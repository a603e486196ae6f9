#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A mix profiled on a dataset made with --max-side and --channels rgb was measured on its small
# RGB images: the report records the transform, the apply line spells it with the tree the
# dataset was made from, and convert-dataset --mix-from applies it to that tree unless told
# otherwise.
dlprep -q convert-dataset "$SAMPLE_DATA/images" ds --to png --max-side 64 --channels rgb
dlprep -q profile-mix ds --formats png,jpeg --sample 4 --storage-bw 50MB/s --no-verify \
  -o mix.json >out.txt
grep -q '^sample: 4 images (made with max-side=64,channels=rgb)' out.txt || fail "$(cat out.txt)"
grep -qxF "apply: dlprep convert-dataset $SAMPLE_DATA/images DST --mix-from mix.json --max-side 64 --channels rgb" \
  out.txt || fail "$(cat out.txt)"
# Its source gone (or not found from here), SRC stands in for it.
cp -r "$SAMPLE_DATA/images" gone
dlprep -q convert-dataset gone ds2 --to png --max-side 32
rm -r gone
dlprep -q profile-mix ds2 --formats png --sample 2 --storage-bw 50MB/s --no-verify >out2.txt
grep -qx 'apply: dlprep convert-dataset SRC DST --mix png:1 --max-side 32' out2.txt ||
  fail "$(cat out2.txt)"
json_check 'd["transform"] == "max-side=64,channels=rgb" and d["channels"] == "keep"' <mix.json
dlprep -q convert-dataset "$SAMPLE_DATA/images" full --mix-from mix.json
json_check 'd["parameters"]["transform"] == "max-side=64,channels=rgb"' <full/dataset.json
dlprep -q convert-dataset "$SAMPLE_DATA/images" small --mix-from mix.json --max-side 32
json_check 'd["parameters"]["transform"] == "max-side=32,channels=rgb"' <small/dataset.json
# A relative source name is the conversion's: from another folder holding an unrelated folder
# of that name, SRC stands in for it.
mkdir -p other/gone
cp "$SAMPLE_DATA/images/kay_256x256.png" other/gone/unrelated.png
(cd other && dlprep -q profile-mix ../ds2 --formats png --sample 2 --storage-bw 50MB/s --no-verify) >out3.txt
grep -qx 'apply: dlprep convert-dataset SRC DST --mix png:1 --max-side 32' out3.txt ||
  fail "$(cat out3.txt)"
# A run that fails after the -o check leaves none of the folders the check made, .. or not.
mkdir bad
printf '\x89PNG\r\n\x1a\nGARBAGE' >bad/bad.png
expect_exit 1 dlprep -q profile-mix bad --formats png --storage-bw 50MB/s -o n1/x/../r.json 2>err.txt
grep -q 'bad/bad.png' err.txt || fail "$(cat err.txt)"
[ ! -e n1 ] || fail "left $(find n1)"
