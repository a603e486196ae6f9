#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# Bad --resize, --max-side, --center-crop and --mix-from values: one line naming the problem
# (and the report file) plus the hint, exit 2, nothing written. Huge sizes are refused by the
# decoder limits before anything is allocated.
mkdir src
make_pnm src/a.ppm 8 8 3 1
expect_exit 2 dlprep convert-dataset src out --to png --resize 0x10
expect_exit 2 dlprep convert-dataset src out --to png --resize abc
expect_exit 2 dlprep convert-dataset src out --to png --resize 100000x100000
expect_exit 2 dlprep convert-dataset src out --to png --resize 40000x40000
expect_exit 2 dlprep convert-dataset src out --to png --max-side 0
expect_exit 2 dlprep convert-dataset src out --to png --max-side big
expect_exit 2 dlprep convert-dataset src out --to png --resize 64x36 --max-side 64
expect_exit 2 dlprep convert-dataset src out --to png --center-crop
expect_exit 2 dlprep convert-dataset src out --to png --max-side 64 --center-crop
expect_exit 2 dlprep convert-dataset src out --mix-from missing.json
expect_exit 2 dlprep convert-dataset src out --mix-from src
echo 'not json {' >broken.json
expect_exit 2 dlprep convert-dataset src out --mix-from broken.json
echo '{"schema": "dlprep.dataset/1", "mix": []}' >other.json
expect_exit 2 dlprep convert-dataset src out --mix-from other.json
echo '{"schema": "dlprep.profile-mix/2", "mix": [{"spec": "png", "ratio": 1}]}' >newer.json
expect_exit 2 dlprep convert-dataset src out --mix-from newer.json
echo '{"schema": "dlprep.profile-mix/1", "mix": []}' >nomix.json
expect_exit 2 dlprep convert-dataset src out --mix-from nomix.json
echo '{"schema": "dlprep.profile-mix/1", "mix": [{"spec": "gif", "ratio": 1}]}' >gif.json
expect_exit 2 dlprep convert-dataset src out --mix-from gif.json
echo '{"schema": "dlprep.profile-mix/1", "mix": [{"spec": "png", "ratio": 1}]}' >ok.json
expect_exit 2 dlprep convert-dataset src out --mix-from ok.json --to png
expect_exit 2 dlprep convert-dataset src out --mix png:1 --mix-from ok.json
# An empty value (a shell variable left unset) is no value: refused, not taken for none.
expect_exit 2 dlprep convert-dataset src out --to png --resize ""
expect_exit 2 dlprep convert-dataset src out --to png --max-side ""
expect_exit 2 dlprep convert-dataset src out --to png --shard ""
expect_exit 2 dlprep convert-dataset src out --to ""
# Past 2^64 a side is too large, as past 65535, not malformed.
expect_exit 2 dlprep convert-dataset src out --to png --resize 99999999999999999999x1
[ ! -e out ] || fail "output written despite a usage error"
# A minimal valid report works.
dlprep -q convert-dataset src out --mix-from ok.json --resize 4x2
json_check '[m["spec"] for m in d["mix"]] == ["png"] and d["parameters"]["transform"] == "resize=4x2"' <out/dataset.json
