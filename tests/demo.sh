#!/usr/bin/env bash
# The main job on sample data: every sample image to L3 and back, each checked bit-exact against
# its original, then the size/speed table of L3 against PNG, WebP and JPEG on the same images.
# Usage: tests/demo.sh DLPREP IMAGES_DIR WORK_DIR
set -euo pipefail
dlprep=$1 images=$2 work=$3
rm -rf "$work"
mkdir -p "$work"

echo "== the sample images"
"$dlprep" info "$images"/*

echo
echo "== encode to L3, decode back to PNG"
"$dlprep" l3 encode "$images" -o "$work/l3"
"$dlprep" l3 decode "$work/l3" -o "$work/decoded" --to png

echo
echo "== verify: every L3 file decodes to exactly the pixels of its original, none missing"
"$dlprep" l3 verify "$work/l3" --against "$images"
echo "all $(ls "$images" | wc -l) images verified bit-exact"

echo
echo "== size and speed (one thread, then all cores)"
"$dlprep" l3 bench "$images"
