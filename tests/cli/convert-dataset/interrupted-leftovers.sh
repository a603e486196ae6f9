#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# What an interrupted run leaves in data/ that no index names goes with the next run: the temp
# files of a SIGKILLed writer in any folder, and the files of samples whose source was deleted
# in between. The interruption is simulated: dataset.json says incomplete, as every writer marks
# it before its first change. Files not named like dlprep's outputs are left alone.
i=0
for f in "$SAMPLE_DATA"/images/*.png; do
  c=class$((i % 2)); mkdir -p src/$c; cp "$f" src/$c/; i=$((i + 1))
done
mark_incomplete() {
  /usr/bin/python3 - "$1/dataset.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["complete"] = False
json.dump(d, open(sys.argv[1], "w"))
PY
}
plant() {  # plant DATASET: a deleted source's output, a killed writer's temp file, a user's file
  local any
  any=$(find "$1/data/class1" -type f | head -1)
  cp "$any" "$1/data/class1/deleted-since.l3"
  cp "$any" "$1/data/class0/.victim.png.tmp.Ab12Cd"
  echo notes >"$1/data/class0/notes.txt"
}
dlprep -q convert-dataset src out --mix l3:0.5,png:0.5
plant out
mark_incomplete out
dlprep -q convert-dataset src out --mix l3:0.5,png:0.5
[ ! -e out/data/class1/deleted-since.l3 ] || fail "convert-dataset kept a deleted source's output"
[ ! -e out/data/class0/.victim.png.tmp.Ab12Cd ] || fail "convert-dataset kept a dead temp file"
[ -e out/data/class0/notes.txt ] || fail "convert-dataset removed a file it did not write"
rm out/data/class0/notes.txt
dlprep -q dataset verify out
# A complete dataset's extra files are not the rerun's to remove (verify reports them).
cp out/data/class0/"$(ls out/data/class0 | head -1)" out/data/class0/extra.png
dlprep -q convert-dataset src out --mix l3:0.5,png:0.5
[ -e out/data/class0/extra.png ] || fail "a rerun of a complete dataset removed a file"
expect_exit 3 dlprep -q dataset verify out
rm out/data/class0/extra.png

# dataset merge: the same, and a killed hard link's temp name.
dlprep -q convert-dataset src p0 --to l3 --shard 0/2
dlprep -q convert-dataset src p1 --to l3 --shard 1/2
dlprep -q dataset merge p0 p1 -o merged
plant merged
cp "$(find merged/data/class1 -type f | head -1)" merged/data/class1/.x.l3.tmp.linked
mark_incomplete merged
dlprep -q dataset merge p0 p1 -o merged
for f in class1/deleted-since.l3 class0/.victim.png.tmp.Ab12Cd class1/.x.l3.tmp.linked; do
  [ ! -e "merged/data/$f" ] || fail "dataset merge kept $f"
done
rm merged/data/class0/notes.txt
dlprep -q dataset verify merged

# Across file systems (where a tmpfs can be mounted), merged files are copies: each tar shard is
# copied once, and a second merge finds the copies current and writes nothing.
mkdir -p mnt
if mount -t tmpfs -o size=64m tmpfs mnt 2>/dev/null; then
  trap 'umount mnt' EXIT
  dlprep -q convert-dataset src t0 --to png --shard 0/2 --shards 1GiB
  dlprep -q convert-dataset src t1 --to png --shard 1/2 --shards 1GiB
  dlprep -q dataset merge t0 t1 -o mnt/m
  dlprep -q dataset verify mnt/m
  dlprep -q dataset merge p0 p1 -o mnt/files
  stat -c '%n %i %y' mnt/m/data/* mnt/files/data/*/* >before
  dlprep dataset merge t0 t1 -o mnt/m 2>err-tar.txt
  dlprep dataset merge p0 p1 -o mnt/files 2>err-files.txt
  grep -q '(up to date)$' err-tar.txt || fail "tar merge again: $(cat err-tar.txt)"
  grep -q '(up to date)$' err-files.txt || fail "files merge again: $(cat err-files.txt)"
  stat -c '%n %i %y' mnt/m/data/* mnt/files/data/*/* | cmp -s before - || fail "a merge again copied files"
else
  echo "no tmpfs mount here: the copy case is not run" >&2
fi
