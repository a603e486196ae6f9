#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A data file changed after a completed conversion (a flipped bit, bytes appended, a truncation) is
# not what its source converts to: a rerun converts it again instead of recording the damage, so
# that the dataset verifies. A file that was only touched stays up to date.
mkdir -p src/a src/b
cp "$SAMPLE_DATA"/images/{autumn_320x240,kay_256x256,kite_199x301}.png src/a/
cp "$SAMPLE_DATA"/images/{onestandsout_161x121.bmp,flyingkonqui_200x150.ppm} src/b/
flip() {  # flip FILE OFFSET: one bit, in place
  /usr/bin/python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x40]))' "$@"
}
rerun_repairs() {  # rerun_repairs DST CONVERTED ARGS...: the rerun converts CONVERTED, then verifies
  local dst=$1 converted=$2
  shift 2
  expect_exit 3 dlprep -q dataset verify "$dst"
  dlprep convert-dataset src "$dst" "$@" 2>err.txt
  grep -q "in $dst: $converted converted" err.txt || fail "rerun of $dst: $(cat err.txt)"
  dlprep -q dataset verify "$dst" || fail "$dst does not verify after the rerun"
  cmp -s "$dst/samples.jsonl" "$dst.index" || fail "$dst: the index differs from the first run's"
}

dlprep -q convert-dataset src ds --to bmp
cp ds/samples.jsonl ds.index
sleep 0.02
flip ds/data/a/kay_256x256.bmp 5000  # pixels: still decodes
rerun_repairs ds 1 --to bmp
printf 'TRAILING' >>ds/data/b/onestandsout_161x121.bmp
truncate -s 1000 ds/data/a/kite_199x301.bmp
rerun_repairs ds 2 --to bmp
touch ds/data/a/*.bmp  # the same bytes, newer: nothing to convert
dlprep convert-dataset src ds --to bmp 2>err.txt
grep -q '0 converted, 5 up to date' err.txt || fail "after touch: $(cat err.txt)"

# A repairing rerun that fails before it reaches the damaged file (a broken source first) leaves
# the dataset incomplete; the next rerun still compares the file with the last completed run's
# record, and repairs it.
sleep 0.02
flip ds/data/b/onestandsout_161x121.bmp 3000
cp src/a/kite_199x301.png kite.png
head -c 300 kite.png >src/a/kite_199x301.png
expect_exit 1 dlprep -q -j1 convert-dataset src ds --to bmp
cp kite.png src/a/kite_199x301.png
rerun_repairs ds 2 --to bmp

# Tar layout: a bit flipped inside a member; the shard is written again from that sample on.
dlprep -q convert-dataset src tar --to bmp --shards 64KiB
cp tar/samples.jsonl tar.index
sleep 0.02
offset=$(/usr/bin/python3 -c 'import json
r = [json.loads(l) for l in open("tar/samples.jsonl")][-1]
print(r["location"], r["offset"] + 100)')
flip "tar/${offset% *}" "${offset#* }"
rerun_repairs tar 1 --to bmp --shards 64KiB

# Damage that kept the modification time (bit rot, cp -p): a rerun trusts the time, --recheck
# reads every file and converts only the damaged one again; the verify summary names the flag.
# (A file newer than the index is read anyway: dated as its source, it is older.)
flip ds/data/a/kay_256x256.bmp 7000
touch -r src/a/kay_256x256.png ds/data/a/kay_256x256.bmp
dlprep convert-dataset src ds --to bmp 2>err.txt
grep -q '0 converted, 5 up to date' err.txt || fail "rerun trusted no time: $(cat err.txt)"
expect_exit 3 dlprep dataset verify ds 2>verify.txt
grep -q 'run again with --recheck' verify.txt || fail "verify names no mend: $(cat verify.txt)"
rerun_repairs ds 1 --to bmp --recheck
dlprep convert-dataset src ds --to bmp --recheck 2>err.txt
grep -q '0 converted, 5 up to date' err.txt || fail "recheck of an intact dataset: $(cat err.txt)"
no_temp_files ds
no_temp_files tar
