#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --shard K/N with --shards: parts name their shards part-K-of-N-NNNNNN.tar (no collision), and
# merge into a dataset with the same samples, in the same order, as the unsharded run.
i=0
for f in "$SAMPLE_DATA"/images/*; do
  c=class$((i % 2)); mkdir -p src/$c; cp "$f" src/$c/; i=$((i + 1))
done
dlprep -q convert-dataset src all --mix l3:0.5,bmp:0.5 --shards 500kB
for k in 0 1 2; do
  dlprep -q convert-dataset src part$k --mix l3:0.5,bmp:0.5 --shards 500kB --shard $k/3
  [ -e part$k/data/part-$k-of-3-000000.tar ] || fail "part $k: $(ls part$k/data)"
done
dlprep dataset merge part2 part0 part1 -o merged 2>err.txt
grep -q '^dataset merge: 3 shards, 14 samples into merged$' err.txt || fail "$(cat err.txt)"
/usr/bin/python3 - <<'PY' || fail "merged records differ from the unsharded ones"
import json
def records(path):
    out = []
    for line in open(path):
        r = json.loads(line)
        assert r["location"].endswith(".tar") and r["offset"] % 512 == 0
        del r["location"], r["offset"]
        out.append(r)
    return out
assert records("merged/samples.jsonl") == records("all/samples.jsonl")
m = json.load(open("merged/dataset.json"))
parts = sum(json.load(open("part%d/dataset.json" % k))["tar"]["shards"] for k in range(3))
assert m["layout"] == "tar" and m["tar"]["shards"] == parts, m
PY
dlprep -q dataset verify merged
[ "$(ls merged/data | grep -c '^part-[0-2]-of-3-[0-9]*\.tar$')" = "$(ls merged/data | wc -l)" ] ||
  fail "merged data: $(ls merged/data)"
# A part with another shard size is not part of the same conversion.
dlprep -q convert-dataset src odd --mix l3:0.5,bmp:0.5 --shards 1MB --shard 2/3
expect_exit 2 dlprep -q dataset merge part0 part1 odd -o mixed
# Two parts whose shards have one name (one renamed by hand): OUT could hold only one of them.
cp -r part1 renamed
first=$(ls part0/data | head -1)
mv "renamed/data/$(ls renamed/data | head -1)" "renamed/data/$first"
sed -i "s/$(ls part1/data | head -1)/$first/" renamed/samples.jsonl
expect_exit 1 dlprep dataset merge part0 renamed part2 -o never-same 2>err-same.txt
grep -q "both hold data/$first" err-same.txt || fail "$(cat err-same.txt)"
[ ! -e never-same ] || fail "a refused merge made OUT"
# Onto another file system the shards are copied (no hard link): whole, and kept by a rerun.
other=$(mktemp -d /dev/shm/dlprep-merge-test.XXXXXX 2>/dev/null) || other=""
if [ -n "$other" ] && [ "$(stat -c %d "$other")" != "$(stat -c %d .)" ]; then
  trap 'rm -rf "$other"' EXIT
  dlprep -q dataset merge part2 part0 part1 -o "$other/merged"
  for f in merged/data/*.tar; do cmp -s "$f" "$other/merged/data/${f##*/}" || fail "copy of $f differs"; done
  dlprep -q dataset verify "$other/merged"
  stat -c '%n %i %y' "$other"/merged/data/* >copies1
  dlprep dataset merge part2 part0 part1 -o "$other/merged" 2>err2.txt
  grep -q '(up to date)$' err2.txt || fail "$(cat err2.txt)"
  stat -c '%n %i %y' "$other"/merged/data/* | cmp -s copies1 - || fail "a rerun copied again"
else
  echo "skipping the copy across file systems: /dev/shm is not another file system here"
fi
