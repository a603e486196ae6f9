#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A tar dataset with a changed byte in a member, a wrong class index, and a truncated shard:
# verify exits 3 naming the shard and member of each.
mkdir -p src/a src/b
for i in 1 2 3; do make_pnm src/a/img$i.ppm 16 16 3 $i; make_pnm src/b/img$i.ppm 16 16 3 $((i + 3)); done
dlprep -q convert-dataset src ds --to l3 --shards 4KiB
dlprep -q dataset verify ds
off=$(/usr/bin/python3 -c 'import json
for l in open("ds/samples.jsonl"):
    r = json.loads(l)
    if r["key"] == "a/img2": print(r["location"], r["offset"] + r["bytes"] - 3)')
set -- $off
flip_byte "ds/$1" "$2"
expect_exit 3 dlprep dataset verify ds 2>err.txt
grep -q "^dlprep: error: dataset verify: ds/$1(a/img2.l3): crc32 [0-9a-f]*, the index records [0-9a-f]*\$" err.txt ||
  fail "tampered member not named: $(cat err.txt)"
flip_byte "ds/$1" "$2"
dlprep -q dataset verify ds
# The .cls of b/img1 says class 0 instead of 1.
set_cls_of_b_img1() {  # DIGIT
  /usr/bin/python3 - "$1" <<'PY'
import json, sys, tarfile
for l in open("ds/samples.jsonl"):
    r = json.loads(l)
    if r["key"] == "b/img1":
        path = "ds/" + r["location"]
        with tarfile.open(path) as t:
            cls = [m for m in t.getmembers() if m.name == "b/img1.cls"][0]
        d = bytearray(open(path, "rb").read())
        d[cls.offset_data] = ord(sys.argv[1])
        open(path, "wb").write(d)
PY
}
set_cls_of_b_img1 0
expect_exit 3 dlprep dataset verify ds 2>err2.txt
grep -q "ds/data/shard-[0-9]*\.tar(b/img1.l3): b/img1.cls is not 1" err2.txt || fail "$(cat err2.txt)"
set_cls_of_b_img1 1
dlprep -q dataset verify ds
# A sample appended to a shard (tar -r): WebDataset would read it, the index does not name it.
first=$(ls ds/data/*.tar | head -1)
cp src/a/img1.ppm extra.ppm
echo 0 >extra.cls
tar --format=ustar -rf "$first" extra.ppm extra.cls
expect_exit 3 dlprep dataset verify ds 2>err3.txt
grep -q "^dlprep: error: dataset verify: $first: member 'extra.ppm' after the last sample is not in the index" err3.txt ||
  fail "appended member not named: $(cat err3.txt)"
# A truncated shard: its samples past the cut are named, the others still pass.
last=$(ls ds/data/*.tar | tail -1)
truncate -s 1024 "$last"
expect_exit 3 dlprep --json dataset verify ds >v.json 2>/dev/null
json_check 'd["mismatched"] == 1 and d["ok"] == 5' <v.json
