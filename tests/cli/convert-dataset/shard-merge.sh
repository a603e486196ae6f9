#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

# --shard 0/2 and 1/2 are disjoint, cover everything, and merge into exactly the unsharded index.
i=0
for f in "$SAMPLE_DATA"/images/*; do
  c=class$((i % 2)); mkdir -p src/$c; cp "$f" src/$c/; i=$((i + 1))
done
dlprep -q convert-dataset src all --mix l3:0.5,bmp:0.5
dlprep -q convert-dataset src part1 --mix l3:0.5,bmp:0.5 --shard 1/2
dlprep -q convert-dataset src part0 --mix l3:0.5,bmp:0.5 --shard 0/2
n0=$(wc -l <part0/samples.jsonl); n1=$(wc -l <part1/samples.jsonl)
[ $((n0 + n1)) = 14 ] && [ "$n0" -gt 0 ] && [ "$n1" -gt 0 ] || fail "shard sizes $n0 + $n1"
dlprep dataset merge part1 part0 -o merged 2>err.txt
grep -q '^dataset merge: 2 shards, 14 samples into merged$' err.txt || fail "$(cat err.txt)"
cmp -s all/samples.jsonl merged/samples.jsonl || fail "merged index differs from the unsharded one"
# Merging again changes nothing, and writes nothing.
stat -c '%n %i %y' merged/dataset.json merged/samples.jsonl >mtimes1
sleep 0.02
dlprep dataset merge part1 part0 -o merged 2>err.txt
grep -q '^dataset merge: 2 shards, 14 samples into merged (up to date)$' err.txt || fail "$(cat err.txt)"
stat -c '%n %i %y' merged/dataset.json merged/samples.jsonl | cmp -s mtimes1 - || fail "a merge again touched OUT"
expect_exit 1 dlprep -q dataset merge part0 nonexistent -o never 2>err-missing.txt
grep -q "nonexistent: cannot open: No such file or directory" err-missing.txt || fail "$(cat err-missing.txt)"
[ ! -e never ] || fail "a refused merge made OUT"
dlprep -q dataset verify merged
expect_exit 2 dlprep -q dataset merge part0 -o lonely
expect_exit 2 dlprep -q dataset merge part0 part0 part1 -o twice
expect_exit 2 dlprep -q dataset merge part0 all -o mixed
# A part whose conversion failed is a failed job (exit 1), not a usage error.
cp -r part1 part1-failed
/usr/bin/python3 - part1-failed/dataset.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["complete"] = False
json.dump(d, open(sys.argv[1], "w"))
PY
expect_exit 1 dlprep dataset merge part0 part1-failed -o never1 2>err-failed.txt
[ ! -e never1 ] || fail "a refused merge made OUT"
grep -q "part1-failed: incomplete (its conversion was interrupted or failed); rerun it$" err-failed.txt ||
  fail "$(cat err-failed.txt)"
! grep -q "try 'dlprep" err-failed.txt || fail "a failed part read as a usage error: $(cat err-failed.txt)"

# Parts dealt by an older rule (dataset.json without "shard_rule") are not merged with new ones.
cp -r part1 part1-old
/usr/bin/python3 - part1-old/dataset.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["parameters"]["shard_rule"]
json.dump(d, open(sys.argv[1], "w"))
PY
expect_exit 2 dlprep -q dataset merge part0 part1-old -o never2 2>err-rule.txt
grep -q "shard rule: 2 vs 1" err-rule.txt || fail "$(cat err-rule.txt)"

# A part converted after the source changed (a file added, one removed): its samples were dealt
# anew, so the parts do not make one dataset. So are parts of two lists that share a name.
cp -r src src-then
cp src/class0/kay_256x256.png src/class1/added.png
rm src/class1/kite_199x301.png
dlprep -q convert-dataset src part1-later --mix l3:0.5,bmp:0.5 --shard 1/2
expect_exit 2 dlprep -q dataset merge part0 part1-later -o never3 2>err-changed.txt
grep -q "source samples: 14 (digest [0-9a-f]*) vs 14 (digest [0-9a-f]*): the parts saw different sources, or the source changed between their runs" err-changed.txt ||
  fail "$(cat err-changed.txt)"
[ ! -e never3 ] || fail "a refused merge made OUT"
dlprep -q convert-dataset <(find src-then -type f | sort) list0 --to png --shard 0/2
dlprep -q convert-dataset <(find src -type f | sort) list1 --to png --shard 1/2
expect_exit 2 dlprep -q dataset merge list0 list1 -o never4
# An OUT inside a part's data/ would make strays of that part's: refused before anything.
expect_exit 2 dlprep -q dataset merge part0 part1 -o part0/data/merged
[ ! -e part0/data/merged ] || fail "a refused merge made OUT"
