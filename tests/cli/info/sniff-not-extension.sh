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

# In a walked folder, an image in a format dlprep does not read is reported with its format
# (exit 1), as l3 encode fails it: an audit with `info` does not pass what encode then refuses.
mkdir -p mixed
make_pnm mixed/a.ppm 5 4 3 1
printf 'GIF89a\001\000\001\000\000\000\000;' >mixed/b.gif
expect_exit 1 dlprep info mixed >table.txt 2>err.txt
grep -q 'mixed/b.gif: a GIF image: not a format dlprep reads' err.txt || fail "$(cat err.txt)"
grep -q 'mixed/a.ppm' table.txt || fail "the readable image is not listed: $(cat table.txt)"
# An *.l3 whose magic is damaged is reported, as l3 decode and verify report it; other files that
# are no image are skipped.
echo 'not an image' >mixed/notes.txt
printf 'XL3I\r\n\032\n and the rest of a damaged header' >mixed/damaged.l3
rm mixed/b.gif
expect_exit 1 dlprep info mixed >table.txt 2>err.txt
grep -q 'mixed/damaged.l3: unknown image format' err.txt || fail "$(cat err.txt)"
grep -q 'notes.txt' err.txt table.txt && fail "a file that is no image was reported"
grep -q 'mixed/a.ppm' table.txt || fail "the readable image is not listed: $(cat table.txt)"
