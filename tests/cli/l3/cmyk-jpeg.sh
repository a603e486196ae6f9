#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A CMYK JPEG (as Photoshop writes them; ImageNet has a few) is read as the RGB that Pillow's
# convert("RGB") gives, byte for byte, so L3 of it holds what a PIL-based loader would see.
/usr/bin/python3 -c 'import PIL' 2>/dev/null || skip "Pillow is not installed (Debian package python3-pil)"
/usr/bin/python3 - "$SAMPLE_DATA/images/autumn_320x240.png" <<'PY'
import sys
from PIL import Image
Image.open(sys.argv[1]).convert("CMYK").save("cmyk.jpg", quality=85)
rgb = Image.open("cmyk.jpg")
assert rgb.mode == "CMYK", rgb.mode
rgb.convert("RGB").save("pillow.ppm")
PY
dlprep info cmyk.jpg | grep -q "cmyk.jpg  *jpeg  *320  *240  *3 " || fail "info: $(dlprep info cmyk.jpg)"
dlprep -q l3 encode cmyk.jpg -o cmyk.l3
dlprep -q l3 decode cmyk.l3 -o dlprep.ppm
cmp -s dlprep.ppm pillow.ppm || fail "the RGB differs from Pillow's"
dlprep -q l3 verify cmyk.l3 --against cmyk.jpg
