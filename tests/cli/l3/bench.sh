#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 64 48 3 1
make_pnm b.ppm 33 20 3 2
dlprep l3 bench a.ppm b.ppm --codecs l3,png --repeats 1 --threads 1 >table.txt
grep -q '^l3 bench: 2 images' <(head -1 table.txt) || fail "$(cat table.txt)"
grep -Eq '^codec +threads +ratio' table.txt || fail "no table header: $(cat table.txt)"
grep -Eq '^l3 +1 ' table.txt || fail "no l3 row: $(cat table.txt)"
dlprep --json l3 bench a.ppm --codecs l3 --repeats 1 --threads 1,2 >bench.json
json_check 'd["schema"] == "dlprep.l3-bench/1" and d["images"] == 1' <bench.json
json_check 'any(r["codec"].startswith("l3") and r["threads"] == 2 and r["verified"] for r in d["rows"])' <bench.json
# The source row decodes the files as they are: its bytes are the files' bytes.
dlprep -q l3 encode a.ppm -o a.l3
dlprep --json l3 bench a.l3 b.ppm --codecs source,bmp --repeats 1 --threads 1 >source.json
json_check '[r["codec"] for r in d["rows"]] == ["source", "bmp", "memcpy"] and all(r["verified"] for r in d["rows"])' <source.json
json_check 'd["rows"][0]["compressed_bytes"] == '"$(($(stat -c %s a.l3) + $(stat -c %s b.ppm)))" <source.json

# Every codec is measured on the same images: a gray one that webp cannot store is left out
# (with a count), also from an explicit list; a codec that can store none of the set is left out
# from the defaults, an error when asked for.
make_pnm g.pgm 40 30 1 3
dlprep --json l3 bench a.ppm g.pgm --codecs l3,webp --repeats 1 --threads 1 >same.json 2>same.err
json_check 'd["images"] == 1' <same.json
grep -q 'left out 1 of 2 images that webp cannot store (1 with 1 channel)' same.err || fail "$(cat same.err)"
dlprep l3 bench g.pgm --repeats 1 --threads 1 >gray.txt 2>gray.err
grep -q 'webp cannot store 1-channel images: left out' gray.err || fail "$(cat gray.err)"
grep -Eq '^png:6 ' gray.txt || fail "$(cat gray.txt)"
expect_exit 1 dlprep --json l3 bench g.pgm --codecs webp --repeats 1 >webp.json 2>/dev/null
json_check 'd["schema"] == "dlprep.error/1" and "no image of the set can be stored by every codec (webp" in d["error"]' <webp.json
# Gray and RGBA, no RGB: the defaults drop webp and jpeg, and measure the rest on both.
/usr/bin/python3 -c "from PIL import Image; Image.new('RGBA', (20, 10), (1, 2, 3, 4)).save('rgba.png')"
dlprep --json l3 bench g.pgm rgba.png --repeats 1 --threads 1 >gray-rgba.json 2>/dev/null
json_check 'd["images"] == 2 and sorted({r["codec"] for r in d["rows"]}) == ["l3", "memcpy", "png:6"]' <gray-rgba.json
# No image at all: exit 1, and with --json the error document.
expect_exit 1 dlprep --json l3 bench nonexistent.png >none.json 2>/dev/null
json_check 'd["schema"] == "dlprep.error/1" and d["error"] == "no images to benchmark"' <none.json
