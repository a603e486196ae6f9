#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A list file (PATH<TAB>LABEL) as the source, then that dataset as the source of another.
printf '%s\tcat\n' "$SAMPLE_DATA/images/kay_256x256.png" >list.txt
printf '# comment\n\n%s\tdog\n' "$SAMPLE_DATA/images/onestandsout_161x121.bmp" >>list.txt
dlprep -q convert-dataset list.txt ds --to l3
json_check 'd["source"]["kind"] == "list" and sorted(d["classes"]) == ["cat", "dog"]' <ds/dataset.json
dlprep -q convert-dataset ds ds-bmp --to bmp
json_check 'd["source"]["kind"] == "dataset" and d["formats"]["bmp"]["samples"] == 2' <ds-bmp/dataset.json
dlprep -q dataset verify ds-bmp
# A source sample damaged since its conversion (crc32 not the index's) is not carried on.
cp -r ds-bmp ds-bmp-damaged
bmp=$(find ds-bmp-damaged/data -name "kay_*.bmp")
flip_byte "$bmp" 5000
expect_exit 1 dlprep -q convert-dataset ds-bmp-damaged from-damaged --to png 2>err-crc.txt
grep -q "^dlprep: error: convert-dataset: $bmp: crc32 [0-9a-f]*, the index records [0-9a-f]*" err-crc.txt ||
  fail "damaged source sample: $(cat err-crc.txt)"
expect_exit 2 dlprep -q convert-dataset "$SAMPLE_DATA/images/kay_256x256.png" x --to l3

# One key in two entries (one path listed with two labels, or a.png and a.bmp) would name one data
# file for two samples: both are errors, as for a.png and a.jpg in one folder of a tree.
cp "$SAMPLE_DATA/images/kay_256x256.png" a.png
cp "$SAMPLE_DATA/images/onestandsout_161x121.bmp" a.bmp
printf 'a.png\tcat\na.bmp\tdog\n' >dup.txt
expect_exit 1 dlprep -q convert-dataset dup.txt dup --to l3 2>err.txt
grep -q "sample key 'a' is not unique" err.txt
printf 'a.png\tcat\na.png\tdog\n' >dup2.txt
expect_exit 1 dlprep -q convert-dataset dup2.txt dup2 --mix l3:1,png:1 2>err2.txt
grep -q "sample key 'a' is not unique" err2.txt || fail "$(cat err2.txt)"

# Two names whose 64-bit key hashes collide (under every seed) are still two samples, a shard each.
mkdir -p coll/c
cp "$SAMPLE_DATA/images/kay_256x256.png" coll/c/BcWugYjVchJ.png
cp "$SAMPLE_DATA/images/onestandsout_161x121.bmp" coll/c/uAmGjGvd_lN.bmp
for k in 0 1; do
  dlprep -q convert-dataset coll "coll-$k" --to png --shard "$k/2"
  json_check 'd["samples"] == 1' <"coll-$k/dataset.json"
done
dlprep -q convert-dataset coll coll-all --mix png:1,l3:1
json_check 'd["samples"] == 2' <coll-all/dataset.json
dlprep -q dataset verify coll-all

# A list on /dev/stdin, also when standard input is a file: relative paths from the working
# directory, not from /dev.
printf 'a.png\tcat\n' >rel.txt
dlprep -q convert-dataset /dev/stdin from-stdin --to l3 <rel.txt
json_check 'd["samples"] == 1' <from-stdin/dataset.json

# One list file linked into two folders names two sets of images (relative paths from the
# list's folder): a rerun through the other link reads the other folder's.
mkdir -p la lb
cp "$SAMPLE_DATA/images/onestandsout_161x121.bmp" la/x.bmp
cp "$SAMPLE_DATA/images/onestandsout_161x121.bmp" lb/x.bmp
printf 'x.bmp\tc\n' >la/files.txt
ln la/files.txt lb/files.txt
dlprep -q convert-dataset la/files.txt linked --to png
grep -q '"source":"la/x.bmp"' linked/samples.jsonl || fail "$(cat linked/samples.jsonl)"
dlprep -q convert-dataset lb/files.txt linked --to png
grep -q '"source":"lb/x.bmp"' linked/samples.jsonl || fail "through lb/: $(cat linked/samples.jsonl)"
