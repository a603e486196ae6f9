#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

mkdir -p src/a src/b
make_pnm src/a/x.ppm 10 10 3 1
make_pnm src/a/y.ppm 10 10 1 2
make_pnm src/b/z.ppm 10 10 3 3
make_pnm src/b/w.ppm 10 10 3 4
dlprep -q convert-dataset src ds --mix l3:1,ppm:1
dlprep dataset info ds >info.txt
grep -q '^samples:  4 in 2 classes' info.txt || fail "$(cat info.txt)"
grep -q '^mix:      l3 50.0%, ppm 50.0%, seed 0' info.txt || fail "$(cat info.txt)"
dlprep -v dataset info ds | grep -Eq '^a +2 ' || fail "-v: no class table"
dlprep --json dataset info ds >info.json
json_check 'd["schema"] == "dlprep.dataset-info/1" and d["samples"] == 4 and d["dataset_schema"] == "dlprep.dataset/1"' <info.json
# The tar layout: the shards' bytes on disk, headers and .cls members included, beside the
# samples' own bytes.
dlprep -q convert-dataset src tds --to ppm --shards 1MB
dlprep --json dataset info tds >tinfo.json
on_disk=$(stat -c %s tds/data/shard-000000.tar)
json_check "d['shard_bytes'] == $on_disk and d['bytes'] < $on_disk" <tinfo.json
dlprep dataset info tds | grep -q "^layout:   tar, 1 shard of at most 1.00 MB (a larger sample gets a shard of its own; .* on disk, tar headers included)" ||
  fail "$(dlprep dataset info tds)"
