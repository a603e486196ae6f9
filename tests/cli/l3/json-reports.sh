#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 10 10 3 1
echo 'hello' >bad.ppm
expect_exit 1 dlprep --json l3 encode a.ppm bad.ppm -o out >enc.json 2>/dev/null
json_check 'd["schema"] == "dlprep.l3-encode/1" and d["encoded"] == 1 and d["failed"] == 1' <enc.json
json_check 'd["files"][0]["status"] == "encoded" and d["files"][0]["output"] == "out/a.l3" and d["files"][1]["status"] == "failed"' <enc.json
dlprep --json l3 encode a.ppm -o out | json_check 'd["skipped"] == 1'
dlprep --json l3 decode out/a.l3 -o a.png | json_check 'd["schema"] == "dlprep.l3-decode/1" and d["decoded"] == 1'
expect_exit 2 dlprep --json l3 decode out/a.l3 -o - 2>/dev/null
