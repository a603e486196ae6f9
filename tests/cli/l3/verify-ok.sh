#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 20 10 3 1
dlprep -q l3 encode a.ppm -o a.l3
dlprep l3 verify a.l3 --against a.ppm
dlprep --json l3 verify a.l3 | json_check 'd["schema"] == "dlprep.l3-verify/1" and d["files"][0]["status"] == "ok" and (d["ok"], d["mismatched"], d["failed"]) == (1, 0, 0)'
