#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A 60/40 mix: every class gets its share (within one sample), the same with -j1 and -j4,
# another seed gives another assignment, and the whole dataset verifies.
for c in 0 1; do
  mkdir -p src/c$c
  for i in $(seq 1 10); do make_pnm src/c$c/img$i.ppm 12 9 3 $((c * 100 + i)); done
done
dlprep -q -j1 convert-dataset src one --mix l3:0.6,bmp:0.4 --seed 3
dlprep -q -j4 convert-dataset src four --mix l3:0.6,bmp:0.4 --seed 3
cmp -s one/samples.jsonl four/samples.jsonl || fail "-j changed the assignment"
json_check 'all(v == {"bmp": 4, "l3": 6} for v in d["classes"].values())' <one/dataset.json
json_check '[m["spec"] for m in d["mix"]] == ["l3", "bmp"] and d["parameters"]["seed"] == 3' <one/dataset.json
dlprep -q convert-dataset src other --mix l3:0.6,bmp:0.4 --seed 4
cut -d, -f2,4 one/samples.jsonl >a.txt
cut -d, -f2,4 other/samples.jsonl >b.txt
! cmp -s a.txt b.txt || fail "--seed did not change the assignment"
dlprep -q dataset verify one
[ "$(find one/data -name '*.bmp' | wc -l)" = 8 ] || fail "bmp files"
