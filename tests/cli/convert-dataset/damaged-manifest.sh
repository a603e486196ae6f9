#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# A dataset.json damaged (cut short by a crash while it was written, or edited) is refused with
# the way on named; --force then makes the dataset anew, in either layout. Another tool's
# dataset.json is never taken for a damaged one: --force leaves its folder alone. A deleted one
# (make after a failed rerun) is recovered alike.
cp -r "$SAMPLE_DATA"/images src
for layout in files tar; do
  shards=()
  [ $layout = tar ] && shards=(--shards 1MB)
  dlprep -q convert-dataset src $layout --to l3 "${shards[@]}"
  cp $layout/dataset.json good.json
  for damage in '' '{"schema": "dlprep.dataset/1", "complete": tr' '{"schema": "dlprep.dataset/1"}'; do
    printf '%s' "$damage" >$layout/dataset.json
    expect_exit 1 dlprep -q convert-dataset src $layout --to l3 "${shards[@]}" 2>err.txt
    grep -q "dataset.json: .*damaged.*--force converts the dataset anew" err.txt ||
      fail "$layout, damage '$damage': $(cat err.txt)"
    dlprep -q convert-dataset src $layout --to png "${shards[@]}" --force
    dlprep -q dataset verify $layout
    grep -q '"complete": true' $layout/dataset.json || fail "$layout: not complete after --force"
    # Made anew: the png dataset alone, nothing of the l3 one left.
    find $layout/data -name '*.l3' | grep -q . && fail "$layout: l3 files left after --force"
    dlprep -q convert-dataset src $layout --to l3 "${shards[@]}"
  done
done
mkdir other other/data
echo '{"schema": "someone-else/2"}' >other/dataset.json
echo keep >other/data/notes.txt
expect_exit 1 dlprep -q convert-dataset src other --to l3 --force 2>err.txt
grep -q 'is not a dlprep dataset' err.txt || fail "$(cat err.txt)"
[ "$(cat other/data/notes.txt)" = keep ] || fail "another tool's folder was touched"
# dataset merge alike: over a damaged dataset.json of its own, never over another tool's.
dlprep -q convert-dataset src p0 --to l3 --shard 0/2
dlprep -q convert-dataset src p1 --to l3 --shard 1/2
expect_exit 1 dlprep -q dataset merge p0 p1 -o other 2>err.txt
grep -q 'is not a dlprep dataset' err.txt || fail "merge: $(cat err.txt)"
grep -q someone-else other/dataset.json || fail "merge replaced another tool's dataset.json"
dlprep -q dataset merge p0 p1 -o merged
: >merged/dataset.json
dlprep -q dataset merge p0 p1 -o merged
dlprep -q dataset verify merged
# A dataset.json deleted (make's .DELETE_ON_ERROR after a failed rerun): refused with the way on
# named, taken over with --force; a merge merges over it, removing what its index does not name.
for layout in files tar; do
  shards=()
  [ $layout = tar ] && shards=(--shards 1MB)
  dlprep -q convert-dataset src lost-$layout --to l3 "${shards[@]}"
  rm lost-$layout/dataset.json
  expect_exit 1 dlprep convert-dataset src lost-$layout --to l3 "${shards[@]}" 2>err.txt
  grep -q 'holds a dataset.s samples.jsonl and data/ but no dataset.json.*--force converts the dataset anew' err.txt ||
    fail "$layout: $(cat err.txt)"
  dlprep -q convert-dataset src lost-$layout --to png "${shards[@]}" --force
  dlprep -q dataset verify lost-$layout
  find lost-$layout/data -name '*.l3' | grep -q . && fail "$layout: l3 files left after --force"
done
rm merged/dataset.json
touch merged/data/stray.l3
dlprep -q dataset merge p0 p1 -o merged
dlprep -q dataset verify merged
# Not taken for a dataset that lost its dataset.json: a folder of the user's with only data/, or
# with a samples.jsonl that is no dlprep index; a damaged index is not read by --force.
mkdir -p mine/data
cp "$SAMPLE_DATA"/images/kay_256x256.png mine/data/holiday.png
expect_exit 2 dlprep dataset merge p0 p1 -o mine 2>err.txt
grep -q 'is not a dlprep dataset' err.txt || fail "merge into the user's data/: $(cat err.txt)"
echo '{"my": "annotations"}' >mine/samples.jsonl
expect_exit 2 dlprep convert-dataset src mine --to l3 --force 2>err.txt
grep -q 'is not a dlprep dataset' err.txt || fail "the user's samples.jsonl: $(cat err.txt)"
[ -f mine/data/holiday.png ] || fail "the user's file was removed"
dlprep -q convert-dataset src idx --to l3
echo garbage >idx/samples.jsonl
: >idx/dataset.json
dlprep -q convert-dataset src idx --to l3 --force
dlprep -q dataset verify idx
