#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A changed byte, a missing file: exit 3, each named; JSON lists them.
mkdir -p src/a
for i in 1 2 3; do make_pnm src/a/img$i.ppm 16 16 3 $i; done
dlprep -q convert-dataset src ds --to l3
dlprep -q dataset verify ds
flip_byte ds/data/a/img2.l3 -3
expect_exit 3 dlprep dataset verify ds 2>err.txt
grep -q '^dlprep: error: dataset verify: ds/data/a/img2.l3: crc32 [0-9a-f]*, the index records [0-9a-f]*$' err.txt ||
  fail "tampered file not named: $(cat err.txt)"
rm ds/data/a/img3.l3
expect_exit 3 dlprep --json dataset verify ds >v.json 2>/dev/null
json_check 'd["mismatched"] == 2 and d["ok"] == 1 and len(d["problems"]) == 2' <v.json
