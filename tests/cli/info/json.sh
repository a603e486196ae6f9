#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm rgb.ppm 37 23 3 1
dlprep -q l3 encode rgb.ppm -o rgb.l3 --patch 16
dlprep --json info rgb.ppm rgb.l3 >info.json
json_check 'd["schema"] == "dlprep.info/1" and len(d["files"]) == 2' <info.json
json_check 'd["files"][0] == {"path": "rgb.ppm", "format": "ppm", "width": 37, "height": 23, "channels": 3, "file_bytes": 13 + 37 * 23 * 3, "bits_per_sample": 8}' <info.json
json_check 'd["files"][1]["format"] == "l3" and d["files"][1]["l3"]["patch"] == 16 and len(d["files"][1]["l3"]["channel_bytes"]) == 3' <info.json
json_check 'd["files"][1]["l3"]["version"] >= 1 and d["files"][1]["l3"]["colour_transform"] in ("none", "subtract_green")' <info.json
