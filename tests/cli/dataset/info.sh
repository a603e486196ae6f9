#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

mkdir -p src/a src/b
make_pnm src/a/x.ppm 10 10 3 1
make_pnm src/a/y.ppm 10 10 1 2
make_pnm src/b/z.ppm 10 10 3 3
make_pnm src/b/w.ppm 10 10 3 4
dlprep -q convert-dataset src ds --mix l3:1,ppm:1
dlprep dataset info ds >info.txt
grep -q '^samples:  4 in 2 classes' info.txt || fail "$(cat info.txt)"
grep -q '^mix:      l3 50.0%, ppm 50.0%, seed 0' info.txt || fail "$(cat info.txt)"
dlprep -v dataset info ds | grep -Eq '^a +2 ' || fail "-v: no class table"
dlprep --json dataset info ds >info.json
json_check 'd["schema"] == "dlprep.dataset-info/1" and d["samples"] == 4 and d["dataset_schema"] == "dlprep.dataset/1"' <info.json
