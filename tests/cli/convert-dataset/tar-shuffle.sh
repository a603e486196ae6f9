#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --shuffle: the shards of a class-folder tree hold a mix of classes instead of one each, in an
# order that the seed fixes (the same on a rerun, which converts nothing); verify passes, and
# shuffled parts merge into the unsharded dataset.
for c in cat dog bird; do
  mkdir -p src/$c
  for i in 1 2 3 4 5 6; do cp "$SAMPLE_DATA/images/kay_256x256.png" src/$c/img$i.png; done
done
dlprep convert-dataset src plain --to png:1 --shards 250kB 2>/dev/null
dlprep convert-dataset src ds --to png:1 --shards 250kB --shuffle --seed 3 2>err1.txt
grep -q '^convert-dataset: 18 samples in ds: 18 converted' err1.txt || fail "first run: $(cat err1.txt)"
json_check 'd["parameters"]["order"] == "shuffled" and "order" not in json.load(open("plain/dataset.json"))["parameters"]' <ds/dataset.json
dlprep dataset verify ds >verify.txt || fail "verify: $(cat verify.txt)"
dlprep dataset info ds | grep -q '^mix:      png:1 100.0%, seed 3, order shuffled by the seed$' ||
  fail "info: $(dlprep dataset info ds)"
/usr/bin/python3 - <<'PY' || fail "the classes are not mixed"
import glob, tarfile
def labels(ds):  # the class of each sample, shard after shard, as the tar members come
    return [m.name.split("/")[0] for s in sorted(glob.glob(ds + "/data/shard-*.tar"))
            for m in tarfile.open(s).getmembers() if m.name.endswith(".png")]
changes = lambda seq: sum(a != b for a, b in zip(seq, seq[1:]))
plain, mixed = labels("plain"), labels("ds")
assert sorted(plain) == sorted(mixed) and len(mixed) == 18
assert changes(plain) == 2, plain          # a class-folder tree: one class after the other
assert changes(mixed) >= 8, mixed          # of 17 pairs; 12 on average when shuffled
PY
cp ds/samples.jsonl first.jsonl
dlprep convert-dataset src ds --to png:1 --shards 250kB --shuffle --seed 3 2>err2.txt
grep -q '18 samples in ds: 0 converted, 18 up to date' err2.txt || fail "rerun: $(cat err2.txt)"
cmp -s first.jsonl ds/samples.jsonl || fail "rerun changed the order"
for k in 0 1; do
  dlprep convert-dataset src part$k --to png:1 --shards 250kB --shuffle --seed 3 --shard $k/2 2>/dev/null
done
dlprep dataset merge part0 part1 -o merged 2>/dev/null
/usr/bin/python3 - <<'PY' || fail "merged parts differ from the unsharded run"
import json
keys = lambda f: [json.loads(l)["key"] for l in open(f)]
assert keys("merged/samples.jsonl") == keys("ds/samples.jsonl")
PY
