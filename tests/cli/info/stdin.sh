#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

make_pnm a.ppm 9 7 1 1
dlprep --json info - <a.ppm | json_check 'd["files"][0]["path"] == "<stdin>" and d["files"][0]["channels"] == 1'
