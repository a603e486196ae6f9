#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --shards: several ustar shards that Python's tarfile and GNU tar read, each sample the
# WebDataset group KEY.EXT + KEY.cls (adjacent, class index = rank of the label); verify passes;
# a rerun rewrites nothing; a long key goes through a pax header; bad sizes are usage errors.
i=0
for f in "$SAMPLE_DATA"/images/*; do
  c=class$((i % 3)); mkdir -p src/$c; cp "$f" src/$c/; i=$((i + 1))
done
long=$(printf 'd%.0s' $(seq 1 60))/$(printf 'n%.0s' $(seq 1 70))
mkdir -p "src/class1/$(dirname "$long")"
cp "$SAMPLE_DATA/images/kay_256x256.png" "src/class1/$long.png"
dlprep -j2 convert-dataset src ds --to png:1 --shards 400kB 2>err1.txt
grep -q '^convert-dataset: 15 samples in ds: 15 converted' err1.txt || fail "first run: $(cat err1.txt)"
json_check 'd["layout"] == "tar" and d["tar"]["max_shard_bytes"] == 400000 and d["tar"]["shards"] >= 3 and d["tar"]["labels"] == ["class0", "class1", "class2"] and d["complete"]' <ds/dataset.json
[ ! -e ds/data/class0 ] || fail "a file tree was written too"
dlprep dataset verify ds >verify.txt
grep -q '^ds: ok, 15 samples' verify.txt || fail "verify: $(cat verify.txt)"
dlprep dataset info ds >info.txt
grep -Eq '^layout:   tar, [0-9]+ shards of at most 400[ .0-9]*kB \(a larger sample gets a shard of its own; [ .0-9]+[kM]B on disk, tar headers included\), 3 classes in .cls' info.txt ||
  fail "info: $(cat info.txt)"

# Every shard is a valid archive of whole sample groups, in index order, at the recorded offsets.
/usr/bin/python3 - <<'PY' || fail "python tarfile check failed"
import json, tarfile, glob, os
labels = json.load(open("ds/dataset.json"))["tar"]["labels"]
records = [json.loads(l) for l in open("ds/samples.jsonl")]
shards = sorted(glob.glob("ds/data/shard-*.tar"))
assert len(shards) == json.load(open("ds/dataset.json"))["tar"]["shards"], shards
seen = []
for s in shards:
    assert os.path.getsize(s) <= 400000 or len(tarfile.open(s).getmembers()) == 2, s
    with tarfile.open(s) as t:
        members = t.getmembers()
        names = [m.name for m in members]
        # WebDataset groups adjacent members by key: every image is directly followed by its .cls
        for k in range(0, len(members), 2):
            img, cls = members[k], members[k + 1]
            key = img.name.rsplit(".", 1)[0]
            assert cls.name == key + ".cls", (img.name, cls.name)
            label = key.split("/")[0]
            assert t.extractfile(cls).read() == str(labels.index(label)).encode()
            seen.append((s, key, img.offset_data, img.size))
assert [(r["key"]) for r in records] == [k for _, k, _, _ in seen]
for r, (s, key, off, size) in zip(records, seen):
    assert r["location"] == os.path.relpath(s, "ds") and r["offset"] == off and r["bytes"] == size, r
assert any(len(r["key"]) > 100 for r in records)
# WebDataset's own grouping (webdataset.tariterators: base_plus_ext, then group_by_keys) on a
# streaming read: every sample one group with an image and its cls.
import re
groups = []
for s in shards:
    with tarfile.open(s, mode="r|") as t:
        for m in t:
            prefix, suffix = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", m.name).groups()
            if not groups or groups[-1]["__key__"] != prefix:
                groups.append({"__key__": prefix})
            assert suffix not in groups[-1], m.name
            groups[-1][suffix] = t.extractfile(m).read()
assert [g["__key__"] for g in groups] == [r["key"] for r in records]
assert all(sorted(g) == ["__key__", "cls", "png"] for g in groups)
PY
for s in ds/data/shard-*.tar; do
  tar tvf "$s" >>listing.txt || fail "GNU tar cannot list $s"
done
grep -q "$long.png" listing.txt || fail "GNU tar lost the long name"
[ "$(grep -c '\.cls$' listing.txt)" = 15 ] || fail "$(cat listing.txt)"

# A rerun converts nothing and touches no shard.
ls -l --time-style=full-iso ds/data >before.txt
cp ds/samples.jsonl index1
dlprep --json convert-dataset src ds --to png:1 --shards 400kB >rerun.json
json_check 'd["converted"] == 0 and d["up_to_date"] == 15 and d["layout"] == "tar" and d["shard_files"] >= 3' <rerun.json
ls -l --time-style=full-iso ds/data >after.txt
cmp -s before.txt after.txt || fail "a rerun rewrote shards: $(diff before.txt after.txt)"
cmp -s index1 ds/samples.jsonl || fail "a rerun changed the index"
no_temp_files ds

# Usage errors.
for bad in 0 -1 abc 1XB ''; do
  expect_exit 2 dlprep -q convert-dataset src x --to l3 --shards "$bad"
done
dlprep convert-dataset src x --to l3 --shards 0 2>bad.txt || true
grep -q "^dlprep: error: convert-dataset: --shards: '0' is not a size (e.g. 1GiB, 500MB, 65536)$" bad.txt ||
  fail "$(cat bad.txt)"
[ ! -e x ] || fail "output written despite a usage error"

# A sample that fails under --on-error skip is written nowhere: a rerun with nothing new keeps
# every shard, the index and the manifest as they are (same inodes, same times).
mkdir -p skip/a skip/b
for i in 1 2 3; do make_pnm skip/a/$i.ppm 30 20 3 $i; make_pnm skip/b/$i.ppm 30 20 3 $((i + 10)); done
head -c 20 skip/a/2.ppm >cut && mv cut skip/a/2.ppm
dlprep -q convert-dataset skip skipds --to png --shards 2kB --on-error skip 2>/dev/null
stat -c '%n %i %y' skipds/dataset.json skipds/samples.jsonl skipds/data/* >before.txt
sleep 0.02
dlprep -q convert-dataset skip skipds --to png --shards 2kB --on-error skip 2>/dev/null
stat -c '%n %i %y' skipds/dataset.json skipds/samples.jsonl skipds/data/* | cmp -s before.txt - ||
  fail "a rerun past a skipped sample rewrote the dataset"
dlprep -q dataset verify skipds

# A dot in a file name: WebDataset would read the sample under another key; the run says so.
# (The file tree has no such reader: no warning there.)
mkdir -p dots/a.b
make_pnm dots/a.b/plain.ppm 8 8 3 1; make_pnm dots/a.b/img.v2.ppm 8 8 3 2
make_pnm dots/a.b/x.y.z.ppm 8 8 3 3
dlprep convert-dataset dots dotds --to png --shards 1MB 2>dots.txt
grep -q '^dlprep: warning: convert-dataset: 2 samples have a dot in their file name (the first: a.b/img.v2): WebDataset .* other keys (a.b/img) ' dots.txt ||
  fail "no dot warning: $(cat dots.txt)"
dlprep convert-dataset dots dotfiles --to png 2>dots.txt
! grep -q 'a dot in' dots.txt || fail "a dot warning for the file tree: $(cat dots.txt)"
