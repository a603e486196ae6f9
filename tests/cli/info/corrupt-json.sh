#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm good.ppm 6 4 3 1
echo 'not an image' >notes.txt
expect_exit 1 dlprep --json info notes.txt good.ppm >info.json 2>/dev/null
json_check '"error" in d["files"][0] and d["files"][1]["format"] == "ppm"' <info.json
