#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --channels rgb: every sample RGB, as PIL's convert("RGB") gives it (gray replicated, alpha
# dropped), so --to jpeg takes the sample images' RGBA and gray ones; recorded with the
# transform; a rerun is up to date; without it, jpeg fails the RGBA sample and names the option.
# A rerun that drops it fails before it removes anything of the earlier dataset. A failed run's
# dataset.json is dated 1970, so that make runs a rule whose target it is again.
mkdir -p src/c
cp "$SAMPLE_DATA"/images/* src/c/
expect_exit 1 dlprep convert-dataset src plain --to jpeg:90 2>err.txt
grep -q 'fallenleaf_rgba_256x192.png: jpeg cannot store 4-channel images.*--channels rgb' err.txt ||
  fail "$(cat err.txt)"
[ "$(stat -c %Y plain/dataset.json)" = 0 ] || fail "a failed run's dataset.json is dated now"
dlprep -q convert-dataset src ds --to jpeg:90 --channels rgb
json_check 'd["parameters"]["transform"] == "channels=rgb"' <ds/dataset.json
/usr/bin/python3 - ds/samples.jsonl <<'PY' || fail "channels in samples.jsonl"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs and all(r["channels"] == 3 for r in recs), recs
PY
dlprep convert-dataset src ds --to jpeg:90 --channels rgb 2>err.txt
grep -q ' 0 converted' err.txt || fail "rerun: $(cat err.txt)"
# Lossless, the pixels are PIL's convert("RGB") of each source; a gray source's file is .ppm.
dlprep -q convert-dataset src pnm --to ppm --channels rgb
[ -f pnm/data/c/grey_gray_320x240.ppm ] || fail "$(ls pnm/data/c)"
/usr/bin/python3 - src/c pnm/data/c <<'PY' || fail "pixels differ from PIL's convert('RGB')"
import os, sys
from PIL import Image
for name in sorted(os.listdir(sys.argv[1])):
    stem = name.rsplit(".", 1)[0]
    want = Image.open(os.path.join(sys.argv[1], name)).convert("RGB").tobytes()
    got = Image.open(os.path.join(sys.argv[2], stem + ".ppm")).tobytes()
    assert got == want, name
PY
dlprep -q dataset verify pnm
for layout in files tar; do
  shards=()
  [ $layout = tar ] && shards=(--shards 100kB --shuffle)
  dlprep -q convert-dataset src $layout --to jpeg:90 --channels rgb "${shards[@]}"
  before=$(ls -l --full-time -R $layout | md5sum)
  expect_exit 1 dlprep convert-dataset src $layout --to jpeg:95 "${shards[@]}" 2>err.txt
  grep -q 'jpeg cannot store 4-channel images.*; '$layout' is left as it was' err.txt ||
    fail "$layout: $(cat err.txt)"
  [ "$(ls -l --full-time -R $layout | md5sum)" = "$before" ] || fail "$layout: changed by the failed rerun"
  # --on-error skip: refused alike when more than --max-errors samples would fail.
  expect_exit 1 dlprep convert-dataset src $layout --to jpeg:95 "${shards[@]}" --on-error skip \
    --max-errors 0 2>err.txt
  grep -q 'more than 0 samples would fail (--max-errors); the last: .*fallenleaf_rgba_256x192.png: jpeg cannot store 4-channel images.*; '$layout' is left as it was' err.txt ||
    fail "$layout, skip: $(cat err.txt)"
  [ "$(ls -l --full-time -R $layout | md5sum)" = "$before" ] || fail "$layout: changed by the failed rerun"
  dlprep -q dataset verify $layout
done
# A sample that cannot be read, or whose key is another's, fails the check too (its target may
# not store every image: bmp), before anything changes.
mkdir -p bad/c
cp "$SAMPLE_DATA"/images/*.png bad/c/
printf '\x89PNG\r\n\x1a\nGARBAGE' >bad/c/garbage.png
dlprep -q convert-dataset bad badds --to png --on-error skip 2>/dev/null
before=$(ls -l --full-time -R badds | md5sum)
expect_exit 1 dlprep convert-dataset bad badds --to bmp 2>err.txt
grep -q 'garbage.png: .*; badds is left as it was' err.txt || fail "unreadable: $(cat err.txt)"
rm bad/c/garbage.png
cp "$SAMPLE_DATA"/images/eveningglow_320x240.jpg bad/c/kay_256x256.jpg
expect_exit 1 dlprep convert-dataset bad badds --to bmp 2>err.txt
grep -q "sample key 'c/kay_256x256' is not unique.*; badds is left as it was" err.txt ||
  fail "duplicate key: $(cat err.txt)"
[ "$(ls -l --full-time -R badds | md5sum)" = "$before" ] || fail "changed by the failed reruns"
# A list naming a file that is gone, or a folder, and a name too long for the new format's
# extension fail the check too, whatever the format.
mkdir -p lst
cp "$SAMPLE_DATA"/images/kay_256x256.png "$SAMPLE_DATA"/images/kite_199x301.png lst/
printf 'kay_256x256.png\nkite_199x301.png\n' >lst/base.txt
dlprep -q convert-dataset lst/base.txt lds --to png
before=$(ls -l --full-time -R lds | md5sum)
mkdir lst/folder.png
for entry in missing.png folder.png; do
  printf 'kay_256x256.png\nkite_199x301.png\n%s\n' $entry >lst/base.txt
  expect_exit 1 dlprep convert-dataset lst/base.txt lds --to l3 2>err.txt
  grep -q "$entry: .*; lds is left as it was" err.txt || fail "$entry: $(cat err.txt)"
done
printf 'kay_256x256.png\nkite_199x301.png\n' >lst/base.txt
long=$(printf 'a%.0s' $(seq 251))
cp "$SAMPLE_DATA"/images/autumn_320x240.png lst/$long.png
echo $long.png >>lst/base.txt
dlprep -q convert-dataset lst/base.txt lds2 --to png
expect_exit 1 dlprep convert-dataset lst/base.txt lds2 --to webp 2>err.txt
grep -q "the file name a*.webp is longer than 255 bytes; lds2 is left as it was" err.txt ||
  fail "long name: $(cat err.txt)"
[ "$(ls -l --full-time -R lds | md5sum)" = "$before" ] || fail "changed by the failed reruns"
