#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# The format comes from the magic bytes: a PPM named .png is a ppm, a PNG named .l3 is a png.
make_pnm a.ppm 8 8 3 1
cp a.ppm fake.png
dlprep --json info fake.png | json_check 'd["files"][0]["format"] == "ppm"'
png=$(ls "$SAMPLE_DATA"/images/*.png 2>/dev/null | head -1 || true)
if [ -n "$png" ]; then
  cp "$png" fake.l3
  dlprep --json info fake.l3 | json_check 'd["files"][0]["format"] == "png"'
fi
