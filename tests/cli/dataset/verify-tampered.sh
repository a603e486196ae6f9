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

# A sample's file replaced by a link to a copy outside (a copy of the dataset would lose it), a
# record whose key is not where its file is, and a key twice: differences, each named.
dlprep -q convert-dataset src ds2 --to l3
cp ds2/data/a/img1.l3 outside.l3
ln -sf "$PWD/outside.l3" ds2/data/a/img1.l3
expect_exit 3 dlprep dataset verify ds2 2>err.txt
grep -q "ds2/data/a/img1.l3: a link, not a file of the dataset" err.txt || fail "link: $(cat err.txt)"
dlprep -q convert-dataset src ds3 --to l3
sed -i 's|"key":"a/img2"|"key":"a/img3"|' ds3/samples.jsonl
expect_exit 3 dlprep dataset verify ds3 2>err.txt
grep -q "ds3/data/a/img2.l3: not where key 'a/img3' is stored (data/a/img3.l3)" err.txt || fail "key: $(cat err.txt)"
grep -q "1 key appears more than once" err.txt || fail "repeated key: $(cat err.txt)"
