#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Encode, verify bit-exactly against the original, decode, compare: 1 and 3 channels, odd sizes.
for spec in "1 1 1" "1 17 3" "17 1 1" "33 31 3" "64 64 1" "65 63 3" "130 70 3"; do
  set -- $spec
  f=img_$1x$2x$3
  ext=ppm; [ "$3" = 1 ] && ext=pgm
  make_pnm $f.$ext $1 $2 $3 7
  dlprep -q l3 encode $f.$ext -o $f.l3
  dlprep l3 verify $f.l3 --against $f.$ext >/dev/null
  dlprep -q l3 decode $f.l3 -o back_$f.$ext
  cmp $f.$ext back_$f.$ext || fail "$f: decoded file differs"
done
# Real images of every format, including gray+alpha-free RGBA png and lossy sources.
if [ -d "$SAMPLE_DATA/images" ]; then
  dlprep -q l3 encode "$SAMPLE_DATA/images" -o samples-l3/
  for img in "$SAMPLE_DATA"/images/*; do
    name=$(basename "$img"); stem=${name%.*}
    dlprep l3 verify samples-l3/$stem.l3 --against "$img" >/dev/null
    dlprep -q l3 decode samples-l3/$stem.l3 -o decoded/$stem.png
    dlprep l3 verify samples-l3/$stem.l3 --against decoded/$stem.png >/dev/null
  done
fi
