#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Every sample image (png, jpeg, webp, bmp, ppm/pgm) is recognised; a directory lists them all.
[ -d "$SAMPLE_DATA/images" ] || fail "no sample images in $SAMPLE_DATA/images"
dlprep --json info "$SAMPLE_DATA/images" >info.json
count=$(find "$SAMPLE_DATA/images" -type f ! -name '.*' ! -name '*.md' ! -name '*.txt' | wc -l)
json_check "len(d['files']) == $count and all('error' not in f for f in d['files'])" <info.json
json_check 'all(f["width"] > 0 and f["height"] > 0 and 1 <= f["channels"] <= 4 for f in d["files"])' <info.json
dlprep info "$SAMPLE_DATA/images" >table.txt
[ "$(wc -l <table.txt)" = $((count + 1)) ] || fail "table has $(wc -l <table.txt) lines for $count images"
