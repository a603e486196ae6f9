#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A tiny real run on the sample images: the report parses and has the schema, the mix sums to 1,
# a verification was measured, the plot is well-formed XML, and no temporary folder is left.
mkdir work
dlprep -q -j2 profile-mix "$SAMPLE_DATA/images" --formats png,bmp --sample 4 --storage-bw 50MB/s \
  --pass-seconds 0.3 -o report.json --plot plot.svg --work-dir work >table.txt
json_check 'd["schema"] == "dlprep.profile-mix/1" and d["sample_images"] == 4' <report.json
json_check 'abs(sum(m["ratio"] for m in d["mix"]) - 1) < 1e-9 and d["mix_text"]' <report.json
json_check 'd["measured"]["images_per_s"] > 0 and d["resources"]["storage_bytes_per_s"] == 50e6' <report.json
json_check 'len(d["sweep"]["points"]) == 11 and d["sweep"]["format_a"] == "png"' <report.json
/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith("svg") else 1)' plot.svg ||
  fail "plot.svg is not an SVG document"
grep -q '^predicted:' table.txt || fail "no table on stdout"
grep -qxF "apply: dlprep convert-dataset $SAMPLE_DATA/images DST --mix-from report.json" table.txt ||
  fail "no apply line: $(cat table.txt)"
[ -z "$(ls -A work)" ] || fail "work folder not cleaned: $(ls work)"
# --json: the same report on stdout; --no-verify: nothing measured.
dlprep -q --json profile-mix "$SAMPLE_DATA/images" --formats png,bmp --sample 4 --storage-bw 50MB/s \
  --no-verify --search liquid >out.json
json_check 'd["measured"] is None and d["search"] == "liquid"' <out.json

# A lossy candidate (webp:QUALITY, like jpeg) is probed, not failed for changing pixels.
mkdir rgb gray
for f in "$SAMPLE_DATA"/images/*; do
  case $(dlprep --json info "$f" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["channels"])') in
    3) cp "$f" rgb/ ;;
    1) cp "$f" gray/ ;;
  esac
done
dlprep -q --json profile-mix rgb --formats png,webp:80,jpeg:90 --sample 2 --storage-bw 50MB/s \
  --no-verify >lossy.json
json_check '[f["spec"] for f in d["formats"]] == ["png", "webp:80", "jpeg:90"]' <lossy.json
dlprep -q profile-mix rgb --formats png,webp:80,jpeg:90 --sample 2 --storage-bw 50MB/s \
  --no-verify --channels rgb >lossy.txt
grep -qx 'lossy: webp:80, jpeg:90 (decodes to other pixels than the source.s)' lossy.txt ||
  fail "lossy candidates not named: $(cat lossy.txt)"
grep -q '^apply: dlprep convert-dataset rgb DST --mix [a-z0-9:.,]* --channels rgb$' lossy.txt ||
  fail "$(cat lossy.txt)"
# What convert-dataset would refuse (webp and gray images) is refused, naming the image.
expect_exit 1 dlprep profile-mix gray --formats png,webp --sample 2 --storage-bw 50MB/s \
  --no-verify 2>err.txt
grep -q 'as webp: webp cannot store 1-channel images' err.txt || fail "$(cat err.txt)"
# -o -: the report alone on stdout, one JSON document, with --json too.
for json in "" --json; do
  dlprep -q $json profile-mix rgb --formats png,bmp --sample 2 --storage-bw 50MB/s --no-verify \
    -o - >stdout.json
  json_check 'd["schema"] == "dlprep.profile-mix/1"' <stdout.json
done
