#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --resize WxH --center-crop: every sample becomes WxH, with PIL's pixels; the transform is in
# dataset.json; a rerun is up to date; another size reconverts everything; --max-side shrinks
# only large images and copies the others byte for byte.
i=0
for f in "$SAMPLE_DATA"/images/*; do
  c=class$((i % 2)); mkdir -p src/$c; cp "$f" src/$c/; i=$((i + 1))
done
dlprep -j2 convert-dataset src ds --to png --resize 64x36 --center-crop 2>err1.txt
grep -q '14 samples in ds: 14 converted' err1.txt || fail "first run: $(cat err1.txt)"
json_check 'd["parameters"]["transform"] == "resize=64x36,center-crop" and d["samples"] == 14' <ds/dataset.json
/usr/bin/python3 - ds/samples.jsonl <<'PY' || fail "shapes in samples.jsonl"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 14 and all((r["width"], r["height"]) == (64, 36) for r in recs), recs
PY
dlprep -q dataset verify ds
dlprep dataset info ds | grep -q '^images:   resize=64x36,center-crop$' || fail "info: no transform line"
# The same pixels as PIL's centre crop + Image.resize(LANCZOS) (an RGB source; PIL
# premultiplies alpha, dlprep does not).
src=$(ls src/*/coldripple_640x360.png src/*/kite_199x301.png)
/usr/bin/python3 -c 'import PIL' 2>/dev/null ||
  fail "PIL is missing: Debian's python3-pil (.ci/dev.sh deps installs it)"
/usr/bin/python3 - $src <<'PY' || fail "pixels differ from PIL's"
import sys
from PIL import Image
for path in sys.argv[1:]:
    im = Image.open(path).convert("RGB")
    w, h = im.size
    if w * 36 > h * 64:
        cw = h * 64 // 36; x = (w - cw) // 2; im = im.crop((x, 0, x + cw, h))
    else:
        ch = w * 36 // 64; y = (h - ch) // 2; im = im.crop((0, y, w, y + ch))
    ref = im.resize((64, 36), Image.LANCZOS)
    out = Image.open("ds/data/" + path.split("/", 1)[1].rsplit(".", 1)[0] + ".png").convert("RGB")
    assert out.tobytes() == ref.tobytes(), path
PY
# A rerun is up to date and leaves the index alone.
cp ds/samples.jsonl index1
dlprep convert-dataset src ds --to png --resize 64x36 --center-crop 2>err2.txt
grep -q '14 samples in ds: 0 converted, 14 up to date' err2.txt || fail "rerun: $(cat err2.txt)"
cmp -s index1 ds/samples.jsonl || fail "rerun changed the index"
# Another size, or no crop: every sample is converted again.
dlprep convert-dataset src ds --to png --resize 32x18 --center-crop 2>err3.txt
grep -q '14 converted .*, 0 up to date' err3.txt || fail "new size: $(cat err3.txt)"
json_check 'd["parameters"]["transform"] == "resize=32x18,center-crop"' <ds/dataset.json
grep -q '"width":32,"height":18' ds/samples.jsonl || fail "not 32x18: $(head -1 ds/samples.jsonl)"
dlprep convert-dataset src ds --to png --resize 32x18 2>err4.txt
grep -q '14 converted .*, 0 up to date' err4.txt || fail "no crop: $(cat err4.txt)"
dlprep -q dataset verify ds
# --max-side 256: only images whose longer side exceeds 256 change (640x360 -> 256x144,
# 320x240 -> 256x192, 199x301 -> 169x256); the others keep their size, and PNG sources that
# did not change are copied byte for byte.
dlprep convert-dataset src ds --to png --max-side 256 2>err5.txt
grep -q '14 converted' err5.txt || fail "max-side: $(cat err5.txt)"
json_check 'd["parameters"]["transform"] == "max-side=256"' <ds/dataset.json
grep -q 'coldripple_640x360".*"width":256,"height":144' ds/samples.jsonl ||
  fail "640x360 -> 256x144: $(grep coldripple ds/samples.jsonl)"
grep -q 'kite_199x301".*"width":169,"height":256' ds/samples.jsonl || fail "kite: $(grep kite ds/samples.jsonl)"
cmp -s src/*/kay_256x256.png ds/data/*/kay_256x256.png || fail "unchanged png not copied"
! cmp -s src/*/autumn_320x240.png ds/data/*/autumn_320x240.png || fail "resized png copied"
dlprep -q dataset verify ds
# Without a transform again: original sizes, transform null.
dlprep -q convert-dataset src ds --to png
json_check 'd["parameters"]["transform"] is None' <ds/dataset.json
grep -q 'coldripple_640x360".*"width":640,"height":360' ds/samples.jsonl || fail "original size"
no_temp_files ds
# A size its format cannot store (webp: 16383 per side): a --resize to it is refused at once; a
# rerun that would meet such an image fails before it removes the complete dataset's files.
expect_exit 2 dlprep convert-dataset src wds --to webp --resize 16384x16 2>err6.txt
grep -q 'resize 16384x16: webp stores at most 16383 pixels per side' err6.txt || fail "$(cat err6.txt)"
[ ! -e wds ] || fail "a refused run left its DST"
mkdir -p wide/a
make_pnm wide/a/long.ppm 16400 2 3 7
cp src/*/kay_256x256.png wide/a/
dlprep -q convert-dataset wide wds --to png --shards 1MB
before=$(ls -l --full-time -R wds | md5sum)
expect_exit 1 dlprep convert-dataset wide wds --to webp --shards 1MB 2>err7.txt
grep -q 'long.ppm: webp stores at most 16383 pixels per side, not 16400x2; wds is left as it was' \
  err7.txt || fail "$(cat err7.txt)"
[ "$(ls -l --full-time -R wds | md5sum)" = "$before" ] || fail "changed by the failed rerun"
dlprep -q convert-dataset wide wds --to webp --max-side 16383 --shards 1MB
dlprep -q dataset verify wds
